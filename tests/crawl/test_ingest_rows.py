"""Folder and WARC ingestion: the rows do not depend on how extraction is handed out, and a
crash in the middle of a batch loses that batch whole; the re-run stores each page once.

Extraction in worker processes (pages handed over in batches) against extraction in the
crawler's own thread (one page at a time, no pool): the same `pages` and `fetches` rows,
every column but the clock's.
"""

from __future__ import annotations

import asyncio
import gzip
import io

import pytest

import warehouse
from datagen.crawl import CrawlConfig, Crawler
from datagen.crawl.workers import ExtractPool, extract_many
from tests.crawl.conftest import demo_world

pytestmark = pytest.mark.integration
CLOCK = ("fetched_at", "created_at", "elapsed_ms")  # the only columns allowed to differ


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """(folder, WARC file) of one small demo world; the WARC's pages gzip-encoded."""
    out, _ = demo_world(tmp_path_factory, 60, seed=11)
    warc = out.parent / f"{out.name}.warc.gz"
    _write_warc(out, warc)
    return {"folder": out, "warc": warc}


def _write_warc(site, path) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for f in sorted(site.rglob("*.html")):
            body = gzip.compress(f.read_bytes())
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                               ("Content-Encoding", "gzip"),
                                               ("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"http://site.example/{f.relative_to(site)}",
                                                "response", payload=io.BytesIO(body),
                                                http_headers=http))


def _rows(wh, table: str) -> list[dict]:
    cols = ", ".join(c for c in CLOCK if c in wh.sql(f"SELECT * FROM {table} LIMIT 0").column_names)
    return wh.sql(f"SELECT * EXCLUDE ({cols}) FROM {table} ORDER BY ALL").to_pylist()


def _ingest(src, root, **kw):
    wh = warehouse.open(root)
    try:
        summary = asyncio.run(Crawler(CrawlConfig(seeds=[str(src)], **kw), wh, run_id="r").run())
    except BaseException:
        wh.close()
        raise
    return wh, summary


@pytest.mark.parametrize("kind", ["folder", "warc"])
def test_pooled_and_inline_extraction_store_identical_rows(sources, tmp_path, kind):
    pooled, s_pooled = _ingest(sources[kind], tmp_path / "pooled", extract_processes=2)
    inline, s_inline = _ingest(sources[kind], tmp_path / "inline", extract_processes=0)
    assert s_pooled.stored > 50 and s_pooled.as_dict()["by_reason"] == s_inline.as_dict()["by_reason"]
    for table in ("pages", "fetches"):
        assert _rows(pooled, table) == _rows(inline, table), table
    # one fetch row per record or file: no record read twice
    urls = [r["url"] for r in _rows(pooled, "fetches")]
    assert len(urls) == len(set(urls))


class _Crash(RuntimeError):
    """Stands in for the process dying inside a commit."""


def _crash_on_commit(monkeypatch, n: int) -> None:
    """The n-th commit writes its pages, then dies before its fetch rows."""
    from warehouse.core import Transaction
    apply, calls = Transaction.apply, []

    def dying(self, con):
        calls.append(1)
        if len(calls) == n:
            name, table = self.batches[0]
            con.register("_half", table)
            con.execute(f"INSERT INTO lake.{name} BY NAME SELECT * FROM _half")
            raise _Crash("killed mid-commit")
        return apply(self, con)
    monkeypatch.setattr(Transaction, "apply", dying)


@pytest.mark.parametrize("kind", ["folder", "warc"])
def test_a_crash_mid_batch_loses_the_batch_and_the_rerun_stores_each_page_once(
        sources, tmp_path, monkeypatch, kind):
    ref, _ = _ingest(sources[kind], tmp_path / "ref", extract_processes=2)
    expected = _rows(ref, "pages")
    with monkeypatch.context() as m:
        _crash_on_commit(m, 3)
        with pytest.raises(_Crash):
            _ingest(sources[kind], tmp_path / "wh", extract_processes=2, batch_size=8)
    wh = warehouse.open(tmp_path / "wh")
    kept = _rows(wh, "pages")
    assert 16 <= len(kept) < len(expected)  # two whole batches of at least 8 pages
    # the third batch left neither its pages nor its fetch rows: each kept page has its row
    stored = {r["url"] for r in _rows(wh, "fetches") if r["outcome"] == "stored"}
    assert stored == {r["url"] for r in kept}
    wh.close()
    # folders resume (stored files are not read again); an archive is re-read, its stored
    # records come back unchanged
    again, summary = _ingest(sources[kind], tmp_path / "wh", extract_processes=2,
                             batch_size=8, resume=(kind == "folder"))
    assert _rows(again, "pages") == expected  # every page, each once, as an uninterrupted run
    if kind == "folder":
        assert summary.already_stored == len(kept)
    else:
        assert summary.by_reason[("skipped", "unchanged")] == len(kept)


