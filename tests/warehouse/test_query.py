"""`datagen query`: read-only SQL, output formats, time travel, and every refused form."""

from __future__ import annotations

import csv
import io
import json

import pytest

import warehouse
from datagen.cli import main
from warehouse import errors
from warehouse.query import check_read_only


def _query(capsys, path, *args):
    code = main(["query", *args, "--warehouse", str(path)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_csv_has_header_then_rows(shared_ready_wh, capsys):
    code, out, _ = _query(capsys, shared_ready_wh, "select band, count(*) as n from train_ready "
                                            "group by band order by band", "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows == [["band", "n"], ["easy", "20"], ["hard", "20"], ["medium", "20"]]


def test_json_is_one_array_of_objects_with_nested_values(shared_ready_wh, capsys):
    code, out, _ = _query(capsys, shared_ready_wh, "from train_ready where question_id = 'q001'",
                          "--format", "json")
    assert code == 0
    (row,) = json.loads(out)
    assert row["answer_aliases"] == ["alias-q001"] and row["band"] == "medium"
    assert set(row) >= {"question_id", "question", "answer", "answer_aliases", "band", "pass_rate"}


def test_table_format_and_plain_table_names(shared_ready_wh, capsys):
    code, out, _ = _query(capsys, shared_ready_wh, "select question_id from questions "
                                            "where question_id in ('failed', 'unbanded') order by 1")
    assert code == 0
    assert out.splitlines()[0].strip() == "question_id" and "failed" in out and "(2 rows)" in out


def test_train_ready_excludes_failed_and_unbanded(shared_ready_wh, capsys):
    _, out, _ = _query(capsys, shared_ready_wh, "select count(*) as n from train_ready", "-f", "json")
    assert json.loads(out) == [{"n": 60}]


def test_as_of_reads_an_earlier_snapshot(ready_wh, capsys):
    with warehouse.open(ready_wh) as wh:
        first = wh.current_snapshot()
        from tests.warehouse.helpers import add_ready
        add_ready(wh, ["late1", "late2"])
    sql = "select count(*) as n from train_ready"
    assert json.loads(_query(capsys, ready_wh, sql, "-f", "json")[1]) == [{"n": 62}]
    assert json.loads(_query(capsys, ready_wh, sql, "-f", "json", "--as-of", str(first))[1]) == [{"n": 60}]
    code, _, err = _query(capsys, ready_wh, sql, "--as-of", "9999")
    assert code != 0 and "no snapshot 9999" in err


REFUSED = {
    "insert": "insert into questions (question_id) values ('x')",
    "update": "update questions set answer = 'x'",
    "delete": "delete from verdicts",
    "create": "create table lake.evil as select 1",
    "create_temp": "create temp table t as select 1",
    "drop": "drop table questions",
    "alter": "alter table questions add column x int",
    "attach": "attach '/tmp/other.db' as other",
    "detach": "detach lake",
    "copy_out": "copy questions to '/tmp/questions.csv'",
    "copy_select_out": "copy (select * from questions) to '/tmp/q.parquet' (format parquet)",
    "export_database": "export database '/tmp/dump'",
    "install": "install httpfs",
    "load": "load httpfs",
    "set": "set threads = 1",
    "reset": "reset threads",
    "pragma_set": "pragma threads = 1",
    "pragma": "pragma enable_profiling",
    "call": "call ducklake_expire_snapshots('lake', older_than => now())",
    "checkpoint": "checkpoint",
    "read_csv": "select * from read_csv('/etc/passwd')",
    "read_parquet": "select * from read_parquet('/tmp/*.parquet')",
    "read_json": "select * from read_json_auto('/tmp/x.json')",
    "read_text": "select * from read_text('/etc/hostname')",
    "glob": "select * from glob('/etc/*')",
    "file_scan": "select * from '/etc/passwd'",
    "url_scan": "select * from 'https://example.com/x.parquet'",
    "sqlite_scan": "select * from sqlite_scan('/tmp/x.sqlite', 't')",
    "query_fn": "select * from query('select 1')",
    "subquery_read": "select * from questions where question_id in (select * from read_csv('/etc/passwd'))",
    "getenv": "select getenv('HOME')",
    "two_statements": "select 1; drop table questions",
    "explain_analyze_write": "explain analyze delete from questions",
    "other_catalog": "select * from system.main.duckdb_settings() , memory.main.t",
    "use": "use memory",
}


@pytest.mark.parametrize("sql", REFUSED.values(), ids=REFUSED.keys())
def test_refused_before_anything_runs(sql):
    with pytest.raises(errors.QueryRefused):
        check_read_only(sql)


@pytest.fixture(scope="module")
def shared_state(shared_ready_wh):
    with warehouse.open(shared_ready_wh) as wh:
        return wh.current_snapshot(), wh.count("questions")


@pytest.mark.parametrize("key", ["insert", "attach", "copy_out", "load", "set", "read_csv",
                                 "file_scan", "two_statements", "detach"])
def test_cli_refusal_is_one_line_nonzero_and_changes_nothing(shared_ready_wh, shared_state,
                                                             capsys, key):
    code, out, err = _query(capsys, shared_ready_wh, REFUSED[key])
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:")
    with warehouse.open(shared_ready_wh) as wh:
        assert (wh.current_snapshot(), wh.count("questions")) == shared_state


def test_sandbox_blocks_even_when_the_parser_check_is_bypassed(shared_ready_wh, tmp_path):
    """Second line of defence: the connection itself is read-only and cannot reach files."""
    from warehouse.query import execute, open_read_only
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    wh = open_read_only(shared_ready_wh)
    try:
        for sql in (f"select * from read_csv('{secret}')",
                    "insert into questions (question_id) values ('x')",
                    f"copy (select 1) to '{tmp_path / 'out.csv'}'",
                    "set enable_external_access = true", "load httpfs",
                    f"attach '{tmp_path / 'x.db'}' as x"):
            with pytest.raises(errors.WarehouseError):
                execute(wh, sql)
        assert execute(wh, "select count(*) as n from train_ready").column("n")[0].as_py() == 60
    finally:
        wh.close()
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("sql", [
    "describe questions", "show tables", "summarize train_ready",
    "explain select * from questions",
    "with b as (select band from train_ready) select band, count(*) from b group by all",
    "from snapshots()", "select * from lake.questions limit 1",
])
def test_reads_are_allowed(shared_ready_wh, sql):
    from warehouse.query import run_query
    assert run_query(shared_ready_wh, sql).num_rows >= 1


def test_bad_sql_and_missing_warehouse_are_one_line_errors(shared_ready_wh, tmp_path, capsys):
    code, _, err = _query(capsys, shared_ready_wh, "select nope from questions")
    assert code != 0 and len(err.strip().splitlines()) == 1 and "nope" in err
    code, _, err = _query(capsys, tmp_path / "absent", "select 1")
    assert code != 0 and "no warehouse at" in err
