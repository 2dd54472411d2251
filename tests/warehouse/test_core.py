"""Warehouse core: create/open, atomic multi-table commits, lineage, and clear errors."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import warehouse
from warehouse import errors
from warehouse.schema import QuestionRecord, RolloutRecord, VerdictRecord


def test_create_reopen_and_read_back_typed_records(tmp_path):
    path = tmp_path / "wh"
    with warehouse.open(path) as wh:
        recs = [QuestionRecord(question_id=f"q{i}", question=f"Q{i}?", answer="A",
                               answer_aliases=("a", "b"), hops=3) for i in range(25)]
        assert wh.append(recs, run_id="r1") == 25
    with warehouse.open(path, create=False) as wh:
        got = wh.read(QuestionRecord, where="question_id = ?", params=["q7"])
    assert got[0].answer_aliases == ("a", "b") and got[0].hops == 3 and got[0].run_id == "r1"


def test_transaction_commits_all_tables_or_nothing(wh):
    before = wh.current_snapshot()
    with pytest.raises(RuntimeError):
        with wh.transaction() as tx:
            tx.append([QuestionRecord(question_id="x", question="?", answer="a")])
            tx.append([VerdictRecord(question_id="x", check_name="c", status="pass")])
            raise RuntimeError("crash before commit")
    assert wh.count("questions") == 0 and wh.current_snapshot() == before
    with wh.transaction() as tx:
        tx.append([QuestionRecord(question_id="x", question="?", answer="a")])
        tx.append([VerdictRecord(question_id="x", check_name="c", status="pass")])
    assert (wh.count("questions"), wh.count("verdicts")) == (1, 1)
    assert wh.current_snapshot() == before + 1


def test_failure_inside_commit_rolls_back_and_connection_stays_usable(wh):
    def half_then_fail(con):
        con.execute("INSERT INTO lake.rollouts (question_id, policy_version, reward) VALUES ('q', 1, 1.0)")
        raise ValueError("bug in the writer")
    with pytest.raises(ValueError):
        wh.commit(half_then_fail)
    assert wh.count("rollouts") == 0
    wh.append([RolloutRecord(question_id="q", policy_version=2, reward=0.5)])
    assert wh.count("rollouts") == 1


def test_append_arrow_table_is_cast_to_the_record_schema(wh):
    table = pa.table({"question_id": ["q"], "policy_version": [3], "reward": [1],
                      "n_turns": [2], "episode_id": ["e"], "completion_tokens": [5],
                      "staleness": [0], "trained": [True], "run_id": [""],
                      "created_at": pa.array([None], pa.timestamp("us", tz="UTC"))})
    wh.append(table, RolloutRecord, run_id="train-1")
    row = wh.read(RolloutRecord)[0]
    assert row.reward == 1.0 and row.run_id == "train-1"


def test_run_lineage_records_redacted_config_code_version_and_status(wh):
    cfg = {"model": "m", "api_key": "sk-secret", "nested": {"password": "hunter2"},
           "endpoint": "https://user:pw@host/v1"}
    with wh.run("crawl", cfg) as run:
        wh.append([QuestionRecord(question_id="q", question="?", answer="a")], run_id=run.run_id)
        run.summary = {"pages": 3}
    with pytest.raises(KeyError):
        with wh.run("compose", {}):
            raise KeyError("boom")
    rows = {r["kind"]: r for r in wh.sql("select * from runs").to_pylist()}
    crawl = rows["crawl"]
    assert crawl["status"] == "succeeded" and crawl["finished_at"] >= crawl["started_at"]
    assert "sk-secret" not in crawl["config"] and "hunter2" not in crawl["config"]
    assert "pw@" not in crawl["config"] and json.loads(crawl["config"])["model"] == "m"
    assert crawl["code_version"] and json.loads(crawl["summary"]) == {"pages": 3}
    assert rows["compose"]["status"] == "failed"
    assert wh.read(QuestionRecord)[0].run_id == crawl["run_id"]


def test_missing_warehouse_is_a_clear_error(tmp_path):
    with pytest.raises(errors.WarehouseNotFound, match="no warehouse at"):
        warehouse.open(tmp_path / "absent", create=False)


def test_foreign_directory_and_file_are_refused(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("mine")
    with pytest.raises(errors.ForeignWarehouse, match="not a warehouse"):
        warehouse.open(tmp_path / "project")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(errors.ForeignWarehouse, match="is a file"):
        warehouse.open(tmp_path / "afile")
    other = tmp_path / "other"
    other.mkdir()
    (other / "WAREHOUSE.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(errors.ForeignWarehouse, match="something-else"):
        warehouse.open(other)


def test_missing_catalog_is_named(wh_path):
    (wh_path / "catalog.sqlite").unlink()
    with pytest.raises(errors.CorruptWarehouse, match="catalog.sqlite is missing"):
        warehouse.open(wh_path)


def _data_files(path):
    return sorted((path / "data").rglob("*.parquet"))


@pytest.mark.parametrize("damage", ["delete", "truncate"])
def test_missing_or_corrupt_data_file_is_named(wh_path, damage):
    with warehouse.open(wh_path) as wh:
        wh.append([QuestionRecord(question_id=f"q{i}", question="?", answer="a") for i in range(50)])
    (victim,) = _data_files(wh_path)
    if damage == "delete":
        victim.unlink()
    else:
        victim.write_bytes(b"PAR1 garbage")
    with warehouse.open(wh_path) as wh:
        with pytest.raises(errors.CorruptWarehouse) as exc:
            wh.sql("select * from questions")
    assert victim.name in str(exc.value)


def test_schema_version_mismatch_is_explained(wh_path):
    with warehouse.open(wh_path) as wh:
        wh.commit(lambda con: con.execute(
            "UPDATE lake.schema_versions SET version = 99 WHERE table_name = 'questions'"))
    with pytest.raises(errors.SchemaMismatch, match="'questions' has schema version 99"):
        warehouse.open(wh_path)


def test_read_only_open_refuses_writes(wh_path):
    with warehouse.open(wh_path, read_only=True) as wh:
        with pytest.raises(errors.ReadOnlyViolation):
            wh.append([QuestionRecord(question_id="q", question="?", answer="a")])


def test_half_created_directory_is_completed_not_called_foreign(tmp_path):
    path = tmp_path / "wh"
    warehouse.open(path).close()
    (path / "WAREHOUSE.json").unlink()  # as if the process died just before the marker
    with warehouse.open(path) as wh:
        assert wh.count("questions") == 0
    assert (path / "WAREHOUSE.json").exists()


def test_column_type_change_is_a_schema_mismatch(wh_path):
    with warehouse.open(wh_path) as wh:
        wh.commit(lambda con: con.execute("ALTER TABLE lake.difficulty ALTER k TYPE BIGINT"))
    with pytest.raises(errors.SchemaMismatch, match="difficulty.k is BIGINT"):
        warehouse.open(wh_path)


def test_a_failed_run_stores_its_error_and_a_failed_mark_never_hides_it(wh, caplog):
    from warehouse.lineage import finishing
    with pytest.raises(KeyError):
        with wh.run("compose", {}) as run:
            run.summary = {"seeds": 2}
            raise KeyError("boom")
    row = wh.sql("select status, summary from runs where kind = 'compose'").to_pylist()[0]
    assert row["status"] == "failed"
    assert json.loads(row["summary"]) == {"seeds": 2, "error": "KeyError: 'boom'"}

    def broken(run_id, status, summary):
        raise RuntimeError("catalog gone")
    with pytest.raises(KeyboardInterrupt):  # the original error, not the marking's
        with finishing("r-1", broken):
            raise KeyboardInterrupt
    assert "could not mark run r-1 interrupted: catalog gone" in caplog.text
