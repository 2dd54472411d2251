"""A real warehouse on a PostgreSQL catalog (the team setup).

Needs a PostgreSQL server: `eval "$(.ci/postgres.sh)"` starts one on loopback and sets
HARDQA_TEST_POSTGRES_DSN (a libpq DSN of a database the test may create databases from).
Each test creates its own database and drops it afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter

import pytest

import warehouse
from tests.warehouse.conftest import spawn
from tests.warehouse.helpers import add_ready

DSN = os.environ.get("HARDQA_TEST_POSTGRES_DSN")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not DSN, reason="HARDQA_TEST_POSTGRES_DSN is unset; "
                                       "run `eval \"$(.ci/postgres.sh)\"` to start a server"),
]


def _admin(sql: str) -> None:
    from warehouse.core import connect, load_extensions
    con = connect()
    try:
        load_extensions(con, ("postgres",))
        con.execute(f"ATTACH '{DSN}' AS pg (TYPE postgres)")
        con.execute("CALL postgres_execute('pg', ?, use_transaction => false)", [sql])
    finally:
        con.close()


@pytest.fixture
def pg_catalog():
    name = "hardqa_" + uuid.uuid4().hex[:10]
    _admin(f"CREATE DATABASE {name}")
    base = " ".join(p for p in DSN.split() if not p.startswith("dbname="))
    yield f"postgres:{base} dbname={name}"
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_warehouse_on_postgres_catalog_end_to_end(tmp_path, pg_catalog):
    from warehouse.query import run_query
    from warehouse.errors import QueryRefused
    path = tmp_path / "wh"
    with warehouse.open(path, catalog=pg_catalog) as wh:
        assert wh.location.catalog.startswith("postgres:")
        add_ready(wh, [f"q{i}" for i in range(40)], band_of=lambda i: "hard")
        with wh.run("crawl", {"token": "secret"}) as run:
            run.summary = {"ok": 1}
    assert not (path / "catalog.sqlite").exists()  # metadata lives in PostgreSQL
    assert run_query(path, "select count(*) as n from train_ready").column("n")[0].as_py() == 40
    with pytest.raises(QueryRefused):
        run_query(path, "delete from questions")
    with warehouse.StreamReader(path, {"hard": 1.0}, seed=0, max_epochs=1) as reader:
        assert Counter(i.question_id for i in reader) == Counter(f"q{i}" for i in range(40))
    with warehouse.open(path) as wh:  # reopened from the marker
        assert "secret" not in wh.sql("select config from runs").column("config")[0].as_py()
        from warehouse.maintain import maintain
        maintain(wh, keep_snapshots_days=0, orphan_min_age_hours=0)
        assert wh.count("questions") == 40


WRITER = """
import sys, warehouse
from tests.warehouse.helpers import add_ready
wh = warehouse.open(sys.argv[1])
for b in range(10):
    add_ready(wh, [f"{sys.argv[2]}{b}-{i}" for i in range(12)])
print("done")
"""


def test_two_writer_processes_on_postgres_catalog(tmp_path, pg_catalog):
    path = tmp_path / "wh"
    warehouse.open(path, catalog=pg_catalog).close()
    procs = [spawn(WRITER, str(path), who) for who in ("a", "b")]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "done" in out, err
    with warehouse.open(path) as wh:
        assert wh.count("questions") == 240 and wh.count("verdicts") == 480
