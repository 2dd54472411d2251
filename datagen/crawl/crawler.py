"""The live crawl: a frontier, N workers, per-host politeness, batched warehouse commits.
Web archives among the seeds are read by warc_import.py into the same workers and batches.

Every URL a worker takes becomes exactly one FetchRecord (stored, skipped or failed, with
a reason); every stored page a PageRecord. Both go to the warehouse together, one commit
per batch, so a crash loses at most the batch in flight and a re-run resumes from what
`pages` holds (conditional requests; unchanged pages are not stored again).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass
from typing import Callable

from warehouse import FetchRecord, Link, PageRecord
from warehouse.schema import utcnow

from datagen.crawl import extract as ex
from datagen.crawl.config import CrawlConfig
from datagen.crawl.fetch import Fetched, Fetcher
from datagen.crawl.robots import RobotsCache
from datagen.crawl.seeds import Seeds, classify, expand_sitemaps
from datagen.crawl.summary import CrawlSummary, reason_code
from datagen.crawl.urls import AddressGuard, Resolver, Scope, host_key
from datagen.crawl.warc import WarcOut
from datagen.crawl.warc_import import import_warcs
from datagen.crawl.workers import ExtractPool

log = logging.getLogger(__name__)

# A batch also commits early when its pages hold this much text and HTML (memory stays
# bounded whatever the pages' size), or when the last commit is this long ago (a slow,
# polite web crawl loses at most this much of its work to a crash).
BATCH_BYTES = 64 * 1024 * 1024
COMMIT_EVERY_S = 30.0


@dataclass
class _Known:
    """What `pages` already holds for a URL (for conditional re-crawls and resume)."""
    etag: str | None
    last_modified: str | None
    content_hash: str
    links: tuple


class _Host:
    def __init__(self, concurrency: int, delay: float):
        self.slots = asyncio.Semaphore(concurrency)
        self.delay = delay
        self.next_start = 0.0
        self.lock = asyncio.Lock()

    async def pace(self) -> None:
        """Space request starts on this host at least `delay` apart."""
        async with self.lock:
            now = time.monotonic()
            wait = self.next_start - now
            self.next_start = max(now, self.next_start) + self.delay
        if wait > 0:
            await asyncio.sleep(wait)


class Crawler:
    """resolver and network are seams for tests: the DNS answers the address guard checks
    and pins, and the socket layer under the pins."""

    def __init__(self, cfg: CrawlConfig, wh, run_id: str = "",
                 on_progress: Callable[[CrawlSummary], None] | None = None, *,
                 resolver: Resolver | None = None, network=None):
        self.cfg, self.wh, self.run_id, self.on_progress = cfg, wh, run_id, on_progress
        self._resolver, self._network = resolver, network
        self.summary = CrawlSummary(run_id=run_id)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.seen: set[str] = set()
        self.hosts: dict[str, _Host] = {}
        self.hash_owner: dict[str, str] = {}
        self.known: dict[str, _Known] = {}
        self.pending_pages: list[PageRecord] = []
        self.pending_fetches: list[FetchRecord] = []
        self._flush_lock = asyncio.Lock()
        self.pending_bytes = 0  # text and HTML of pending_pages
        self._last_commit = time.monotonic()
        self._pool: ExtractPool | None = None
        self.fetcher: Fetcher | None = None
        self.warc_out: WarcOut | None = None

    # ---- setup ------------------------------------------------------------------------

    def _scope(self, seeds: Seeds) -> Scope:
        return Scope(hosts=seeds.hosts,
                     prefixes=tuple(self.cfg.url_prefixes) + tuple(seeds.folders),
                     include=tuple(re.compile(p) for p in self.cfg.include),
                     exclude=tuple(re.compile(p) for p in self.cfg.exclude),
                     max_depth=self.cfg.max_depth, same_host=self.cfg.same_host)

    def _load_known(self) -> None:
        if self.wh is None or not (self.cfg.recrawl_conditional or self.cfg.resume):
            return
        rows = self.wh.sql(
            "SELECT url, arg_max(etag, created_at) AS etag, "
            "arg_max(last_modified, created_at) AS last_modified, "
            "arg_max(content_hash, created_at) AS content_hash, "
            "arg_max(links, created_at) AS links FROM pages GROUP BY url").to_pylist()
        for r in rows:
            links = tuple((l["url"], l["anchor"]) for l in (r["links"] or []))
            self.known[r["url"]] = _Known(r["etag"], r["last_modified"], r["content_hash"], links)
            self.hash_owner.setdefault(r["content_hash"], r["url"])

    async def run(self) -> CrawlSummary:
        started = time.monotonic()
        if self.cfg.extract_processes > 0:  # forked before any thread of ours exists
            procs = self.cfg.extract_processes  # a few pages per hand-off, both kept busy
            self._pool = ExtractPool(procs, self.cfg.global_concurrency // (2 * procs))
        # what `pages` holds loads in a thread while the rest is set up (seeds, client)
        known = asyncio.ensure_future(asyncio.to_thread(self._load_known))
        try:
            seeds = self._setup()
            await known
            if seeds.warcs:
                await import_warcs(self, seeds.warcs)
            seed_urls = seeds.urls + await self._sitemap_urls(seeds)
            for url in seed_urls:
                self._enqueue(url, 0, check_scope=False)
            await self._run_workers()
            await self._last_flush()
        finally:
            await asyncio.gather(known, return_exceptions=True)
            if self.fetcher is not None:
                await self.fetcher.aclose()
            if self.warc_out is not None:
                self.warc_out.close()
            if self._pool is not None:
                self._pool.shutdown()
            self.summary.elapsed_s = time.monotonic() - started
        return self.summary

    def _setup(self) -> Seeds:
        seeds = classify(self.cfg.seeds)
        self.scope = self._scope(seeds)
        self.guard = AddressGuard(self.cfg.allow_private, self._resolver)
        self.warc_out = WarcOut(self.cfg.warc_out, self.run_id, self.cfg.warc_max_bytes) \
            if self.cfg.warc_out else None
        self.fetcher = Fetcher(self.cfg, guard=self.guard, network=self._network,
                               warc=self.warc_out)
        self.robots = RobotsCache(self.fetcher, enabled=self.cfg.respect_robots,
                                  agent=_robots_agent(self.cfg.user_agent))
        return seeds

    async def _last_flush(self) -> None:
        """The last batch commits while the extraction workers exit: nothing is left to extract."""
        if self._pool is None:
            await self.flush(force=True)
            return
        await asyncio.gather(asyncio.to_thread(self._pool.shutdown), self.flush(force=True))

    async def _run_workers(self) -> None:
        """Until the frontier is empty; a worker that dies (warehouse error) ends the crawl."""
        workers = [asyncio.create_task(self._worker()) for _ in range(self.cfg.global_concurrency)]
        joined = asyncio.create_task(self.queue.join())
        try:
            await asyncio.wait([joined, *workers], return_when=asyncio.FIRST_COMPLETED)
            for w in workers:
                if w.done() and not w.cancelled() and w.exception() is not None:
                    raise w.exception()
        finally:
            for t in (joined, *workers):
                t.cancel()
            await asyncio.gather(joined, *workers, return_exceptions=True)

    async def _sitemap_urls(self, seeds: Seeds) -> list[str]:
        for sm in seeds.sitemaps:
            refusal = await self.guard.refusal(sm)
            if refusal:
                raise ValueError(f"sitemap {sm}: {refusal} (pass --allow-private for local sites)")
        return await expand_sitemaps(seeds, self.fetcher) if seeds.sitemaps else []

    def _enqueue(self, url: str, depth: int, check_scope: bool = True) -> None:
        if url in self.seen or (check_scope and self.scope.refusal(url, depth)):
            return
        self.seen.add(url)
        self.summary.discovered += 1
        self.queue.put_nowait((url, depth))

    # ---- one URL ----------------------------------------------------------------------

    async def _worker(self) -> None:
        while True:
            url, depth = await self.queue.get()
            try:
                await self._visit_recorded(url, depth)
                # a full batch (pages, or fetch rows alone) is committed before the item
                # counts as done, so the frontier never looks empty while a commit runs; a
                # warehouse error ends the crawl (run() re-raises it)
                await self.flush()
            finally:
                self.queue.task_done()

    async def _visit_recorded(self, url: str, depth: int) -> None:
        try:
            if not self.full():
                await self._visit(url, depth)
        except Exception as exc:  # one bad page must not end the crawl: record it
            log.exception("crawler error on %s", url)
            self.record(Fetched(url, url, outcome="failed",
                                 reason=f"crawler_error: {type(exc).__name__}: {exc}"), depth)

    def full(self) -> bool:
        stored = self.summary.stored + self.summary.already_stored
        return self.cfg.max_pages is not None and stored >= self.cfg.max_pages

    async def _refusal(self, url: str) -> str | None:
        return await self.guard.refusal(url) or await self.robots.refusal(url)

    async def _redirect_check(self, url: str) -> str | None:
        out = self.scope.refusal(url)
        return f"out_of_scope ({out}): {url}" if out else await self._refusal(url)

    async def _visit(self, url: str, depth: int) -> None:
        if self.cfg.resume and url in self.known:  # stored by an earlier, interrupted crawl
            self.summary.already_stored += 1
            self._follow(self.known[url].links, depth)
            return
        if url.startswith("file:"):  # our own disk: no robots, no politeness, no host limit
            await self.handle(await self.fetcher.fetch(url), depth)
            return
        refusal = await self._refusal(url)
        if refusal:
            self.record(Fetched(url, url, outcome="skipped", reason=refusal), depth)
            return
        host = self._host(url)
        async with host.slots:
            await host.pace()
            res = await self.fetcher.fetch(url, self._conditional(url), self._redirect_check)
        await self.handle(res, depth)

    def _host(self, url: str) -> _Host:
        key = host_key(url)
        if key not in self.hosts:
            delay = max(self.cfg.per_host_delay_s, self.robots.crawl_delay(url))
            self.hosts[key] = _Host(self.cfg.per_host_concurrency, delay)
        return self.hosts[key]

    def _conditional(self, url: str) -> dict[str, str]:
        k = self.known.get(url)
        headers = {}
        if k and k.etag:
            headers["If-None-Match"] = k.etag
        if k and k.last_modified:
            headers["If-Modified-Since"] = k.last_modified
        return headers

    async def handle(self, res: Fetched, depth: int, follow: bool = True) -> None:
        if res.outcome == "not_modified":
            self._follow(self.known[res.url].links if res.url in self.known else (), depth)
            res.outcome = "skipped"
        if res.outcome != "ok":
            self.record(res, depth)
            return
        if res.final_url != res.url and res.final_url in self.seen:
            self.record(res.marked("skipped", f"duplicate_url: {res.final_url}"), depth)
            return
        self.seen.add(res.final_url)
        page = await self._extract(res)
        if isinstance(page, str):
            self.record(res.marked("failed", page), depth)
            return
        if follow and not page.nofollow:
            self._follow(page.links, depth)
        self._decide_and_store(res, page, depth)

    async def _extract(self, res: Fetched) -> ex.Extracted | str:
        """Parse off the event loop: in worker processes when configured (real parallelism
        on several cores), else in the loop's thread (no GIL hand-offs, lowest overhead)."""
        job = (res.body or b"", res.content_type, res.headers.get("content-type", ""),
               res.headers.get("x-robots-tag", ""), res.final_url, self.cfg.include_comments,
               self.cfg.favor_recall, self.cfg.store_html)
        if self._pool is None:
            return ex.process_body(*job)
        return await self._pool.extract(job)

    def _follow(self, links, depth: int) -> None:
        if depth + 1 > self.cfg.max_depth:
            return
        for url, _anchor in links:
            self._enqueue(url, depth + 1)

    def _decide_and_store(self, res: Fetched, page: ex.Extracted, depth: int) -> None:
        url = res.final_url  # the page's own address; fetches keeps the URL as requested
        if page.canonical and page.canonical not in (res.url, res.final_url) \
                and not self.scope.refusal(page.canonical):
            if page.canonical in self.known or page.canonical in self.seen:
                self.record(res.marked("skipped", f"duplicate_canonical: {page.canonical}"), depth)
                return
            self.seen.add(page.canonical)
            url = page.canonical
        reason = self._skip_reason(url, page)
        if reason:
            self.record(res.marked("skipped", reason), depth)
            return
        if self.full():
            self.record(res.marked("skipped", "max_pages"), depth)
            return
        self.hash_owner[page.content_hash] = url
        self.pending_bytes += len(page.text) + len(page.html or "")
        self.pending_pages.append(PageRecord(
            url=url, title=page.title, text=page.text, content_hash=page.content_hash,
            fetched_at=utcnow(), final_url=res.final_url,
            links=tuple(Link(u, a) for u, a in page.links), license=page.license,
            language=page.language, etag=res.headers.get("etag"),
            last_modified=res.headers.get("last-modified"), html=page.html, run_id=self.run_id))
        self.record(res, depth, stored=True)

    def _skip_reason(self, url: str, page: ex.Extracted) -> str:
        if page.noindex:
            return "noindex"
        if not page.text.strip():
            return "no_text"
        owner = self.hash_owner.get(page.content_hash)
        if owner == url:
            return "unchanged"
        if owner is not None:
            return f"duplicate_content: {owner}"
        return ""

    # ---- bookkeeping ------------------------------------------------------------------

    def record(self, res: Fetched, depth: int, stored: bool = False) -> None:
        outcome = "stored" if stored else ("skipped" if res.outcome == "skipped" else "failed")
        reason = "" if stored else (res.reason or "unknown")
        self.pending_fetches.append(FetchRecord(
            url=res.url, final_url=res.final_url, http_status=res.status, outcome=outcome,
            reason=reason, bytes=res.raw_bytes, elapsed_ms=res.elapsed_ms, fetched_at=utcnow(),
            content_type=res.content_type, depth=depth, run_id=self.run_id))
        s = self.summary
        setattr(s, outcome, getattr(s, outcome) + 1)
        s.by_reason[(outcome, reason_code(reason))] += 1
        s.bytes += res.raw_bytes
        if self.on_progress:
            self.on_progress(s)

    def _due(self, force: bool) -> bool:
        pending = bool(self.pending_pages or self.pending_fetches)
        return self.wh is not None and pending and (
            force or len(self.pending_pages) >= self.cfg.batch_size
            or len(self.pending_fetches) >= 4 * self.cfg.batch_size
            or self.pending_bytes >= BATCH_BYTES
            or time.monotonic() - self._last_commit >= COMMIT_EVERY_S)

    async def flush(self, force: bool = False) -> None:
        """Commit the pending rows when a batch is due. Asked again once the lock is held:
        a worker that waited for the commit before it finds the rows it saw committed."""
        if not self._due(force):
            return
        async with self._flush_lock:
            if not self._due(force):
                return
            pages, fetches = self.pending_pages, self.pending_fetches
            self.pending_pages, self.pending_fetches, self.pending_bytes = [], [], 0
            self._last_commit = time.monotonic()
            await asyncio.to_thread(self._commit, pages, fetches)

    def _commit(self, pages: list[PageRecord], fetches: list[FetchRecord]) -> None:
        with self.wh.transaction() as tx:  # pages and their fetch rows land together
            tx.append(pages, PageRecord, run_id=self.run_id or None)
            tx.append(fetches, FetchRecord, run_id=self.run_id or None)


def _robots_agent(user_agent: str) -> str:
    return user_agent.split("/", 1)[0].strip() or user_agent


def run_crawl(cfg: CrawlConfig, wh, on_progress: Callable[[CrawlSummary], None] | None = None,
              *, parent_run_id: str = "", network=None) -> CrawlSummary:
    """Crawl into the warehouse as one `crawl` run (lineage + summary in `runs`; a build's
    crawl names the build as its parent). `network`: the socket layer under the address
    pins (the demo maps its stable URLs to the port it serves on)."""
    with wh.run("crawl", cfg.model_dump(), parent_run_id=parent_run_id) as run:
        summary = asyncio.run(Crawler(cfg, wh, run.run_id, on_progress, network=network).run())
        run.summary = summary.as_dict()
    return summary
