"""The WARC import: archived responses into the crawl's pages and fetch rows, beside the live
crawl (a step of its own, as datatrove keeps its WARC reader).

A thread reads the records (streaming, warc.py) a few at a time; the crawl's workers extract,
decide and store them exactly as fetched pages, in the same batches. Links are not followed
(an archive is its own scope). Redirects wait until the end: their target is a page the
archive holds, or not.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Generator, Iterable, Iterator, Protocol

from datagen.crawl.config import CrawlConfig
from datagen.crawl.fetch import Fetched
from datagen.crawl.warc import Redirect, read_warc

log = logging.getLogger(__name__)


class PageSink(Protocol):
    """What the import needs of the crawl (datagen.crawl.crawler.Crawler)."""

    cfg: CrawlConfig
    seen: set[str]  # final URLs stored or queued so far

    def full(self) -> bool: ...

    async def flush(self, force: bool = False) -> None: ...

    async def handle(self, res: Fetched, depth: int, follow: bool = True) -> None: ...

    def record(self, res: Fetched, depth: int, stored: bool = False) -> None: ...


async def import_warcs(sink: PageSink, paths: Iterable[str]) -> None:
    """Every record of the WARC files at `paths` through `sink`, `global_concurrency` at a
    time; the queue between the reading thread and the workers is bounded, so memory does
    not grow with the archive."""
    n = sink.cfg.global_concurrency
    queue: asyncio.Queue = asyncio.Queue(maxsize=n)
    redirects: list[Redirect] = []
    records = _archived(paths, sink.cfg)
    reading: list[asyncio.Future] = []  # the read in flight (a thread; not cancellable)
    tasks = [asyncio.create_task(_read(sink, records, queue, reading, n))]
    tasks += [asyncio.create_task(_consume(sink, queue, redirects)) for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
    finally:  # normally all done; after an error, stop the reader and the rest
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, *reading, return_exceptions=True)
        records.close()  # closes the file being read
    for r in redirects:  # as a live crawl says: the target is a page we have, or not
        if r.target in sink.seen:  # only 200 records enter `seen`: the final status
            r.res.status = 200
            sink.record(r.res.marked("skipped", f"duplicate_url: {r.target}"), 0)
        else:
            sink.record(r.res.marked("failed", f"redirect_not_archived: {r.target}"), 0)


async def _read(sink: PageSink, records: Iterator, queue: asyncio.Queue,
                reading: list[asyncio.Future], n: int) -> None:
    """Hand the records to the workers n at a time, then one end mark per worker."""
    loop = asyncio.get_running_loop()
    while not sink.full():
        reading[:] = [loop.run_in_executor(None, _take, records, n)]
        items = await reading[0]
        if not items:
            break
        for item in items:
            await queue.put(item)
    for _ in range(n):
        await queue.put(None)


async def _consume(sink: PageSink, queue: asyncio.Queue, redirects: list[Redirect]) -> None:
    while (item := await queue.get()) is not None:
        if isinstance(item, Redirect):
            redirects.append(item)
        elif not sink.full():
            await _visit_archived(sink, item)
        await sink.flush()


async def _visit_archived(sink: PageSink, res: Fetched) -> None:
    try:
        if res.outcome != "ok":
            sink.record(res, 0)
        elif res.url in sink.seen:
            sink.record(res.marked("skipped", f"duplicate_url: {res.url}"), 0)
        else:
            await sink.handle(res, 0, follow=False)
    except Exception as exc:  # one bad record must not end the import: record it
        log.exception("crawler error on archived %s", res.url)
        sink.record(res.marked("failed", f"crawler_error: {type(exc).__name__}: {exc}"), 0)


def _archived(paths: Iterable[str],
              cfg: CrawlConfig) -> Generator[Fetched | Redirect, None, None]:
    for path in paths:
        yield from read_warc(path, cfg)


def _take(records: Iterator, n: int) -> list:
    """The next n records (fewer at the end): one hand-off from the reading thread per n."""
    return list(itertools.islice(records, n))
