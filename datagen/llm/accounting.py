"""Every call becomes an `llm_calls` row; totals go into the stage's summary.

Rows are buffered and written in one commit when the client is closed (or on an explicit
`flush()`), through the log's own warehouse connection: the stage keeps using its connection
from its own thread (a DuckDB connection must not be used from two threads at once) and the
composer calls the client from several threads. Not during the run: two connections of one
process committing to a SQLite catalog at once starved each other's retries here. So a
killed run keeps its stored rows but loses the accounting of its calls.
"""

from __future__ import annotations

import collections
import datetime as dt
import threading
from dataclasses import dataclass, field
from typing import Any

from datagen.llm.types import ChatRequest, ChatResult


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


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

    def __init__(self, wh=None, run_id: str = "", endpoint: str = "", model: str = ""):
        self.wh, self.run_id, self.endpoint, self.model = wh, run_id, endpoint, model
        self.totals = Totals()
        self._rows: list[Any] = []
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._writer = None  # our own connection to `wh`, opened at the first flush

    def record(self, req: ChatRequest, result: ChatResult) -> None:
        """Count the call and queue its row (thread-safe; called from the event loop)."""
        with self._lock:
            self.totals.add(result)
            if self.wh is not None:
                self._rows.append((req, result, utcnow()))

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
        """Write the queued rows in one commit; returns how many (rows stay queued if it fails)."""
        with self._flush_lock:
            with self._lock:
                rows, self._rows = self._rows, []
            if not rows or self.wh is None:
                return len(rows)
            try:
                if self._writer is None:
                    self._writer = self._open_writer()
                self._writer.append([self._row(*r) for r in rows], run_id=self.run_id or None)
            except BaseException:
                with self._lock:
                    self._rows[:0] = rows
                raise
            return len(rows)

    def _open_writer(self, tries: int = 30):
        """Our own connection to the stage's warehouse. Attaching can meet a SQLite catalog
        locked by another connection's commit: retry, as the warehouse's commits do."""
        import random
        import time

        import warehouse
        for attempt in range(tries):
            try:
                return warehouse.open(self.wh.root, create=False)
            except warehouse.WarehouseError as exc:
                if "locked" not in str(exc) or attempt == tries - 1:
                    raise
                time.sleep(0.05 + random.random() * 0.2)

    def close(self) -> None:
        """Write the rows, close our connection."""
        self.flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
