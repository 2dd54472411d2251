"""The test session's own Prefect home, and doctest collection for the packages.

Prefect: the session gets a fresh `PREFECT_HOME` (set here, before anything imports Prefect, and
inherited by every subprocess), so no test reads or writes the user's `~/.prefect` or talks to a
server the user configured; at the end it removes only that folder.

Doctests (`--doctest-modules` in pyproject.toml): a module is imported for it only when its
source holds an example (`>>>`), so collecting doctests imports nothing heavy or optional just
to find none. Test files are collected as usual."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from datagen.prefect_home import home_settings

_TESTS = Path(__file__).resolve().parent / "tests"
_PREFECT_HOME = tempfile.mkdtemp(prefix="hardqa-test-prefect-")
for _name in ("PREFECT_API_URL", "PREFECT_PROFILES_PATH", "PREFECT_API_DATABASE_CONNECTION_URL"):
    os.environ.pop(_name, None)
os.environ.update(home_settings(Path(_PREFECT_HOME)))  # results and memo too, not only the db


def pytest_unconfigure(config) -> None:
    shutil.rmtree(_PREFECT_HOME, ignore_errors=True)


def pytest_ignore_collect(collection_path: Path, config) -> bool | None:
    if (collection_path.suffix == ".py" and not collection_path.is_relative_to(_TESTS)
            and b">>>" not in collection_path.read_bytes()):
        return True
    return None


@functools.cache
def _marks_vllm(path: str) -> bool:
    """Does the test file mark tests `vllm` (read from its source: xdist's scheduler sees node
    ids only)?"""
    return "mark.vllm" in (Path(__file__).parent / path).read_text(errors="replace")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Two workers (`pytest -n 2`, the README's test command): a file runs on one worker, so
    its module fixtures are built once, and every file with `vllm` tests runs on the same
    worker, so two vLLM engines never share the 2 cores and the session's server farm starts
    once. (`--dist loadgroup` would say this with marks, but it loses them on pytest 9.2:
    pytest-xdist issue 1386.)"""
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::")[0]
            return "vllm" if _marks_vllm(path) else path

    return FileGroups(config, log)


def pytest_collection_modifyitems(config, items) -> None:
    """The files with `vllm` tests first, then those with `slow` tests, so that the long ones
    do not make a tail on one worker after the short ones are done."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    slow = {f for f, its in files.items() if any(i.get_closest_marker("slow") for i in its)}
    first = {name: (not _marks_vllm(name), name not in slow) for name in files}
    items.sort(key=lambda item: first[item.nodeid.split("::")[0]])  # stable: order kept within
