"""Additive schema migrations: a warehouse made before a schema change opens, keeps every
row and gains the new tables and columns; read-only opens name the upgrade command."""

from __future__ import annotations

import json

import pytest

import warehouse
from warehouse import errors
from warehouse.core import connect
from warehouse.schema import QuestionRecord, RECORD_TYPES, RunRecord

# The catalog as the code before the first migration created it (schema.py at version 1 of
# every table; no llm_calls table, no answer_type / details / n_tool_calls / parent_run_id,
# schema_versions with two columns, train_ready without hops and answer_type).
V1_TABLES = {
    "fetches": "url VARCHAR, final_url VARCHAR, http_status INTEGER, outcome VARCHAR, "
               "reason VARCHAR, bytes BIGINT, elapsed_ms DOUBLE, fetched_at TIMESTAMPTZ, "
               "content_type VARCHAR, depth INTEGER, run_id VARCHAR, created_at TIMESTAMPTZ",
    "pages": "url VARCHAR, title VARCHAR, text VARCHAR, content_hash VARCHAR, "
             "fetched_at TIMESTAMPTZ, final_url VARCHAR, links STRUCT(url VARCHAR, anchor VARCHAR)[], "
             "license VARCHAR, language VARCHAR, etag VARCHAR, last_modified VARCHAR, html VARCHAR, "
             "run_id VARCHAR, created_at TIMESTAMPTZ",
    "questions": "question_id VARCHAR, question VARCHAR, answer VARCHAR, answer_aliases VARCHAR[], "
                 "hops INTEGER, actions VARCHAR[], evidence STRUCT(url VARCHAR, quote VARCHAR)[], "
                 "source_urls VARCHAR[], parent_id VARCHAR, composer VARCHAR, backend VARCHAR, "
                 "trace VARCHAR, run_id VARCHAR, created_at TIMESTAMPTZ",
    "verdicts": "question_id VARCHAR, check_name VARCHAR, status VARCHAR, reason VARCHAR, "
                "details VARCHAR, run_id VARCHAR, created_at TIMESTAMPTZ",
    "difficulty": "question_id VARCHAR, solver VARCHAR, k INTEGER, n_correct INTEGER, "
                  "pass_rate DOUBLE, band VARCHAR, pass_rate_low DOUBLE, pass_rate_high DOUBLE, "
                  "source VARCHAR, run_id VARCHAR, created_at TIMESTAMPTZ",
    "rollouts": "question_id VARCHAR, policy_version BIGINT, reward DOUBLE, n_turns INTEGER, "
                "episode_id VARCHAR, completion_tokens INTEGER, staleness INTEGER, "
                "trained BOOLEAN, run_id VARCHAR, created_at TIMESTAMPTZ",
    "runs": "run_id VARCHAR, kind VARCHAR, config VARCHAR, code_version VARCHAR, "
            "started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, status VARCHAR, summary VARCHAR, "
            "created_at TIMESTAMPTZ",
}
V1_VIEW = """
CREATE VIEW lake.train_ready AS
WITH latest_verdicts AS (
    SELECT question_id, check_name, arg_max(status, created_at) AS status
    FROM lake.verdicts GROUP BY question_id, check_name
), verified AS (
    SELECT question_id FROM latest_verdicts GROUP BY question_id HAVING bool_and(status = 'pass')
), latest_difficulty AS (
    SELECT question_id, arg_max(band, created_at) AS band,
           arg_max(pass_rate, created_at) AS pass_rate
    FROM lake.difficulty GROUP BY question_id
), latest_question AS (
    SELECT question_id, arg_max(question, created_at) AS question,
           arg_max(answer, created_at) AS answer,
           arg_max(answer_aliases, created_at) AS answer_aliases, max(created_at) AS created_at
    FROM lake.questions GROUP BY question_id
)
SELECT q.question_id, q.question, q.answer, q.answer_aliases, d.band, d.pass_rate, q.created_at
FROM latest_question q JOIN verified v USING (question_id) JOIN latest_difficulty d USING (question_id)
"""
N = 40


