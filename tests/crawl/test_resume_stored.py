"""`CrawlConfig.resume`: a restarted crawl requests no page already stored, follows the stored
pages' links instead, and ends with the pages an uninterrupted crawl stores."""

from __future__ import annotations

from datagen.crawl import CrawlConfig, run_crawl, serve_folder


def _cfg(base: str, **kw) -> CrawlConfig:
    return CrawlConfig(seeds=[base + "/index.html"], allow_private=True, per_host_delay_s=0.0,
                       per_host_concurrency=8, global_concurrency=8, **kw)


def _urls(wh, sql: str) -> set[str]:
    return {r["url"] for r in wh.sql(sql).to_pylist()}


def test_resumed_crawl_requests_no_stored_page(demo_site, wh):
    site, _ = demo_site
    with serve_folder(site) as base:
        first = run_crawl(_cfg(base, max_pages=40), wh)          # stands in for a killed crawl
        stored = _urls(wh, "select url from pages")
        assert first.stored == 40 and len(stored) == 40
        again = run_crawl(_cfg(base, resume=True), wh, parent_run_id="build-x")
    requested = _urls(wh, f"select url from fetches where run_id = '{again.run_id}'")
    assert not requested & stored                                # nothing stored was re-requested
    assert again.already_stored >= 40
    pages = _urls(wh, "select url from pages")
    assert len(pages) == wh.sql("select count(*) as n from pages").to_pylist()[0]["n"]  # no doubles
    assert len(pages) > 200                                      # the frontier went on past them
    run = wh.sql(f"select parent_run_id from runs where run_id = '{again.run_id}'").to_pylist()
    assert run[0]["parent_run_id"] == "build-x"
