"""Prefect's home for the build: its own database, apart from any other Prefect on the machine.

In ephemeral mode (no Prefect server configured) Prefect keeps a SQLite database in
`PREFECT_HOME` (default `~/.prefect`) and migrates it to its own schema on start. Two Prefect
versions sharing that folder break each other ("Can't locate revision ..."), so the build keeps
its home under the datagen data folder unless the user chose one (`PREFECT_HOME`) or points at a
server (`PREFECT_API_URL`, in the environment or in the active profile of `~/.prefect`).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import MutableMapping


def own_prefect_home_checked() -> None:
    """`use_own_prefect_home`, then ValueError (one line) if its database is unusable."""
    use_own_prefect_home()
    if problem := database_problem():
        raise ValueError(problem)


def use_own_prefect_home(env: MutableMapping[str, str] = os.environ) -> Path | None:
    """Set `PREFECT_HOME` to `<data dir>/prefect` unless the user configured Prefect; returns it.

    Must run before Prefect is imported: its settings are read once, at import.
    """
    if env.get("PREFECT_HOME") or env.get("PREFECT_API_URL") or _profile_has_server():
        return None
    from warehouse.store import data_dir
    home = data_dir() / "prefect"
    home.mkdir(parents=True, exist_ok=True)
    env.update(home_settings(home))
    return home


def home_settings(home: Path) -> dict[str, str]:
    """The variables that put all of Prefect's files under `home`.

    `PREFECT_HOME` alone is not enough: Prefect 3.7 keeps task results, its memo store and its
    logging config at `~/.prefect/...` whatever the home (checked: settings after setting only
    `PREFECT_HOME`), so a build would still write the user's `~/.prefect/storage`.
    """
    return {"PREFECT_HOME": str(home),
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "storage"),
            "PREFECT_SERVER_MEMO_STORE_PATH": str(home / "memo_store.toml"),
            "PREFECT_LOGGING_CONFIG_PATH": str(home / "logging.yml")}


def _profile_has_server(path: Path | None = None) -> bool:
    """Whether the user's active Prefect profile names a server (then their home is kept)."""
    path = path or Path.home() / ".prefect" / "profiles.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return False
    profile = data.get("profiles", {}).get(data.get("active", "ephemeral"), {})
    return bool(profile.get("PREFECT_API_URL"))


def database_problem(env: MutableMapping[str, str] = os.environ) -> str | None:
    """One line when Prefect's SQLite database was made by another Prefect version, else None.

    Checked before a flow starts: the ephemeral server would otherwise die in a background
    process with an alembic traceback ("Can't locate revision ...") and the flow would time out.
    """
    if env.get("PREFECT_API_URL") or env.get("PREFECT_API_DATABASE_CONNECTION_URL"):
        return None
    home = Path(env.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    revision = _stored_revision(home / "prefect.db")
    if revision is None or revision in _known_revisions():
        return None
    import prefect
    return (f"Prefect's database {home / 'prefect.db'} is at schema revision {revision}, which "
            f"Prefect {prefect.__version__} does not know (a newer Prefect made it): move it "
            f"away, or set PREFECT_HOME to another folder")


def _stored_revision(db: Path) -> str | None:
    """The alembic revision a Prefect SQLite database is at (None: no database yet)."""
    import sqlite3
    if not db.is_file():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            row = con.execute("select version_num from alembic_version").fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


def _known_revisions() -> set[str]:
    """Every schema revision the installed Prefect ships a SQLite migration for."""
    import re
    from importlib.util import find_spec
    versions = Path(find_spec("prefect").origin).parent / "server/database/_migrations/versions/sqlite"
    pattern = re.compile(r'^revision\s*=\s*"([0-9a-f]+)"', re.M)
    return {m for f in versions.glob("*.py") for m in pattern.findall(f.read_text())}
