"""Library code never writes the process environment (issue 12): a variable set by one
library changes what every other one does later in the process (the embedder's
HF_HUB_OFFLINE=1 turned decontamination's hub off). Entry points may set what a library
reads; they are listed here by file and function."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("datagen", "verifiers", "difficulty", "warehouse", "flows", "training")
# (file, function): a command's body, where a program starts.
ENTRY_POINTS = {("datagen/cli_train.py", "train"),
                # `datagen`'s main(): quiet library progress bars in logs
                ("datagen/cli.py", "main")}
_MUTATORS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` or a bare `environ` (from os import environ)."""
    return ((isinstance(node, ast.Attribute) and node.attr == "environ"
             and isinstance(node.value, ast.Name) and node.value.id == "os")
            or (isinstance(node, ast.Name) and node.id == "environ"))


def environ_writes(source: str) -> list[tuple[int, str]]:
    """(line, enclosing function) of every write to the environment in `source`."""
    writes: list[tuple[int, str]] = []

    def visit(node: ast.AST, func: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        hit = (
            (isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del))
             and _is_environ(node.value))
            or (isinstance(node, ast.AugAssign) and _is_environ(node.target))
            or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                (node.func.attr in _MUTATORS and _is_environ(node.func.value))
                or (node.func.attr in {"putenv", "unsetenv"}
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "os"))))
        if hit:
            writes.append((node.lineno, func))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(ast.parse(source), "<module>")
    return writes


def test_the_scan_finds_every_kind_of_write():
    src = ("import os\nfrom os import environ\nos.environ['A'] = '1'\n"
           "def f():\n    os.environ.setdefault('B', '1')\n    environ.update(C='1')\n"
           "    del os.environ['D']\n    os.putenv('E', '1')\n    os.environ |= {'F': '1'}\n"
           "env = dict(os.environ)\nenv['G'] = '1'\nos.environ.get('H')\n")
    assert environ_writes(src) == [(3, "<module>"), (5, "f"), (6, "f"), (7, "f"), (8, "f"),
                                   (9, "f")]


def test_packages_do_not_write_os_environ():
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            found += [f"{rel}:{line} in {func}()" for line, func in
                      environ_writes(path.read_text(encoding="utf-8"))
                      if (rel, func) not in ENTRY_POINTS]
    assert not found, "library code writes os.environ (pass env= to a child process, or " \
                      "set it at the entry point):\n" + "\n".join(found)
