"""The per-snapshot copy of train_ready that `Warehouse.sql` serves plain train_ready queries from
(opt-in: `train_ready_copy=True`)."""

from __future__ import annotations

import warehouse
from tests.warehouse.helpers import add_ready
from warehouse.schema import RolloutRecord, VerdictRecord


def _ready_count(wh) -> int:
    return wh.sql("select count(*) n from train_ready").column("n")[0].as_py()


def test_copy_follows_commits_from_another_connection(tmp_path):
    writer = warehouse.open(tmp_path / "w", train_ready_copy=True)
    reader = warehouse.open(tmp_path / "w", read_only=True, train_ready_copy=True)
    assert _ready_count(reader) == 0
    add_ready(writer, ["a", "b"])
    assert _ready_count(reader) == 2
    # A failing verdict removes a question from the view: the copy must follow.
    writer.append([VerdictRecord(question_id="a", check_name="grounding", status="fail")])
    assert _ready_count(reader) == 1
    assert reader.sql("select question_id from lake.train_ready").column(0).to_pylist() == ["b"]


def test_commits_that_do_not_touch_inputs_keep_the_copy(tmp_path):
    wh = warehouse.open(tmp_path / "w", train_ready_copy=True)
    add_ready(wh, ["a"])
    assert _ready_count(wh) == 1
    built_at = wh._train_ready_snapshot
    wh.append([RolloutRecord(question_id="a", policy_version=0, reward=1.0)])
    assert not wh.changed_since(built_at)
    assert _ready_count(wh) == 1
    add_ready(wh, ["b"])
    assert wh.changed_since(built_at)
    assert _ready_count(wh) == 2


def test_queries_mixing_tables_evaluate_the_view_in_one_statement(tmp_path):
    wh = warehouse.open(tmp_path / "w", train_ready_copy=True)
    add_ready(wh, ["a", "b"])
    assert _ready_count(wh) == 2  # builds the copy
    add_ready(wh, ["c"])
    row = wh.sql("select (select count(*) from questions) q, "
                 "(select count(*) from train_ready) r").to_pylist()[0]
    assert row == {"q": 3, "r": 3}


def test_no_copy_unless_asked(tmp_path):
    wh = warehouse.open(tmp_path / "w")
    add_ready(wh, ["a", "b"])
    assert _ready_count(wh) == 2
    attached = {r[0] for r in wh.con.execute("select database_name from duckdb_databases()").fetchall()}
    assert "view_copies" not in attached and wh._train_ready_snapshot is None