def test_a_page_that_breaks_extraction_fails_alone_in_its_batch():
    good = (b"<html><body><article><p>A page about a lighthouse on the northern coast, lit "
            b"in 1820.</p></article></body></html>", "text/html", "text/html", "", "file:///a.html",
            False, False, False)
    bad = (None,) + good[1:]  # no body: process_body raises
    out = extract_many([good, bad, good])
    assert [type(r).__name__ for r in out] == ["Extracted", "TypeError", "Extracted"]
    assert out[0].__dict__["content_hash"] == out[0].content_hash  # hashed in the worker

    async def through_the_pool():
        pool = ExtractPool(1, batch=8)
        try:
            return await asyncio.gather(*(pool.extract(j) for j in (good, bad, good)),
                                        return_exceptions=True)
        finally:
            pool.shutdown()
    results = asyncio.run(through_the_pool())
    assert [type(r).__name__ for r in results] == ["Extracted", "TypeError", "Extracted"]


GOOD_JOB = (b"<html><body><article><p>A page about a lighthouse on the northern coast, lit "
            b"in 1820.</p></article></body></html>", "text/html", "text/html", "", "file:///a.html",
            False, False, False)


class _KillsItsWorker:
    """A job argument whose unpickling ends the worker process at once (as a parser's
    segfault or the OOM killer would): the pool breaks, whatever its start method."""

    def __reduce__(self):
        import os
        return (os._exit, (3,))


def test_a_page_that_kills_its_worker_fails_alone_and_the_pool_comes_back():
    """A dead worker breaks every batch in the pool; the pool restarts and sends those pages
    again one by one, so the batch's other pages are extracted and only the killer fails, and
    pages sent after it are extracted too."""
    good = GOOD_JOB
    killer = (_KillsItsWorker(),) + good[1:]

    async def through_the_pool():
        pool = ExtractPool(2, batch=8)
        try:
            first = await asyncio.gather(*(pool.extract(j) for j in (good, killer, good, good)),
                                         return_exceptions=True)
            after = await asyncio.gather(*(pool.extract(good) for _ in range(3)))
            return first, after, pool.restarts
        finally:
            pool.shutdown()
    first, after, restarts = asyncio.run(through_the_pool())
    assert [type(r).__name__ for r in first] == ["Extracted", "RuntimeError", "Extracted",
                                                  "Extracted"]
    assert str(first[1]).startswith("worker_died") and restarts == 2  # the batch, then the killer alone
    assert [type(r).__name__ for r in after] == ["Extracted"] * 3


def test_past_the_restart_budget_every_waiting_page_fails_and_nothing_hangs(monkeypatch):
    """Workers that keep dying are a systematic failure: once the restarts are spent, the
    probed page and every page still waiting fail with the pool's error, none waits forever."""
    import datagen.crawl.workers as workers
    monkeypatch.setattr(workers, "MAX_RESTARTS", 1)
    good = GOOD_JOB
    killer = (_KillsItsWorker(),) + good[1:]

    async def through_the_pool():
        pool = ExtractPool(2, batch=8)
        try:
            return await asyncio.wait_for(asyncio.gather(
                *(pool.extract(j) for j in (good, killer, good)), return_exceptions=True), 60)
        finally:
            pool.shutdown()
    results = asyncio.run(through_the_pool())
    assert all(isinstance(r, BaseException) for r in results[1:]), results
    assert "BrokenProcessPool" in {type(r).__name__ for r in results}
