"""Crash safety and concurrency with real processes on a real DuckLake (SQLite catalog)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

import warehouse
from tests.warehouse.conftest import run_child, spawn

pytestmark = pytest.mark.integration

# A child that commits one multi-table batch; between the INSERTs and the COMMIT it says
# "inserted" and sleeps, so the parent can SIGKILL it with the transaction open.
SLOW_COMMIT = """
import sys, time, warehouse
from tests.warehouse.helpers import ready_batch
wh = warehouse.open(sys.argv[1])
qs, vs, ds = ready_batch([f"doomed{i}" for i in range(int(sys.argv[2]))])
def fn(con):
    from warehouse.core import Transaction
    tx = Transaction(); tx.append(qs); tx.append(vs); tx.append(ds); tx.apply(con)
    print("inserted", flush=True)
    time.sleep(float(sys.argv[3]))
wh.commit(fn)
print("committed", flush=True)
"""


def _kill_when(proc, line: str, delay: float = 0.0) -> None:
    assert proc.stdout.readline().strip() == line, proc.stderr.read()
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _assert_no_doomed_rows(path) -> None:
    with warehouse.open(path) as wh:
        n = wh.sql("select (select count(*) from questions where question_id like 'doomed%') + "
                    "(select count(*) from verdicts where question_id like 'doomed%') + "
                    "(select count(*) from difficulty where question_id like 'doomed%') as n")
        assert n.column("n")[0].as_py() == 0


def test_sigkill_with_transaction_open_leaves_nothing_and_next_commit_succeeds(wh_path):
    from tests.warehouse.helpers import add_ready
    with warehouse.open(wh_path) as wh:
        add_ready(wh, ["keep1", "keep2"])
        snap = wh.current_snapshot()
    proc = spawn(SLOW_COMMIT, str(wh_path), "500", "30")
    _kill_when(proc, "inserted")
    _assert_no_doomed_rows(wh_path)
    with warehouse.open(wh_path) as wh:
        assert wh.current_snapshot() == snap
        add_ready(wh, ["after"])
        assert wh.sql("select count(*) n from train_ready").column("n")[0].as_py() == 3


def test_sigkill_during_commit_flush_is_all_or_nothing(wh_path):
    """Killed at some point while COMMIT writes Parquet and the catalog: either the whole
    batch is visible (the commit finished) or none of it is."""
    proc = spawn(SLOW_COMMIT, str(wh_path), "10000", "0")
    _kill_when(proc, "inserted", 0.05)
    with warehouse.open(wh_path) as wh:
        counts = wh.sql("select (select count(*) from questions) q, (select count(*) from verdicts) v, "
                        "(select count(*) from difficulty) d").to_pylist()[0]
        assert counts in ({"q": 0, "v": 0, "d": 0}, {"q": 10000, "v": 20000, "d": 10000})
        from tests.warehouse.helpers import add_ready
        add_ready(wh, ["after"])
        assert wh.count("questions") == counts["q"] + 1


# Every 10 commits the writer waits (up to a minute) for one more read of the reader's, so the
# reads overlap the commits however the two processes are scheduled (on a loaded machine the
# 50 commits once fell between two reads).
WRITER_50 = """
import sys, time, warehouse
from pathlib import Path
from tests.warehouse.helpers import add_ready
wh = warehouse.open(sys.argv[1]); reads = Path(sys.argv[2])
def read_count():
    try:
        return int(reads.read_text())
    except (FileNotFoundError, ValueError):
        return 0
for b in range(50):
    if b % 10 == 0:
        before, deadline = read_count(), time.time() + 60
        while read_count() <= before and time.time() < deadline:
            time.sleep(0.01)
    add_ready(wh, [f"b{b:02d}-{i}" for i in range(20)], run_id=f"batch-{b:02d}")
print("done", flush=True)
"""


def test_reader_during_50_commits_never_sees_a_partial_commit(wh_path):
    reads = wh_path.parent / "reads"
    proc = spawn(WRITER_50, str(wh_path), str(reads))
    seen, n = set(), 0
    sql = """select (select count(*) from questions) q, (select count(*) from verdicts) v,
                    (select count(*) from difficulty) d,
                    (select count(*) from (select run_id from questions group by run_id
                                            having count(*) <> 20)) partial_q,
                    (select count(*) from train_ready) ready"""
    with warehouse.open(wh_path, read_only=True) as wh:
        while True:
            finished = proc.poll() is not None
            row = wh.sql(sql).to_pylist()[0]
            assert row["q"] % 20 == 0 and row["v"] == 2 * row["q"] and row["d"] == row["q"], row
            assert row["partial_q"] == 0 and row["ready"] == row["q"], row
            seen.add(row["q"])
            n += 1
            reads.write_text(str(n))
            if finished:
                break
            time.sleep(0.05)  # leave the writer some CPU on a 2-core machine
    assert proc.returncode == 0, proc.stderr.read()
    assert row["q"] == 1000
    assert len(seen) >= 5, seen  # the reader really overlapped the writer (a read per pause)


TWO_WRITERS = """
import sys, warehouse
from warehouse.schema import QuestionRecord, RolloutRecord, VerdictRecord
wh = warehouse.open(sys.argv[1]); who = sys.argv[2]
for b in range(20):
    with wh.transaction() as tx:
        if who == "build":
            tx.append([QuestionRecord(question_id=f"{who}{b}-{i}", question="?", answer="a") for i in range(15)])
        else:
            tx.append([RolloutRecord(question_id=f"{who}{b}-{i}", policy_version=b, reward=1.0) for i in range(15)])
        # both append to the same table too: the case that conflicts
        tx.append([VerdictRecord(question_id=f"{who}{b}-{i}", check_name=who, status="pass") for i in range(15)])
print("done", flush=True)
"""


def test_two_writer_processes_lose_nothing(wh_path):
    procs = [spawn(TWO_WRITERS, str(wh_path), who) for who in ("build", "trainer")]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "done" in out, err
    with warehouse.open(wh_path) as wh:
        assert wh.count("questions") == 20 * 15
        assert wh.count("rollouts") == 20 * 15
        per = {r["check_name"]: r["n"] for r in wh.sql(
            "select check_name, count(distinct question_id) n from verdicts group by 1").to_pylist()}
        assert per == {"build": 300, "trainer": 300}
        assert wh.count("verdicts") == 600


def test_two_processes_creating_the_same_new_warehouse(tmp_path):
    code = "import sys, warehouse; warehouse.open(sys.argv[1]).close(); print('ok')"
    path = str(tmp_path / "fresh")
    procs = [spawn(code, path) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0 and "ok" in out, err
    with warehouse.open(path) as wh:
        assert json.loads((wh.root / "WAREHOUSE.json").read_text())["format"] == "hardqa-warehouse"
