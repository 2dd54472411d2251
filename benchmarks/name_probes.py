"""Name probes and names defined twice, in the six packages (issue 41's "hooks declared in
protocols" and "one definition per name" figures).

    python benchmarks/name_probes.py [--rev REV]

A name probe asks an object at run time whether it has a name instead of its type saying so:
`hasattr(x, "n")`, a three-argument `getattr(x, "n", default)`, an `except AttributeError`
handler (alone or in a tuple), and `isinstance(x, P)` where P is a `@runtime_checkable`
Protocol of the packages. A probe whose object is an imported module (`hasattr(os, ...)`:
the platform, not a project object) is listed apart and not counted. A probe is "commented"
when a `# probe: <why>` comment sits on its line or the line above.

Names defined twice: public top-level classes, functions and module constants (`NAME = ...`)
that more than one module of the packages defines (not the conventional per-module `log`,
`logger`, `register`, `main`); whether two mean different things is for the reader. A
definition that only hands on another module's object of the same name is not a second
definition and is not counted: an alias `NAME = module.NAME`, and a function `NAME` whose body
imports `NAME` from another module (`from m import NAME [as alias]`), or imports from a module
named `NAME` (`from warehouse.maintain import ...`), and calls what it imported: a lazy
re-export (`training.run_train`) or a CLI command that calls the library code it is named
after (`datagen warehouse export` -> `warehouse.export.export`). `--rev` reads the files of a
commit (git show), to compare.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from dataclasses import dataclass

from code_shape import PACKAGES, sources

COMMENT = re.compile(r"#\s*probe:")
# per-module by convention, one meaning everywhere: a module's logger, a CLI module's
# `register(app)`, an entry point's `main`
CONVENTIONAL = frozenset({"log", "logger", "register", "main"})


@dataclass(frozen=True)
class Probe:
    """One probe: where, which form, and whether a comment says why."""

    path: str
    line: int
    form: str
    text: str
    commented: bool
    on_module: bool


def runtime_protocols(trees: dict[str, ast.Module]) -> set[str]:
    """Names of the classes decorated `@runtime_checkable` anywhere in the packages."""
    names = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    (d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")) ==
                    "runtime_checkable" for d in node.decorator_list):
                names.add(node.name)
    return names


def imported_modules(tree: ast.Module) -> set[str]:
    """Names bound by `import x` / `import x as y` anywhere in a module."""
    return {(a.asname or a.name.split(".")[0]) for node in ast.walk(tree)
            if isinstance(node, ast.Import) for a in node.names}


def _call_name(node: ast.Call) -> str:
    return node.func.id if isinstance(node.func, ast.Name) else ""


def _catches_attribute_error(handler: ast.ExceptHandler) -> bool:
    t = handler.type
    names = t.elts if isinstance(t, ast.Tuple) else [t] if t is not None else []
    return any(isinstance(n, ast.Name) and n.id == "AttributeError" for n in names)


def _protocol_args(node: ast.Call, protocols: set[str]) -> bool:
    if _call_name(node) != "isinstance" or len(node.args) != 2:
        return False
    kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    return any(isinstance(k, (ast.Name, ast.Attribute)) and
               (k.id if isinstance(k, ast.Name) else k.attr) in protocols for k in kinds)


def _form(node: ast.AST, protocols: set[str]) -> str | None:
    """Which probe `node` is, or None."""
    if isinstance(node, ast.ExceptHandler) and _catches_attribute_error(node):
        return "except AttributeError"
    if not isinstance(node, ast.Call):
        return None
    name = _call_name(node)
    if name == "hasattr" and len(node.args) == 2:
        return "hasattr"
    if name == "getattr" and len(node.args) == 3:
        return "getattr/3"
    return "isinstance(Protocol)" if _protocol_args(node, protocols) else None


def probes(path: str, text: str, tree: ast.Module, protocols: set[str]) -> list[Probe]:
    """Every probe in one module, in line order."""
    lines = text.splitlines()
    modules = imported_modules(tree)
    found = []
    for node in ast.walk(tree):
        form = _form(node, protocols)
        if form is None:
            continue
        line = node.lineno
        near = lines[max(line - 2, 0):line]
        target = node.args[0] if isinstance(node, ast.Call) else None
        on_module = isinstance(target, ast.Name) and target.id in modules
        found.append(Probe(path, line, form, lines[line - 1].strip(),
                           any(COMMENT.search(s) for s in near), on_module))
    return sorted(found, key=lambda p: p.line)


def _hands_on(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Does the function import its own name, or from the module named after it, and call
    what it imported (a lazy re-export, or a CLI command named after the library code it
    calls)?"""
    aliases = {a.asname or a.name for n in ast.walk(node) if isinstance(n, ast.ImportFrom)
               for a in n.names if a.name == node.name
               or (n.module or "").rsplit(".", 1)[-1] == node.name}
    return any(isinstance(n, ast.Call) and _call_name(n) in aliases for n in ast.walk(node))


def _alias_of(value: ast.expr, name: str) -> bool:
    """Is `value` another module's object of the same name (`NAME = module.NAME`)?"""
    return isinstance(value, ast.Attribute) and value.attr == name


def top_level_names(tree: ast.Module) -> set[str]:
    """Public classes, functions and constants a module defines at its top level (not the
    ones that only hand on another module's object of the same name)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _hands_on(node):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets
                         if isinstance(t, ast.Name) and not _alias_of(node.value, t.id))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_") and n not in CONVENTIONAL}


def duplicate_names(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """name -> the modules that define it, for names more than one module defines."""
    where = defaultdict(list)
    for path, tree in trees.items():
        for name in top_level_names(tree):
            where[name].append(path)
    return {n: sorted(ps) for n, ps in sorted(where.items()) if len(ps) > 1}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", help="a commit to read instead of the working tree")
    args = ap.parse_args(argv)
    texts = sources(args.rev)
    trees = {p: ast.parse(t) for p, t in texts.items()}
    protocols = runtime_protocols(trees)
    found = [p for path in sorted(trees) for p in probes(path, texts[path], trees[path], protocols)]
    counted = [p for p in found if not p.on_module]
    print(f"name probes in {', '.join(PACKAGES)} (runtime-checkable protocols: "
          f"{', '.join(sorted(protocols)) or 'none'})")
    for p in counted:
        mark = "commented" if p.commented else "UNCOMMENTED"
        print(f"  {p.path}:{p.line}  {p.form:<22} {mark:<11}  {p.text[:90]}")
    for p in (p for p in found if p.on_module):
        print(f"  (on a module, not counted) {p.path}:{p.line}  {p.text[:80]}")
    dups = duplicate_names(trees)
    print(f"top-level names defined in more than one module: {len(dups)}")
    for name, paths in dups.items():
        print(f"  {name}: {', '.join(paths)}")
    uncommented = sum(not p.commented for p in counted)
    print(f"RESULT name_probes probes={len(counted)} uncommented={uncommented} dup_names={len(dups)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
