"""Count `Any` in the signatures that other packages call (issue 31's typed-seams figure).

    python benchmarks/count_any.py [--list] [PACKAGE ...]

A name counts when a module of one top-level package imports it from another (tests and
benchmarks are not packages); the figure is the number of `Any` in the annotations of its
parameters and return, for a function, or of its public methods (and `__init__`), for a
class; beside it, the parameters with no annotation at all (as loose as `Any`). Re-exports through a package's `__init__` (lazy ones too) are followed to the defining module.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("datagen", "verifiers", "warehouse", "difficulty", "flows", "training")


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _trees() -> dict[str, ast.Module]:
    return {_module_of(p): ast.parse(p.read_text()) for pkg in PACKAGES
            for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    """(module, name) of every absolute `from M import name` in the tree."""
    return [(node.module, a.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for a in node.names]


def _resolve(trees: dict[str, ast.Module], module: str, name: str, depth: int = 0):
    """The (module, definition node) that `from module import name` binds, or None."""
    tree = trees.get(module)
    if tree is None or depth > 5:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.name == name:
            return module, node
    for mod, imported in _imports(tree):
        if imported == name:
            return _resolve(trees, mod, name, depth + 1)
    # a package that exports lazily (module `__getattr__`): the definition in a submodule
    for sub in sorted(m for m in trees if m.startswith(module + ".")):
        for node in trees[sub].body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                    node.name == name:
                return sub, node
    return None


def _any_in(node: ast.AST | None) -> int:
    if node is None:
        return 0
    return sum(isinstance(n, ast.Name) and n.id == "Any" or
               isinstance(n, ast.Attribute) and n.attr == "Any" or
               isinstance(n, ast.Constant) and isinstance(n.value, str) and "Any" in n.value
               for n in ast.walk(node))


def _signature_any(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int]:
    """(explicit `Any`, parameters without an annotation) in one signature."""
    a = fn.args
    args = [x for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
            if x is not None and x.arg not in ("self", "cls")]
    explicit = sum(_any_in(x.annotation) for x in args) + _any_in(fn.returns)
    return explicit, sum(x.annotation is None for x in args)


def _count(node: ast.AST) -> tuple[int, int]:
    if isinstance(node, ast.ClassDef):
        pairs = [_signature_any(m) for m in node.body
                 if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and (not m.name.startswith("_") or m.name == "__init__")]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return _signature_any(node)


def cross_package_any(targets: tuple[str, ...] = PACKAGES) -> dict[str, tuple[int, int]]:
    """{'module.name': (explicit Any, unannotated parameters)} over the names other packages
    import from `targets`."""
    trees = _trees()
    seen: dict[str, tuple[int, int]] = {}
    for module, tree in trees.items():
        for src, name in _imports(tree):
            top = src.split(".")[0]
            if top == module.split(".")[0] or top not in targets:
                continue
            found = _resolve(trees, src, name)
            if found is not None:
                seen[f"{found[0]}.{name}"] = _count(found[1])
    return seen


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    targets = tuple(a for a in argv if not a.startswith("--")) or PACKAGES
    seen = cross_package_any(targets)
    per_pkg: dict[str, int] = defaultdict(int)
    for key, (n, _) in seen.items():
        per_pkg[key.split(".")[0]] += n
    if listing:
        for key, (n, bare) in sorted(seen.items()):
            if n or bare:
                print(f"{n:3d} {bare:3d}  {key}")
    print(f"Any in cross-package signatures: {sum(n for n, _ in seen.values())} over "
          f"{len(seen)} names ({', '.join(f'{k} {v}' for k, v in sorted(per_pkg.items()))}); "
          f"unannotated parameters: {sum(b for _, b in seen.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