def make_v1_warehouse(root):
    """A warehouse folder exactly as the pre-migration code left it, with rows in it."""
    (root / "data").mkdir(parents=True)
    con = connect()
    con.execute(f"ATTACH 'ducklake:sqlite:{root / 'catalog.sqlite'}' AS lake "
                f"(DATA_PATH '{root / 'data'}/')")
    con.execute("CREATE TABLE lake.schema_versions (table_name VARCHAR, version INTEGER)")
    for name, cols in V1_TABLES.items():
        con.execute(f"CREATE TABLE lake.{name} ({cols})")
        con.execute("INSERT INTO lake.schema_versions VALUES (?, 1)", [name])
    con.execute(V1_VIEW)
    now = "TIMESTAMPTZ '2026-01-01 00:00:00+00'"
    # hops counted composed facts then: even questions quote two pages, odd ones one page
    evidence = ("CASE WHEN i % 2 = 0 THEN [{'url': 'http://a', 'quote': 'A'}, "
                "{'url': 'http://b', 'quote': 'B'}] "
                "ELSE [{'url': 'http://a', 'quote': 'A'}, {'url': 'http://a', 'quote': 'C'}] END")
    con.execute(f"INSERT INTO lake.questions (question_id, question, answer, answer_aliases, hops, "
                f"evidence, created_at) SELECT 'q' || i, 'Q' || i || '?', 'a' || i, ['x'], 2, "
                f"{evidence}, {now} FROM range({N}) t(i)")
    con.execute(f"INSERT INTO lake.verdicts (question_id, check_name, status, created_at) "
                f"SELECT 'q' || i, 'grounding', 'pass', {now} FROM range({N}) t(i)")
    con.execute(f"INSERT INTO lake.difficulty (question_id, solver, k, n_correct, pass_rate, band, "
                f"source, created_at) SELECT 'q' || i, 's', 4, 2, 0.5, 'medium', 'solver', {now} "
                f"FROM range({N}) t(i)")
    con.execute(f"INSERT INTO lake.rollouts (question_id, policy_version, reward, created_at) "
                f"VALUES ('q1', 3, 1.0, {now})")
    con.execute(f"INSERT INTO lake.runs (run_id, kind, config, code_version, started_at, status, "
                f"created_at) VALUES ('old-run', 'crawl', '{{}}', 'git:old', {now}, 'succeeded', {now})")
    con.close()
    (root / "WAREHOUSE.json").write_text(json.dumps(
        {"format": "hardqa-warehouse", "version": 1, "catalog": None, "data_path": None}))
    return root


COUNTS = {"questions": N, "verdicts": N, "difficulty": N, "rollouts": 1, "runs": 1}


def test_old_warehouse_opens_keeps_every_row_and_gains_table_and_columns(tmp_path):
    root = make_v1_warehouse(tmp_path / "old")
    with warehouse.open(root, create=False) as wh:
        assert {t: wh.count(t) for t in COUNTS} == COUNTS
        assert wh.count("llm_calls") == 0
        q = wh.read(QuestionRecord, where="question_id = 'q7'")[0]
        assert (q.answer, q.answer_aliases, q.answer_type) == ("a7", ("x",), "")
        # recounted: hops are the distinct evidence pages, the old count kept as steps
        assert (q.hops, q.steps, q.hop_kind) == (1, 2, "")
        q = wh.read(QuestionRecord, where="question_id = 'q8'")[0]
        assert (q.hops, q.steps, q.hop_kind, q.answer) == (2, 2, "bridge", "a8")
        run = wh.read(RunRecord)[0]
        assert (run.run_id, run.parent_run_id, run.resumed_from) == ("old-run", "", "")
        ready = wh.sql("select question_id, hops, answer_type from train_ready order by 1")
        assert ready.num_rows == N and sorted(set(ready["hops"].to_pylist())) == [1, 2]
        wh.append([QuestionRecord(question_id="new", question="?", answer="a",
                                  answer_type="year")])
        history = wh.sql("select table_name, version, change from schema_versions "
                         "where applied_at is not null").to_pylist()
    changes = {h["change"] for h in history}
    assert "created table llm_calls" in changes and "questions gained column answer_type" in changes
    assert any(c.startswith("questions recounted") for c in changes)
    assert {h["version"] for h in history if h["table_name"] == "questions"} == {3}


def test_read_only_open_of_an_old_warehouse_names_the_upgrade_command(tmp_path):
    root = make_v1_warehouse(tmp_path / "old")
    with pytest.raises(errors.SchemaMismatch, match=r"older version.*datagen maintain --warehouse"):
        warehouse.open(root, read_only=True)
    from datagen.cli import main
    assert main(["maintain", "--warehouse", str(root)]) == 0  # the command the message names
    with warehouse.open(root, read_only=True) as wh:
        assert wh.count("questions") == N and wh.count("llm_calls") == 0


def test_upgrade_happens_once_and_old_snapshots_stay_readable(tmp_path):
    root = make_v1_warehouse(tmp_path / "old")
    with warehouse.open(root, create=False) as wh:
        upgraded_at = wh.current_snapshot()
    with warehouse.open(root, create=False) as wh:
        assert wh.current_snapshot() == upgraded_at  # a current warehouse is not touched
        assert wh.ensure_schema() == []
    with warehouse.open(root, snapshot=upgraded_at - 1) as wh:  # time travel before it
        assert wh.count("questions") == N and "answer_type" not in wh.sql(
            "select * from questions limit 0").column_names


def test_fresh_warehouse_has_every_table_at_its_version(wh_path):
    with warehouse.open(wh_path, read_only=True) as wh:
        versions = dict(wh.con.execute("select table_name, max(version) "
                                       "from lake.schema_versions group by 1").fetchall())
    assert {n: versions[n] for n in RECORD_TYPES} == {n: r.SCHEMA_VERSION
                                                       for n, r in RECORD_TYPES.items()}


def test_dropped_column_comes_back_on_a_writable_open(wh_path):
    with warehouse.open(wh_path) as wh:
        wh.commit(lambda con: con.execute("ALTER TABLE lake.verdicts DROP COLUMN reason"))
    with pytest.raises(errors.SchemaMismatch, match="verdicts gained column reason"):
        warehouse.open(wh_path, read_only=True)
    with warehouse.open(wh_path) as wh:
        assert "reason" in wh.sql("select * from verdicts").column_names
