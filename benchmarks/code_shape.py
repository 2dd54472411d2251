"""The code's shape as issue 31 counts it: function length (median, p90) and modules over 400
lines, in the six packages.

    python benchmarks/code_shape.py [--rev REV]

A function's length is its lines from `def` to its last line, docstring included; nested
functions count on their own. `--rev` reads the files of a commit (git show), to compare.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("datagen", "verifiers", "warehouse", "difficulty", "flows", "training")
LONG_MODULE = 400


def sources(rev: str | None) -> dict[str, str]:
    """path -> text of every module of the packages, at `rev` or in the working tree."""
    if rev is None:
        return {str(p.relative_to(ROOT)): p.read_text() for pkg in PACKAGES
                for p in sorted((ROOT / pkg).rglob("*.py"))}
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, *PACKAGES], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    return {n: subprocess.run(["git", "show", f"{rev}:{n}"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout for n in names if n.endswith(".py")}


def function_lengths(text: str) -> list[int]:
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    return [n.end_lineno - n.lineno + 1 for n in ast.walk(ast.parse(text)) if isinstance(n, funcs)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", help="a commit to read instead of the working tree")
    args = ap.parse_args(argv)
    files = sources(args.rev)
    lengths = sorted(n for text in files.values() for n in function_lengths(text))
    long = sorted((len(t.splitlines()), p) for p, t in files.items()
                  if len(t.splitlines()) > LONG_MODULE)
    p90 = statistics.quantiles(lengths, n=10)[-1]
    print(f"functions {len(lengths)}: median {statistics.median(lengths):g} lines, p90 {p90:g}")
    print(f"modules over {LONG_MODULE} lines: {len(long)} "
          + ", ".join(f"{p} ({n})" for n, p in long))
    return 0


if __name__ == "__main__":
    sys.exit(main())
