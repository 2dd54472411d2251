"""Banding's attempts and their rewards computed ahead, in worker processes, for a solver whose
attempts can be replayed: attempt i of a question depends only on the question and i (the
embedded solver: search, extraction, a seeded draw), never on how many attempts were asked for.

The adaptive bander then runs as before on the stored attempts (the same prior refits, stops
and bands): each batch's `max_k` attempts per question and the reward of each distinct
response are computed by the workers while the bander commits the previous batch. A reward
that raised in a worker (a math-verify timeout) is not stored, so the bander judges it again
itself and the error propagates as it always did, when and only when that attempt is drawn.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

from difficulty.adaptive import BandItem
from difficulty.records import SolverAttempt, Solver, SolverQuestion

if TYPE_CHECKING:
    from difficulty.run import MemoJudge

log = logging.getLogger(__name__)
MAX_WORKERS = 2  # the development machine's cores; more buys nothing on it
CHUNK = 16       # questions per worker task: small enough to balance a batch over the workers
_WORKER: tuple[Solver, "MemoJudge", int] | None = None  # a forked worker's own (solver, judge, k)


@dataclass
class Chunk:
    """What a worker computed for some questions: every attempt up to `max_k`, and rewards."""

    attempts: dict[str, list[SolverAttempt]]
    rewards: dict[tuple, tuple[float, str]]


class ReplaySolver(Solver):
    """The wrapped solver's attempts served from what the workers computed; a question they
    did not see is asked of the solver itself."""

    def __init__(self, solver: Solver):
        self.solver = solver
        self.name = solver.name
        self.attempts: dict[str, list[SolverAttempt]] = {}

    @property
    def invocation(self) -> str:
        return self.solver.invocation

    def solve(self, questions: Sequence[SolverQuestion], k: int) -> list[list[SolverAttempt]]:
        missing = [i for i, q in enumerate(questions) if not self._has(q, k)]
        fresh = dict(zip(missing, self.solver.solve([questions[i] for i in missing], k))) \
            if missing else {}
        return [fresh[i] if i in fresh else self._stored(q, k) for i, q in enumerate(questions)]

    def _has(self, q: SolverQuestion, k: int) -> bool:
        return len(self.attempts.get(q.question_id, ())) >= q.first_attempt + k

    def _stored(self, q: SolverQuestion, k: int) -> list[SolverAttempt]:
        return self.attempts[q.question_id][q.first_attempt:q.first_attempt + k]


def worker_count(n_items: int) -> int:
    """Processes worth forking for `n_items` questions: none for a handful, or inside a
    daemonic process (a Dask worker), which may not have children."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if n_items < 2 * CHUNK or mp.current_process().daemon or \
            "fork" not in mp.get_all_start_methods():
        return 0
    return max(0, min(MAX_WORKERS, cores or 1))


def _chunks(items: Sequence[BandItem]) -> list[list[BandItem]]:
    return [list(items[i:i + CHUNK]) for i in range(0, len(items), CHUNK)]


def compute(solver: Solver, judge: "MemoJudge", items: Sequence[BandItem], k: int) -> Chunk:
    """Every attempt of `items` up to `k` and the reward of each (the workers' task)."""
    attempts = solver.solve([it.question for it in items], k)
    before = set(judge.memo)
    for it, tries in zip(items, attempts):
        for a in tries:
            try:
                judge(a, it)
            except Exception:  # noqa: BLE001 - the bander meets it again, if drawn, and raises
                log.debug("reward of %s attempt %d left to the bander", a.question_id, a.index)
    rewards = {key: judge.memo[key] for key in judge.memo.keys() - before}
    return Chunk({it.question.question_id: a for it, a in zip(items, attempts)}, rewards)


def _adopt(solver: Solver, judge: "MemoJudge", k: int) -> None:
    """A forked worker keeps its inherited copies (no pickling: fork copies the memory), and
    dies of SIGTERM whatever the parent made of it (see `_forked_with_default_sigterm`)."""
    global _WORKER
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    _WORKER = (solver, judge, k)


@contextmanager
def _forked_with_default_sigterm() -> Iterator[None]:
    """Workers forked meanwhile start with SIGTERM at its default, unblocked: the pool's
    `terminate` SIGTERMs them and then waits. A Python-level handler (Prefect installs one
    for every flow run) runs only when the worker's main thread gets back to Python: a worker
    stuck in C (a lock some other thread of the parent held at fork) never dies of it, and
    one with a handler that returns never dies at all. Either way `terminate` waits forever:
    a CI build hung there for 15 minutes, after training tests had run threads in the same
    process. Only the main thread may set handlers; elsewhere `_adopt` alone resets them."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGTERM, handler)


def _task(items: list[BandItem]) -> Chunk:
    assert _WORKER is not None, "prefetch worker not initialised"
    return compute(*_WORKER[:2], items, _WORKER[2])


def batches_ahead(solver: Solver, judge: "MemoJudge", replay: ReplaySolver | None,
                  batches: Sequence[Sequence[BandItem]], k: int, workers: int) -> Iterator[int]:
    """Yield each batch's index once its attempts and rewards are in `replay` and `judge`;
    the next batch is computed meanwhile. `workers` 0: nothing ahead (no processes)."""
    if workers <= 0 or replay is None or not batches:  # the bander asks the solver and the judge as it goes
        yield from range(len(batches))
        return
    solver.warm()  # read the pages once, here, so no worker opens the warehouse
    with _forked_with_default_sigterm():  # the pool forks its workers as it starts
        pool = mp.get_context("fork").Pool(workers, initializer=_adopt, initargs=(solver, judge, k))
    with pool:
        pending = pool.map_async(_task, _chunks(batches[0]))
        for i in range(len(batches)):
            done = pending.get()
            if i + 1 < len(batches):
                pending = pool.map_async(_task, _chunks(batches[i + 1]))
            _merge(replay, judge, done)
            yield i


def _merge(replay: ReplaySolver, judge: "MemoJudge", chunks: Sequence[Chunk]) -> None:
    for chunk in chunks:
        replay.attempts.update(chunk.attempts)
        judge.memo.update(chunk.rewards)
