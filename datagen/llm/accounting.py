"""Every call becomes an `llm_calls` row; totals go into the stage's summary.

Rows are buffered and committed in batches while the run goes on: by a writer thread every
`flush_s` seconds, or as soon as `flush_rows` are waiting, and the rest when the client is
closed. A killed run so keeps the rows of all but its last few seconds of calls. The writer
commits through the stage's own `Warehouse` object (its methods take turns on the one
connection: see warehouse/core.py); a second connection of the same process to a SQLite
catalog is no option, concurrent use of two locks that catalog up. Past `max_rows` waiting
(the warehouse is slower than the calls), `record` writes them itself: the buffer is bounded.
"""

from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from datagen.llm.types import ChatRequest, ChatResult
from warehouse.record import utcnow

log = logging.getLogger(__name__)


@dataclass
class Totals:
    """Counters for `runs.summary` and the stage summary."""

    calls: int = 0
    ok: int = 0
    failed: int = 0
    cached: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: collections.Counter = field(default_factory=collections.Counter)
    structured: collections.Counter = field(default_factory=collections.Counter)

    def add(self, result: ChatResult) -> None:
        self.calls += 1
        setattr(self, result.status, getattr(self, result.status) + 1)
        self.attempts += result.attempts
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens
        if result.error:
            self.errors[result.error_code] += 1
        if result.structured:
            self.structured[result.structured] += 1

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "ok": self.ok, "failed": self.failed, "cached": self.cached,
                "attempts": self.attempts, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "errors": dict(self.errors),
                "structured": dict(self.structured)}


class CallLog:
    """Buffered `llm_calls` rows for one run, plus its totals."""

    def __init__(self, wh=None, run_id: str = "", endpoint: str = "", model: str = "", *,
                 flush_rows: int = 256, max_rows: int = 4096, before_write=None):
        self.wh, self.run_id, self.endpoint, self.model = wh, run_id, endpoint, model
        self.flush_rows, self.max_rows = flush_rows, max_rows
        self.before_write = before_write  # called between taking rows and committing them
        self.totals = Totals()
        self.written = 0
        self._rows: list[Any] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self.wanted = threading.Event()  # set when a batch is ready: the writer wakes

    def record(self, req: ChatRequest, result: ChatResult) -> None:
        """Count the call and queue its row (thread-safe; called from the event loop)."""
        with self._lock:
            self.totals.add(result)
            if self.wh is None:
                return
            self._rows.append((req, result, utcnow()))
            waiting = len(self._rows)
        if waiting >= self.max_rows:
            self.flush()  # the writer is far behind: back-pressure instead of a growing buffer
        elif waiting >= self.flush_rows:
            self.wanted.set()

    def _row(self, req: ChatRequest, result: ChatResult, created_at):
        from warehouse import LLMCallRecord
        return LLMCallRecord(
            run_id=self.run_id, purpose=req.purpose, item_id=req.item_id,
            endpoint=self.endpoint, model=self.model, request_key=result.request_key, n=req.n,
            status=result.status, error=result.error, attempts=result.attempts,
            latency_ms=result.latency_ms, prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens, cached=result.status == "cached",
            created_at=created_at)

    def flush(self) -> int:
        """Commit the queued rows in one commit; returns how many (they stay queued if it
        fails). `before_write` runs first: the client writes the answers of those calls to
        its cache, so a row that says `ok` never outlives its cache entry."""
        with self._flush_lock:
            with self._lock:
                rows, self._rows = self._rows, []
            if self.before_write is not None:
                self.before_write()
            if not rows or self.wh is None:
                return len(rows)
            try:
                self.wh.append([self._row(*r) for r in rows], run_id=self.run_id or None)
            except BaseException:
                with self._lock:
                    self._rows[:0] = rows
                raise
            self.written += len(rows)
            return len(rows)


class Writer:
    """A daemon thread that calls `flush` every `every_s` seconds, or at once when `wanted`
    is set; `stop()` ends it (the owner flushes the rest itself). A failed flush is logged
    and tried again at the next turn (its rows stay queued)."""

    def __init__(self, flush, wanted: threading.Event, every_s: float, name: str = "llm-writer"):
        self.flush, self.wanted, self.every_s = flush, wanted, every_s
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping:
            self.wanted.wait(self.every_s)
            self.wanted.clear()
            if self._stopping:
                return
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - kept queued; the close() flush raises
                log.warning("llm_calls: could not write rows yet (%s); retrying", exc)

    def stop(self) -> None:
        self._stopping = True
        self.wanted.set()
        self._thread.join(30)
