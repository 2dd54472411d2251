"""The interruptible generation loop shared by every InferenceEngine.

A request is served as a series of *segments*. Each segment generates under one policy
version; a weight update pauses the engine, which aborts the segments in flight. Their
tokens so far are kept, tagged with the version that produced them, and once the engine
resumes the request is resubmitted as prompt + tokens so far with the remaining budget.
Backends implement only `_run_segment`, `_abort_all` and `_load_weights`.

All engine state lives on the engine's own event loop in a background thread: callers may
use any loop (or several, one per `asyncio.run`), and the backend's async machinery
(vLLM's output handler, the HTTP client) stays bound to one loop for the engine's life.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field

from training.api import GenerationRequest, GenerationResult

logger = logging.getLogger(__name__)


@dataclass
class Segment:
    """Output of one backend call. `finish_reason` is None when the call was interrupted."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str | None = None
    versions: list[int] | None = None  # per token, where the backend itself stamps them


class InterruptibleEngine:
    """Implements `training.api.InferenceEngine` on top of a segment-level backend."""

    max_model_len: int | None = None   # a backend that bounds its sequences sets it (vLLM)

    def __init__(self, version: int = 0):
        self._version = version
        self._gate: asyncio.Event | None = None  # set = running; created lazily in the loop
        self._paused_by_user = False
        self._update_lock: asyncio.Lock | None = None
        self._n_pauses = 0
        self.tokens_generated = 0  # backends count tokens as they arrive (progress, throughput)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"{type(self).__name__}-loop")
        self._thread.start()

    def run_sync(self, coro):
        """Run a coroutine on the engine's loop from synchronous code; returns its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def _on_loop(self, coro):
        if asyncio.get_running_loop() is self._loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """Synchronous batch generation (benchmarks, scripts): all requests run concurrently."""

        async def _all():
            return await asyncio.gather(*(self._agenerate(r) for r in requests))

        return self.run_sync(_all())

    @property
    def version(self) -> int:
        return self._version

    def _events(self) -> tuple[asyncio.Event, asyncio.Lock]:
        # Created on first use so the engine can be constructed outside an event loop.
        if self._gate is None:
            self._gate = asyncio.Event()
            self._gate.set()
            self._update_lock = asyncio.Lock()
        return self._gate, self._update_lock

    async def agenerate(self, request: GenerationRequest) -> GenerationResult:
        return await self._on_loop(self._agenerate(request))

    async def pause(self) -> None:
        """Stop generating: in-flight segments are aborted and wait for `resume`."""
        await self._on_loop(self._user_pause())

    async def resume(self) -> None:
        await self._on_loop(self._user_resume())

    async def update_weights(self, version: int, path: str) -> None:
        """Load the checkpoint at `path` as policy `version`, interrupting generation."""
        await self._on_loop(self._update_weights(version, str(path)))

    async def _agenerate(self, request: GenerationRequest) -> GenerationResult:
        gate, _ = self._events()
        ids: list[int] = []
        logprobs: list[float] = []
        versions: list[int] = []
        interruptions = 0
        finish = "length"
        while len(ids) < request.max_new_tokens:
            await gate.wait()
            version, pauses = self._version, self._n_pauses
            seg = await self._run_segment(
                list(request.prompt_ids) + ids, request.max_new_tokens - len(ids),
                request, interruptions)
            ids += seg.ids
            logprobs += seg.logprobs
            versions += seg.versions if seg.versions is not None else [version] * len(seg.ids)
            if seg.finish_reason is not None:
                finish = seg.finish_reason
                break
            if self._n_pauses == pauses:  # no pause came: the backend lost the request
                raise RuntimeError("inference backend ended a generation without a finish "
                                   f"reason after {len(ids)} tokens")
            interruptions += 1
        return GenerationResult(
            prompt_ids=list(request.prompt_ids), output_ids=ids, output_logprobs=logprobs,
            output_versions=versions, finish_reason=finish, n_interruptions=interruptions)

    async def _user_pause(self) -> None:
        self._paused_by_user = True
        await self._pause()

    async def _user_resume(self) -> None:
        self._paused_by_user = False
        await self._resume()

    async def _update_weights(self, version: int, path: str) -> None:
        self._check_checkpoint(path)  # before pausing: a wrong path must not stall rollouts
        await self._update_with(version, self._load_weights, path)

    def _check_checkpoint(self, path: str) -> None:
        from pathlib import Path

        if not any(Path(path).glob("*.safetensors")):
            raise FileNotFoundError(f"no *.safetensors in {path}: export the weights there first")

    async def _update_with(self, version: int, load, path: str = "") -> None:
        """Pause (aborting segments in flight), `await load(path)`, bump the version, resume.

        If `load` raises, the engine stays paused at the old version: its weights may be
        half replaced, so generating on would be wrong; the caller retries or closes."""
        _, lock = self._events()
        async with lock:
            was_paused = self._paused_by_user
            await self._pause()
            await load(path)
            self._version = version
            if not was_paused:
                await self._resume()
        logger.info("inference engine now at policy version %d", version)

    async def _pause(self) -> None:
        gate, _ = self._events()
        gate.clear()
        self._n_pauses += 1
        await self._abort_all()

    async def _resume(self) -> None:
        gate, _ = self._events()
        await self._backend_resume()
        gate.set()

    # --- backend hooks -------------------------------------------------------------
    async def _run_segment(self, token_ids: list[int], max_new_tokens: int,
                           request: GenerationRequest, attempt: int) -> Segment:
        raise NotImplementedError

    async def _abort_all(self) -> None:
        """Make every running `_run_segment` return soon with what it has."""
        raise NotImplementedError

    async def _backend_resume(self) -> None:
        """Undo whatever `_abort_all` froze in the backend (no-op by default)."""

    async def _load_weights(self, path: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the engine's loop thread; subclasses release their backend first."""
        if self._loop.is_running():
            self._cancel_tasks()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def _cancel_tasks(self) -> None:
        """Cancel what still runs on the engine's loop (generations, backend handlers)."""
        async def cancel_all():
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(cancel_all(), self._loop).result(timeout=30)


def segment_seed(request: GenerationRequest, attempt: int) -> int | None:
    """A resubmitted segment must not replay the random stream of the first one."""
    return None if request.seed is None else request.seed + 7919 * attempt
