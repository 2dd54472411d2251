"""Run lineage: a run whose process was killed is marked `interrupted` when the next run of
its kind starts; live runs and runs of other kinds stay `running`; a resume is recorded."""

from __future__ import annotations

import datetime as dt
import os
import signal

import pytest

import warehouse
from tests.warehouse.conftest import spawn

START_AND_WAIT = """
import sys, time, warehouse
wh = warehouse.open(sys.argv[1], create=False)
print(wh.start_run(sys.argv[2]), flush=True)
wh.close()
time.sleep(600)
"""


def _status(wh):
    return {r["run_id"]: r for r in wh.sql("select * from runs").to_pylist()}


@pytest.mark.integration
def test_killed_run_is_marked_interrupted_when_the_next_run_of_its_kind_starts(wh_path):
    killed, alive, other = (spawn(START_AND_WAIT, str(wh_path), kind)
                            for kind in ("train", "train", "compose"))
    try:
        ids = {name: p.stdout.readline().strip() for name, p in
               (("killed", killed), ("alive", alive), ("other", other))}
        for p in (killed, other):
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
        with warehouse.open(wh_path, create=False) as wh:
            assert _status(wh)[ids["killed"]]["status"] == "running"  # nobody could mark it
            new = wh.start_run("train")
            runs = _status(wh)
    finally:
        alive.kill()
        alive.wait(timeout=30)
    assert runs[ids["killed"]]["status"] == "interrupted"
    assert runs[ids["killed"]]["finished_at"] is not None
    assert runs[ids["alive"]]["status"] == "running"  # its process still runs
    assert runs[ids["other"]]["status"] == "running"  # another kind: left to its next run
    assert runs[new]["status"] == "running" and runs[new]["pid"] == os.getpid()


def test_reused_pid_counts_as_gone():
    from warehouse.runs import process_gone
    long_ago = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
    assert process_gone(os.getpid(), long_ago)  # this process began after that run started
    assert not process_gone(os.getpid(), dt.datetime.now(dt.timezone.utc))


def test_resuming_run_records_what_it_resumed_and_its_parent(wh):
    first = wh.start_run("train")
    wh.finish_run(first, "interrupted")
    with wh.run("train", {}, resumed_from=first, parent_run_id="build-1") as run:
        pass
    row = _status(wh)[run.run_id]
    assert (row["resumed_from"], row["parent_run_id"], row["status"]) == (
        first, "build-1", "succeeded")
    with pytest.raises(ValueError, match="'running', 'succeeded', 'failed', 'interrupted'"):
        wh.finish_run(run.run_id, "done")


def test_a_sigterm_under_another_handler_still_counts_as_a_stop(tmp_path):
    """Prefect swaps in its own SIGTERM handler for a flow run, and DuckDB turns a handler's
    exception into an ordinary error: the run is still marked interrupted, not failed."""
    import os
    import signal

    import warehouse
    from warehouse.runs import sigterm_arrived, sigterm_interrupts
    wh = warehouse.open(tmp_path / "w")
    with pytest.raises(RuntimeError), sigterm_interrupts():
        assert not sigterm_arrived()
        with wh.run("band", {}):
            previous = signal.signal(signal.SIGTERM, lambda *a: None)  # "Prefect's"
            os.kill(os.getpid(), signal.SIGTERM)
            signal.signal(signal.SIGTERM, previous)
            raise RuntimeError("Query interrupted")
    assert not sigterm_arrived()  # outside a scope
    row = wh.sql("select status, summary from runs").to_pylist()[0]
    assert row["status"] == "interrupted" and "Query interrupted" in row["summary"]
    with pytest.raises(KeyError), sigterm_interrupts():
        with wh.run("band", {}):
            raise KeyError("a plain error")
    assert wh.sql("select status from runs order by started_at").to_pylist()[-1] == \
        {"status": "failed"}
    wh.close()


def test_a_sigterm_taken_by_another_thread_still_stops_a_blocked_main_thread():
    """The kernel may hand a process's SIGTERM to any thread; the main thread, asleep in a
    wait (a verify check's future had 600 s), must still stop at once."""
    import signal
    import threading
    import time

    from warehouse.runs import sigterm_interrupts

    def other_thread() -> None:
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt), sigterm_interrupts():
        threading.Thread(target=other_thread).start()
        threading.Event().wait(60)
    assert time.monotonic() - t0 < 5


def test_a_swallowed_sigterm_still_stops_the_main_thread_soon():
    """Prefect's handler may raise where Prefect's own code swallows it, and a build then ran
    on to the end: when no run began to stop, the watcher sends SIGTERM again;
    when one did (lineage.finishing's `note_stop`), it leaves the stop to that run."""
    import time

    from warehouse import runs
    swallowed = []

    def prefect(signum, frame):  # its first stop lands where it is swallowed
        if not swallowed:
            swallowed.append(signum)
            return
        raise KeyboardInterrupt
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt), runs.sigterm_interrupts():
        signal.signal(signal.SIGTERM, prefect)
        os.kill(os.getpid(), signal.SIGTERM)
        while time.monotonic() - t0 < 30:
            time.sleep(0.05)
    assert runs.GRACE <= time.monotonic() - t0 < runs.GRACE + 3
    with runs.sigterm_interrupts():
        signal.signal(signal.SIGTERM, lambda *a: runs.note_stop())  # the stop is under way
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(runs.GRACE + 1)  # no KeyboardInterrupt meanwhile


@pytest.mark.integration
def test_a_run_that_ends_interrupted_ends_its_running_children_with_it(wh):
    build, other = wh.start_run("build"), wh.start_run("build")
    crawl = wh.start_run("crawl", parent_run_id=build)
    done = wh.start_run("compose", parent_run_id=build)
    wh.finish_run(done, "succeeded")
    kept = wh.start_run("crawl", parent_run_id=other)
    wh.finish_run(other, "succeeded")  # a run that succeeded leaves its children alone
    wh.finish_run(build, "interrupted")
    rows = _status(wh)
    assert [rows[r]["status"] for r in (build, crawl, done, kept)] == \
        ["interrupted", "interrupted", "succeeded", "running"]
    assert build in rows[crawl]["summary"]


def test_a_stop_while_a_run_is_marked_succeeded_marks_it_interrupted():
    """The SIGTERM can land in the UPDATE that marks a finished stage `succeeded` (DuckDB then
    says "Query interrupted"): the row must not stay `running`."""
    from warehouse.lineage import finishing
    marks = []

    def finish(run_id, status, summary):
        marks.append(status)
        if status == "succeeded":
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt), finishing("crawl-1", finish):
        pass
    assert marks == ["succeeded", "interrupted"]


@pytest.mark.integration
def test_a_rollback_that_a_stop_interrupts_closes_the_connection(wh):
    """An open transaction would hold the catalog's lock: a later commit of the same process
    (the build marking itself interrupted) waited out every retry, minutes."""
    class Interrupted:
        def __init__(self, con):
            self.con = con

        def execute(self, sql, *args):
            if sql == "ROLLBACK":
                raise KeyboardInterrupt
            return self.con.execute(sql, *args)

        def close(self):
            self.con.close()
    con = wh.con
    wh.con = Interrupted(con)

    def interrupted_update(c):
        raise RuntimeError("Query interrupted")
    with pytest.raises(KeyboardInterrupt):
        wh.commit(interrupted_update)
    with pytest.raises(Exception, match="(?i)closed"):
        con.execute("select 1")
