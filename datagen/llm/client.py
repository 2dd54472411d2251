"""`ChatClient`: the one model client for every OpenAI-compatible endpoint.

It owns an asyncio event loop on a background thread, so synchronous stages (the composer,
the judge from reward worker threads) and async code share one bounded pool of requests per
endpoint (uvloop's loop where it is installed: a third less CPU per request). A call:
cache lookup -> preflight (once) -> budget -> semaphore -> attempts with retries ->
per-sample parse/validate -> bounded repairs -> cache store -> an `llm_calls` row. Nothing
on that path touches the disk: a writer thread commits the rows and writes the cache files
in batches (accounting.py).
A failed call comes back as a failed `ChatResult` (it costs its item); only `LLMStop`
(dead endpoint, spent budget) is raised, because then the stage must stop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from datagen.llm import structured, transport
from datagen.llm.health import Health, Latencies, call_deadline
from datagen.llm.accounting import CallLog, Writer
from datagen.llm.cache import DiskCache, request_key
from datagen.llm.types import (
    BudgetExceeded, ChatRequest, ChatResult, CircuitOpen, EndpointConfig, LLMError, LLMStop,
    Sample,
)

log = logging.getLogger(__name__)


def resolve_api_key(env_name: str) -> str:
    """The key from the environment variable the user named; '' when none was named."""
    if not env_name:
        return ""
    key = os.environ.get(env_name, "")
    if not key:
        raise ValueError(f"environment variable {env_name} (named by --api-key-env) is not set")
    return key


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop when it is installed (less CPU per request), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class ChatClient:
    """Chat completions with n samples, retries, a circuit breaker, a budget, a disk cache
    and accounting. Use as a context manager, or call `close()` (it flushes the rows).
    `flush_s`/`flush_rows`: how often the `llm_calls` rows and cache files are written."""

    def __init__(self, endpoint: EndpointConfig, *, wh=None, run_id: str = "",
                 cache_dir: Path | str | None = None, flush_s: float = 2.0,
                 flush_rows: int = 1000):
        self.endpoint = endpoint
        self._headers = {"Content-Type": "application/json"}
        key = resolve_api_key(endpoint.api_key_env)
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        if cache_dir is None and wh is not None:
            cache_dir = Path(wh.root) / "cache" / "llm"
        self.cache = DiskCache(cache_dir) if endpoint.cache and cache_dir else None
        self.log = CallLog(wh, run_id, endpoint.base_url, endpoint.model, flush_rows=flush_rows,
                           before_write=self.cache.drain if self.cache else None)
        self._writer = (Writer(self.log.flush, self.log.wanted, flush_s)
                        if wh is not None or self.cache is not None else None)
        self.structured_mode = endpoint.structured  # "auto" settles on the first schema call
        self.health = Health(endpoint)
        self.latencies = Latencies(endpoint)
        self._sent = 0
        self._ready = False
        self._http = self._sem = self._ready_lock = None
        self._loop = new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="llm-client",
                                        daemon=True)
        self._thread.start()

    # ---- synchronous face ----------------------------------------------------------

    def chat(self, req: ChatRequest) -> ChatResult:
        """One call, from any thread."""
        [result] = self.chat_many([req])
        return result

    def chat_many(self, reqs: Sequence[ChatRequest]) -> list[ChatResult]:
        """Many calls at once (at most `max_concurrency` in flight); results in order."""
        future = asyncio.run_coroutine_threadsafe(self._gather(list(reqs)), self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def complete(self, messages: Sequence[dict[str, str]], **params: Any) -> ChatResult:
        """`chat` with plain arguments: for callers that must not import datagen (the judge
        receives the client through its context and calls this)."""
        return self.chat(ChatRequest(messages=tuple(messages), **params))

    async def achat(self, req: ChatRequest) -> ChatResult:
        """One call from any event loop (it runs on the client's loop)."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._call(req), self._loop))

    def totals(self) -> dict[str, Any]:
        return self.log.totals.as_dict()

    def flush(self) -> int:
        """Write the cache files and `llm_calls` rows of the calls so far; how many rows."""
        return self.log.flush()

    def close(self) -> None:
        """Close connections, stop the loop and the writer, write what is left."""
        if not self._loop.is_closed():
            if self._http is not None:
                asyncio.run_coroutine_threadsafe(self._http.close(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()
        if self._writer is not None:
            self._writer.stop()
        self.log.flush()

    def __enter__(self) -> "ChatClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- one call ------------------------------------------------------------------

    async def _gather(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        """All calls to the end: a stop (breaker, budget) makes the calls not yet sent fail
        fast, lets those in flight finish (their answers are cached), then is raised."""
        tasks = [asyncio.ensure_future(self._call(r)) for r in reqs]
        try:
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        except BaseException:  # cancelled from outside (Ctrl-C): stop everything
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        for out in outcomes:
            if isinstance(out, BaseException):
                raise out
        return list(outcomes)

    def _record_stopped(self, req: ChatRequest, exc: LLMStop) -> None:
        """The row of a call the stop cut short, with the attempts it had sent."""
        self.log.record(req, ChatResult(request_key(self.endpoint.model, req), "failed",
                                        error=f"stopped: {exc}", attempts=exc.attempts))

    async def _call(self, req: ChatRequest) -> ChatResult:
        key = request_key(self.endpoint.model, req)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.log.record(req, hit)
                return hit
        try:
            await self._ensure_ready()
            async with self._sem:
                self._charge_budget()
                result = await self._attempts(req, key)
        except LLMStop as exc:
            self._record_stopped(req, exc)
            raise
        if result.ok and self.cache is not None:
            self.cache.put(result)  # queued; the writer thread writes the file
        self.log.record(req, result)
        return result

    async def _attempts(self, req: ChatRequest, key: str) -> ChatResult:
        start = time.monotonic()
        messages = list(req.messages)
        choices, usage, attempts, error = await self._send(req, messages, start)
        attempts_total = attempts
        if error is not None:
            return self._result(req, key, start, attempts, usage, error=str(error))
        samples = [self._sample(c, req.schema) for c in choices]
        try:
            samples, extra_attempts, usage = await self._repair(req, messages, samples, start, usage)
        except LLMStop as exc:
            exc.attempts += attempts
            raise
        attempts_total += extra_attempts
        if not any(s.ok for s in samples):
            return self._result(req, key, start, attempts_total, usage, samples,
                                error=samples[0].error)
        return self._result(req, key, start, attempts_total, usage, samples)

    def _result(self, req: ChatRequest, key: str, start: float, attempts: int, usage: tuple[int, int],
                samples: Sequence[Sample] = (), error: str = "") -> ChatResult:
        return ChatResult(
            request_key=key, status="failed" if error else "ok", samples=tuple(samples),
            error=error, attempts=attempts, latency_ms=int((time.monotonic() - start) * 1000),
            prompt_tokens=usage[0], completion_tokens=usage[1],
            structured=("prompt" if self.structured_mode == "prompt" else "server")
            if req.schema is not None else "")

    async def _send(self, req: ChatRequest, messages: list[dict[str, str]], start: float,
                    n: int | None = None):
        """Attempts until one returns n usable choices, or the call gives up.
        Returns (choices, (prompt_tokens, completion_tokens), attempts, error or None)."""
        n = n or req.n
        attempts, ep, deadline = 0, self.endpoint, call_deadline(self.endpoint, req)
        while True:
            if self.health.tripped:
                raise self._stop(attempts)
            attempts += 1
            remaining = deadline - (time.monotonic() - start)
            body = self._body(req, messages, n)
            sent = time.monotonic()
            try:
                data = await transport.post_json(self._http, f"{ep.base_url}/chat/completions", body,
                                                 self._headers, min(self.latencies.timeout(req), remaining))
                choices, pt, ct = transport.parse_choices(data, n)
            except transport.SchemaRefused as exc:
                if ep.structured == "auto" and self.structured_mode != "prompt":
                    log.warning("%s refuses response_format json_schema (%s); falling back to "
                                "prompt + parse + validate", ep.base_url, exc.detail[:80])
                    self.structured_mode = "prompt"
                    continue
                return [], (0, 0), attempts, exc
            except LLMError as exc:
                self._note_failure(req, exc)
                # a timeout has waited already; anything else backs off (Retry-After honoured)
                delay = 0.0 if exc.code == "timeout" else self._backoff(attempts, exc.retry_after)
                if (not exc.retryable or attempts > ep.max_retries
                        or time.monotonic() + delay - start > deadline):
                    return [], (0, 0), attempts, exc
                log.debug("retrying %s in %.2fs after %s", req.purpose, delay, exc)
                await asyncio.sleep(delay)
                continue
            self.health.ok()
            self.latencies.ok(req, time.monotonic() - sent)
            return choices, (pt, ct), attempts, None

    def _body(self, req: ChatRequest, messages: list[dict[str, str]], n: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.endpoint.model, "messages": messages, "n": n,
            "temperature": req.temperature, "top_p": req.top_p, "max_tokens": req.max_tokens}
        if req.stop:
            body["stop"] = list(req.stop)
        if req.seed is not None and self.endpoint.send_seed:
            body["seed"] = req.seed
        if req.schema is not None:
            if self.structured_mode == "prompt":
                body["messages"] = structured.with_schema_prompt(messages, req.schema)
            else:
                body["response_format"] = structured.response_format(req.schema)
        return body

    @staticmethod
    def _sample(choice: Any, schema: dict[str, Any] | None) -> Sample:
        """One choice -> a Sample; truncation and empty content fail the sample alone."""
        if not isinstance(choice, dict):
            return Sample("", "", None, "invalid_body: a choice is not an object")
        text = ((choice.get("message") or {}).get("content") or "")
        finish = str(choice.get("finish_reason") or "")
        if finish == "length":
            return Sample(text, finish, None, "truncated: finish_reason=length")
        if not text.strip():
            return Sample(text, finish, None, "empty_content: the sample has no text")
        return structured.check_sample(Sample(text, finish), schema)

    async def _repair(self, req: ChatRequest, messages, samples: list[Sample], start: float,
                      usage: tuple[int, int]):
        """Re-ask (n=1) for each sample whose JSON was broken or off-schema, at most
        `max_repairs` times each. Returns (samples, extra attempts, usage)."""
        extra = 0
        if req.schema is None:
            return samples, extra, usage
        for _ in range(self.endpoint.max_repairs):
            todo = [i for i, s in enumerate(samples) if structured.needs_repair(s)]
            if not todo:
                break
            for i in todo:
                convo = structured.repair_messages(messages, samples[i], req.schema)
                try:
                    choices, (pt, ct), attempts, error = await self._send(req, convo, start, n=1)
                except LLMStop as exc:
                    exc.attempts += extra
                    raise
                extra += attempts
                usage = (usage[0] + pt, usage[1] + ct)
                if error is None:
                    fixed = self._sample(choices[0], req.schema)
                    samples[i] = fixed if fixed.ok else Sample(
                        fixed.text, fixed.finish_reason, fixed.data,
                        f"{fixed.error} (after a re-ask)")
        return samples, extra, usage

    # ---- guards --------------------------------------------------------------------

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After is honoured if longer."""
        ep = self.endpoint
        ceiling = min(ep.backoff_max_s, ep.backoff_s * 2 ** (attempt - 1))
        delay = ceiling / 2 + random.uniform(0, ceiling / 2)
        if retry_after is not None:  # longer than the call may last: the call gives up now
            delay = max(delay, retry_after)
        return delay

    def _note_failure(self, req: ChatRequest, exc: LLMError) -> None:
        self.health.failed(exc)
        if exc.code == "timeout":
            self.latencies.timed_out(req.purpose)

    def _raise_if_tripped(self) -> None:
        if self.health.tripped:
            raise self._stop(0)

    def _stop(self, attempts: int) -> CircuitOpen:
        """The breaker's stop, carrying the attempts its call had sent (for its row)."""
        exc = CircuitOpen(self.health.tripped)
        exc.attempts = attempts
        return exc

    def _charge_budget(self) -> None:
        ep, totals = self.endpoint, self.log.totals
        if ep.max_calls is not None and self._sent >= ep.max_calls:
            raise BudgetExceeded(f"LLM budget spent: {self._sent} calls sent (max_calls={ep.max_calls})")
        spent = totals.prompt_tokens + totals.completion_tokens
        if ep.max_tokens is not None and spent >= ep.max_tokens:
            raise BudgetExceeded(f"LLM budget spent: {spent} tokens used (max_tokens={ep.max_tokens})")
        self._sent += 1

    async def _ensure_ready(self) -> None:
        """Create the HTTP pool and run the preflight once, on the client's loop."""
        if self._ready:
            self._raise_if_tripped()
            return
        if self._ready_lock is None:
            self._ready_lock = asyncio.Lock()
        async with self._ready_lock:
            if not self._ready:
                await self._start()
                self._ready = True
        self._raise_if_tripped()

    async def _start(self) -> None:
        ep = self.endpoint
        self._sem = asyncio.Semaphore(ep.max_concurrency)
        self._http = transport.open_session(ep.base_url, ep.max_concurrency)
        if ep.preflight:
            await self._preflight()

    async def _preflight(self) -> None:
        """GET /v1/models: a dead endpoint or a wrong model name stops the stage at once."""
        ep = self.endpoint
        for attempt in range(1, 4):
            try:
                served = await transport.get_models(self._http, f"{ep.base_url}/models",
                                                    self._headers, min(ep.timeout_s or 30.0, 30.0))
                break
            except LLMError as exc:
                if not exc.retryable or attempt == 3:
                    self.health.tripped = (f"LLM endpoint {ep.base_url} is not usable: {exc} "
                                     "(preflight GET /v1/models); check --endpoint")
                    return
                await asyncio.sleep(self._backoff(attempt, exc.retry_after))
        if served and ep.model not in served:
            self.health.tripped = (f"LLM endpoint {ep.base_url} does not serve model {ep.model!r} "
                             f"(it serves: {', '.join(served[:5])}); check --model")
