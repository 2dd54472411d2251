"""Extraction in worker processes, handed over in small batches.

One page per hand-off costs the crawler's own process a future, a pickled call, a pipe
write, a result read and a wake-up of the event loop, about as much as 1/20 of extracting
a small page: on a folder or a WARC, where nothing waits on the network, that is CPU taken
from the workers. `ExtractPool` gathers the pages the crawl's workers submit in one turn of
the event loop and sends them as one call; each page still gets its own result (or its own
error), so what is stored does not depend on how pages were grouped.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import multiprocessing
import pickle
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from datagen.crawl import extract as ex

MAX_BATCH = 8  # pages per hand-off at most: enough to amortise it, small enough to keep both workers fed
MAX_RESTARTS = 8  # dead workers a run survives; then each page still waiting fails with it


def start_pool(n: int, fork: bool = True) -> ProcessPoolExecutor:
    """Extraction workers. Forked (~30 ms) rather than spawned or forked from a fork server
    (~3 s of re-imports on a busy 2-core machine): the children only run `process_body`, and
    the pool is started before the crawler starts threads of its own. The parent's objects are
    frozen out of the children's garbage collector: a child once segfaulted collecting lxml
    objects it inherited (in the suite, on a process that had crawled before)."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if fork and "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(n, mp_context=ctx)
    gc.freeze()
    try:
        pool.submit(len, b"")  # fork the workers now, before any thread of ours exists
    finally:
        gc.unfreeze()
    return pool


def extract_many(jobs: list[tuple]) -> list[ex.Extracted | str | BaseException]:
    """`process_body` on each job, in a worker. A job that raises returns its exception (so
    one bad page fails alone, as it did when pages travelled one by one); the content hash
    is computed here, off the crawler's process."""
    out: list[ex.Extracted | str | BaseException] = []
    for job in jobs:
        try:
            page = ex.process_body(*job)
            if not isinstance(page, str):
                page.content_hash  # noqa: B018 - cached on the object, pickled with it
            out.append(page)
        except Exception as exc:
            out.append(_picklable(exc))
    return out


def _picklable(exc: Exception) -> BaseException:
    """The exception itself when it survives pickling, else one that names it the same way."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


class ExtractPool:
    """`extract(job)` -> the page; jobs submitted in the same turn of the event loop travel
    together (at most `batch` per hand-off).

    A worker that dies (a segfault in a parser, the OOM killer) breaks the whole pool, and
    every batch in it fails. The pool is then started again (spawned: the crawler has threads
    by now) and the failed batches' pages are probed: sent one at a time, each alone in the
    pool (new batches wait meanwhile), so a page that kills its worker again is known for sure
    and fails alone with `worker_died`, and the others are extracted. Past `MAX_RESTARTS` dead
    pools, pages fail with the pool's error as they come (a systematic failure)."""

    def __init__(self, processes: int, batch: int):
        self.processes = processes
        self.pool = start_pool(processes)
        self.restarts = 0
        self.batch = max(1, min(batch, MAX_BATCH))
        self._jobs: list[tuple] = []
        self._waiting: list[asyncio.Future] = []
        self._send_scheduled = False
        self._suspects: deque[tuple[tuple, asyncio.Future]] = deque()
        self._held: list[tuple[list[tuple], list[asyncio.Future]]] = []
        self._probing = False

    def extract(self, job: tuple) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._jobs.append(job)
        self._waiting.append(fut)
        if len(self._jobs) >= self.batch:
            self._send()
        elif not self._send_scheduled:  # after the other workers' turns of this iteration
            self._send_scheduled = True
            loop.call_soon(self._send)
        return fut

    def _send(self) -> None:
        self._send_scheduled = False
        if not self._jobs:
            return
        batch = (self._jobs, self._waiting)
        self._jobs, self._waiting = [], []
        if self._probing:
            self._held.append(batch)
        else:
            self._submit(*batch, probe=False)

    def _submit(self, jobs: list[tuple], waiting: list[asyncio.Future], probe: bool) -> None:
        pool = self.pool
        try:
            done = pool.submit(extract_many, jobs)
        except BrokenProcessPool as exc:
            self._crashed(pool, jobs, waiting, probe, exc)
            return
        except Exception as exc:  # a shut-down pool: each page fails with it
            _settle_all(waiting, exc)
            if probe:
                self._probe_next()
            return
        then = functools.partial(self._finished, pool, jobs, waiting, probe)
        done.add_done_callback(functools.partial(_wake, asyncio.get_running_loop(), then))

    def _finished(self, pool: ProcessPoolExecutor, jobs: list[tuple],
                  waiting: list[asyncio.Future], probe: bool, done: Future) -> None:
        """In the loop's thread: hand out the batch's results, or handle its pool's crash."""
        exc = None if done.cancelled() else done.exception()
        if isinstance(exc, BrokenProcessPool):
            self._crashed(pool, jobs, waiting, probe, exc)
            return
        _settle(waiting, done)
        if probe:
            self._probe_next()

    def _crashed(self, pool: ProcessPoolExecutor, jobs: list[tuple],
                 waiting: list[asyncio.Future], probe: bool, exc: BaseException) -> None:
        """Restart the pool a dead worker broke (once per broken pool) and probe the pages
        that were in it; a probed page that broke it is the one that kills workers."""
        if pool is self.pool:
            if self.restarts >= MAX_RESTARTS:
                _settle_all(waiting, exc)
                if probe:
                    self._probe_next()  # the other suspects and held batches fail likewise
                return
            self.restarts += 1
            pool.shutdown(wait=False, cancel_futures=True)
            self.pool = start_pool(self.processes, fork=False)
        if probe:
            _settle_all(waiting, RuntimeError("worker_died: the extraction worker died on "
                                              "this page"))
            self._probe_next()
            return
        self._suspects.extend((j, f) for j, f in zip(jobs, waiting) if not f.done())
        if not self._probing:
            self._probe_next()

    def _probe_next(self) -> None:
        """Send the next suspect page alone; with none left, the batches held meanwhile."""
        self._probing = bool(self._suspects)
        if self._probing:
            job, fut = self._suspects.popleft()
            self._submit([job], [fut], probe=True)
            return
        held, self._held = self._held, []
        for batch in held:
            self._submit(*batch, probe=False)

    def shutdown(self) -> None:
        """Waits for the workers to exit (their CPU time then counts as the crawl's). Safe
        from any thread and twice; a batch not yet sent fails when its send finds the pool
        shut down."""
        self.pool.shutdown(wait=True, cancel_futures=True)


def _wake(loop: asyncio.AbstractEventLoop, then, done: Future) -> None:
    """From the pool's thread: finish the batch in the loop's thread (if it still runs)."""
    try:
        loop.call_soon_threadsafe(then, done)
    except RuntimeError:  # the loop has closed: nobody waits any more
        pass


def _settle(waiting: list[asyncio.Future], done: Future) -> None:
    """Hand each waiting page its own result (in the loop's thread)."""
    if done.cancelled():
        for fut in waiting:
            fut.cancel()
        return
    exc = done.exception()
    if exc is not None:
        _settle_all(waiting, exc)
        return
    for fut, result in zip(waiting, done.result()):
        if fut.done():  # its worker was cancelled meanwhile
            continue
        if isinstance(result, BaseException):
            fut.set_exception(result)
        else:
            fut.set_result(result)


def _settle_all(waiting: list[asyncio.Future], exc: BaseException) -> None:
    for fut in waiting:
        if not fut.done():
            fut.set_exception(exc)

