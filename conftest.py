"""The test session's own Prefect home, and doctest collection for the packages.

Prefect: the session gets a fresh `PREFECT_HOME` (set here, before anything imports Prefect, and
inherited by every subprocess), so no test reads or writes the user's `~/.prefect` or talks to a
server the user configured; at the end it removes only that folder.

Doctests (`--doctest-modules` in pyproject.toml): a module is imported for it only when its
source holds an example (`>>>`), so collecting doctests imports nothing heavy or optional just
to find none. Test files are collected as usual."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

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
