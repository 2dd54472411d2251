"""Run lineage: every stage's work is one `runs` row, started `running` and finished
`succeeded`, `failed` or `interrupted` with its summary.

`finishing` is the one way a run is finished: whatever ends the block, the row says so, and
marking it never hides the error that ended it. `Warehouse.run` starts a run and finishes it
with `finishing`; a caller that must not hold a warehouse open while the run's work goes on
(a Prefect flow whose stages open their own) gives `finishing` a function that opens one to
finish the row. Which process a run belongs to, and whether it is alive, is runs.py's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from warehouse import runs
from warehouse.location import LAKE
from warehouse.runs import code_version, redact
from warehouse.schema import RUN_STATUSES, RunRecord, utcnow

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

Finish = Callable[[str, str, Mapping[str, object]], None]  # (run_id, status, summary)


@dataclass
class RunHandle:
    """A run in progress: set `summary` before the block ends to store it with the run."""

    run_id: str
    summary: dict[str, Any] | None = None


@contextlib.contextmanager
def finishing(run_id: str, finish: Finish) -> Iterator[RunHandle]:
    """Yield a handle on `run_id`; finish the run when the block ends: `succeeded` with
    `handle.summary`, or `failed` / `interrupted` with the summary and the
    error that ended it. A failure to mark the run is logged; the original error propagates.
    Whatever is not an `Exception` stopped the run from outside: Ctrl-C, a SIGTERM (as
    KeyboardInterrupt, or Prefect's TerminationSignal within a flow run), SystemExit; so did
    any error raised after a SIGTERM (a stop that surfaced as an error: DuckDB turns a signal
    handler's exception into "Query interrupted"; see runs.sigterm_arrived). A stop that
    lands while the run is being marked `succeeded` marks it `interrupted`."""
    handle = RunHandle(run_id)
    try:
        yield handle
        finish(run_id, "succeeded", handle.summary or {})
    except BaseException as exc:
        _finish_after(exc, handle, finish)
        raise


def _finish_after(exc: BaseException, handle: RunHandle, finish: Finish) -> None:
    """Mark the run `interrupted` (a stop) or `failed` (an error of its own) with `exc`."""
    stopped = not isinstance(exc, Exception) or runs.sigterm_arrived()
    if stopped:
        runs.note_stop()
    status = "interrupted" if stopped else "failed"
    summary = dict(handle.summary or {})
    if not summary.get("error"):  # a run's own account of its error wins
        summary["error"] = f"{type(exc).__name__}: {exc}"
    try:
        finish(handle.run_id, status, summary)
    except Exception as mark_exc:  # noqa: BLE001 - logged; the original error propagates
        log.error("could not mark run %s %s: %s", handle.run_id, status, mark_exc)


class RunLineage:
    """The `runs` methods of `Warehouse` (a mixin: it uses the warehouse's connection and
    commits)."""

    con: "duckdb.DuckDBPyConnection"
    append: Callable[..., int]
    commit: Callable[..., Any]

    def start_run(self, kind: str, config: Mapping[str, object] | None = None,
                  run_id: str | None = None, *, parent_run_id: str = "",
                  resumed_from: str = "") -> str:
        """Record a `running` run of `kind` (with this process's pid and host) and return its
        id. First, runs of the same kind left `running` by a process that is gone are marked
        `interrupted`. `resumed_from`: the run whose checkpoint this one continues."""
        self.mark_interrupted(kind)
        run_id = run_id or new_run_id(kind)
        pid, host = runs.this_process()
        rec = RunRecord(run_id=run_id, kind=kind,
                        config=json.dumps(redact(config or {}), sort_keys=True, default=str),
                        code_version=code_version(), started_at=utcnow(), pid=pid, host=host,
                        parent_run_id=parent_run_id, resumed_from=resumed_from)
        self.append([rec])
        return run_id

    def mark_interrupted(self, kind: str) -> list[str]:
        """Mark `interrupted` the runs of `kind` on this host still `running` although their
        process is gone (killed, crashed machine); returns their ids."""
        _, host = runs.this_process()
        rows = self.con.execute(
            f"SELECT run_id, pid, started_at FROM {LAKE}.runs WHERE kind = ? AND "
            "status = 'running' AND host = ? AND pid > 0", [kind, host]).fetchall()
        gone = [run_id for run_id, pid, started in rows if runs.process_gone(pid, started)]
        if gone:
            note = json.dumps({"interrupted": f"its process on {host} was gone"})
            marks = ", ".join("?" * len(gone))
            self.commit(lambda con: con.execute(
                f"UPDATE {LAKE}.runs SET status = 'interrupted', finished_at = ?, summary = ? "
                f"WHERE status = 'running' AND run_id IN ({marks})", [utcnow(), note, *gone]))
            log.warning("marked %d %s run(s) interrupted (process gone): %s",
                        len(gone), kind, ", ".join(gone))
        return gone

    def finish_run(self, run_id: str, status: str = "succeeded",
                   summary: Mapping[str, object] | None = None) -> None:
        """Set the run's end time, status and summary (one of RUN_STATUSES). A run that ends
        failed or interrupted ends its child runs still `running` with it (a stop that reached
        a stage between its row's commit and its own `finishing` left that row running)."""
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} is not allowed; use one of "
                             f"{', '.join(map(repr, RUN_STATUSES))}")
        now = utcnow()
        orphan = json.dumps({"error": f"its parent run {run_id} ended {status}"})

        def update(con):
            con.execute(f"UPDATE {LAKE}.runs SET finished_at = ?, status = ?, summary = ? "
                        "WHERE run_id = ?",
                        [now, status, json.dumps(summary or {}, default=str), run_id])
            if status != "succeeded":
                con.execute(f"UPDATE {LAKE}.runs SET finished_at = ?, status = ?, summary = ? "
                            "WHERE parent_run_id = ? AND status = 'running'",
                            [now, status, orphan, run_id])
        self.commit(update)

    @contextlib.contextmanager
    def run(self, kind: str, config: Mapping[str, object] | None = None,
            run_id: str | None = None, **lineage: str) -> Iterator[RunHandle]:
        """`with wh.run("crawl", cfg) as run:` starts a run and finishes it (`finishing`).
        `lineage`: parent_run_id= and resumed_from= as in start_run."""
        run_id = run_id or new_run_id(kind)
        with finishing(run_id, self.finish_run) as handle:  # a stop mid-start ends the row too
            self.start_run(kind, config, run_id, **lineage)
            yield handle


def new_run_id(kind: str) -> str:
    """A run id that sorts by start time and says its kind."""
    return f"{kind}-{utcnow():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
