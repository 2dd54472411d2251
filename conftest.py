"""Doctest collection for the packages (`--doctest-modules` in pyproject.toml): a module
is imported for it only when its source holds an example (`>>>`), so collecting doctests
imports nothing heavy or optional just to find none. Test files are collected as usual."""

from __future__ import annotations

from pathlib import Path

_TESTS = Path(__file__).resolve().parent / "tests"


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    if (collection_path.suffix == ".py" and not collection_path.is_relative_to(_TESTS)
            and b">>>" not in collection_path.read_bytes()):
        return True
    return None
