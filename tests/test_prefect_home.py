"""The build's Prefect home: its own database under the datagen data folder, a user's Prefect
settings respected, and one line (no alembic traceback) for a database another Prefect made."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from datagen.prefect_home import database_problem, use_own_prefect_home

NEWER_REVISION = "27d8f4e1a6c9"  # what Prefect 3.9.1 left in ~/.prefect (issue 28)


def plant_database(home: Path, revision: str = NEWER_REVISION) -> Path:
    """A Prefect SQLite database at `revision`, as another Prefect version leaves it."""
    home.mkdir(parents=True, exist_ok=True)
    db = home / "prefect.db"
    with sqlite3.connect(db) as con:
        con.execute("create table alembic_version (version_num varchar(32) primary key)")
        con.execute("insert into alembic_version values (?)", (revision,))
    return db


def test_the_test_session_never_uses_the_users_prefect_home():
    assert Path(os.environ["PREFECT_HOME"]).name.startswith("hardqa-test-prefect-")
    assert "PREFECT_API_URL" not in os.environ


@pytest.mark.parametrize("user_env, kept", [
    ({}, False),
    ({"PREFECT_HOME": "/somewhere/mine"}, True),
    ({"PREFECT_API_URL": "http://127.0.0.1:4200/api"}, True),
])
def test_own_home_unless_the_user_configured_prefect(tmp_path, monkeypatch, user_env, kept):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    env = dict(user_env)
    home = use_own_prefect_home(env)
    if kept:
        assert home is None and env == user_env
    else:
        assert home == tmp_path / "xdg" / "datagen" / "prefect" and home.is_dir()
        assert env["PREFECT_HOME"] == str(home)
        # Prefect 3.7 keeps results and its memo at ~/.prefect whatever PREFECT_HOME says
        assert env["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] == str(home / "storage")
        assert env["PREFECT_SERVER_MEMO_STORE_PATH"] == str(home / "memo_store.toml")


def test_a_server_in_the_users_active_profile_keeps_their_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".prefect").mkdir()
    (tmp_path / ".prefect" / "profiles.toml").write_text(
        'active = "team"\n[profiles.team]\nPREFECT_API_URL = "http://10.0.0.5:4200/api"\n')
    env: dict[str, str] = {}
    assert use_own_prefect_home(env) is None and env == {}


def test_a_database_from_another_prefect_is_named_in_one_line(tmp_path):
    db = plant_database(tmp_path / "ph")
    line = database_problem({"PREFECT_HOME": str(tmp_path / "ph")})
    assert line is not None and "\n" not in line
    assert str(db) in line and NEWER_REVISION in line and "PREFECT_HOME" in line


def test_no_database_or_a_known_revision_is_fine(tmp_path):
    from datagen.prefect_home import _known_revisions
    assert database_problem({"PREFECT_HOME": str(tmp_path / "none")}) is None
    plant_database(tmp_path / "ok", sorted(_known_revisions())[0])
    assert database_problem({"PREFECT_HOME": str(tmp_path / "ok")}) is None


def _datagen(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "datagen", *args], env=env, text=True,
                          capture_output=True, timeout=600)


def user_env(tmp_path: Path) -> dict[str, str]:
    """A user's environment with a ~/.prefect that a newer Prefect made, and no PREFECT_* set."""
    plant_database(tmp_path / "user" / ".prefect")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(HOME=str(tmp_path / "user"), XDG_DATA_HOME=str(tmp_path / "xdg"),
               DATAGEN_CACHE=str(tmp_path / "cache"), PREFECT_SERVER_ANALYTICS_ENABLED="false")
    return env


@pytest.mark.integration
def test_build_pointed_at_a_newer_database_says_one_line(tmp_path):
    """(The build beside such a ~/.prefect, which must succeed and leave it untouched, runs in
    tests/test_documented_commands.py: it makes the warehouse those commands read.)"""
    env = {**user_env(tmp_path), "PREFECT_HOME": str(tmp_path / "user" / ".prefect")}
    refused = _datagen(["build", "--warehouse", str(tmp_path / "wh")], env)
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0 and "Traceback" not in refused.stderr
    assert NEWER_REVISION in refused.stderr and "PREFECT_HOME" in refused.stderr
