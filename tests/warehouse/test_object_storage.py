"""The team warehouse for real: a build whose catalog is a PostgreSQL server on loopback and whose
data path is a bucket on a loopback S3 server (moto), two Dask workers writing; read back with
`datagen query`, `datagen export` and the streaming reader. Credentials come from the
environment and are stored nowhere.

Needs HARDQA_TEST_POSTGRES_DSN (`eval "$(.ci/postgres.sh)"`; .ci/run does it) and the dev extra
(moto[server], boto3); skipped with the reason otherwise. The build is shared with
tests/flows/test_dask.py (tests/warehouse/team_build.py).
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

import warehouse
from tests.warehouse.team_build import S3_ENV, bucket_keys, dask_build, team_reason

pytestmark = [pytest.mark.slow, pytest.mark.integration,
              pytest.mark.skipif(bool(team_reason()), reason=team_reason() or "-")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    b = dask_build(tmp_path_factory.getbasetemp() / "dask-build")
    if not b.team:
        pytest.skip(b.why_not_team)
    return b


def test_build_lands_in_postgres_and_the_bucket(built):
    local = [p.name for p in built.root.rglob("*")]  # the marker and caches (page index) only
    assert "WAREHOUSE.json" in local and "catalog.sqlite" not in local
    assert not [n for n in local if n.endswith(".parquet")]
    prefix = built.data_path.split("/", 3)[3]
    keys = bucket_keys(built.endpoint, prefix)
    assert any(k.endswith(".parquet") for k in keys)
    with warehouse.open(built.root, read_only=True) as wh:
        assert wh.location.catalog.startswith("postgres:")
        workers = {w for r in wh.sql("select summary from runs").to_pylist()
                   for w in json.loads(r["summary"] or "{}").get("workers", [])}
    assert len(workers) >= 2  # two Dask workers wrote


def test_read_back_with_query_export_and_reader(built, tmp_path, capsys):
    from datagen.cli import main
    from warehouse.card import parse_counts
    assert main(["query", "select question_id, band from train_ready order by 1", "--format",
                 "json", "--warehouse", str(built.root)]) == 0
    ready = {r["question_id"]: r["band"] for r in json.loads(capsys.readouterr().out)}
    assert ready
    out = tmp_path / "export"
    assert main(["export", str(out), "--format", "jsonl", "--warehouse", str(built.root)]) == 0
    rows = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert {r["question_id"]: r["band"] for r in rows} == ready
    assert parse_counts((out / "README.md").read_text(), "Rows per band") == Counter(ready.values())
    with warehouse.StreamReader(built.root, {b: 1.0 for b in set(ready.values())}, seed=0,
                                max_epochs=1) as reader:
        assert Counter(i.question_id for i in reader) == Counter(list(ready))


def test_credentials_are_stored_nowhere(built, tmp_path):
    secret = S3_ENV["AWS_SECRET_ACCESS_KEY"]
    assert secret not in (built.root / "WAREHOUSE.json").read_text()
    with warehouse.open(built.root, read_only=True) as wh:
        configs = " ".join(str(v) for r in wh.sql("select config, summary from runs").to_pylist()
                           for v in r.values())
        stored = wh.con.execute("select persistent from duckdb_secrets()").fetchall()
    assert secret not in configs and S3_ENV["AWS_ACCESS_KEY_ID"] not in configs
    assert stored and not any(p for (p,) in stored)  # the secret is in memory only
