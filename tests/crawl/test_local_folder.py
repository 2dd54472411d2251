"""A local folder crawls at disk speed: the web's politeness is not applied to files."""

from __future__ import annotations

import asyncio
import time

from datagen.crawl import CrawlConfig, Crawler


def test_folder_crawl_is_not_paced_like_a_web_host(tmp_path):
    site = tmp_path / "docs"
    site.mkdir()
    n = 80
    for i in range(n):
        (site / f"p{i}.html").write_text(
            f"<html><head><title>Page {i}</title></head><body><article><p>Page {i} is about "
            f"the {i}th lighthouse on the northern coast, lit in {1800 + i}.</p>"
            f'<a href="p{(i + 1) % n}.html">next</a></article></body></html>')
    cfg = CrawlConfig(seeds=[str(site)], extract_processes=0)  # default politeness for the web
    assert cfg.per_host_delay_s > 0 and cfg.per_host_concurrency < cfg.global_concurrency
    crawler = Crawler(cfg, None)
    t = time.monotonic()
    summary = asyncio.run(crawler.run())
    elapsed = time.monotonic() - t
    assert summary.stored == n and summary.failed == 0
    assert crawler.hosts == {}  # no file went through a host's slots and pacing
    # paced like a web host (one start per 0.25 s) this takes >= 20 s; a loaded 2-core machine
    # extracts the 80 pages in a few seconds
    assert elapsed < 0.25 * n / 2, f"{n} local pages took {elapsed:.1f} s"
