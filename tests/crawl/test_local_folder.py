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
    t = time.monotonic()
    summary = asyncio.run(Crawler(cfg, None).run())
    elapsed = time.monotonic() - t
    assert summary.stored == n and summary.failed == 0
    # paced like a web host this takes n * 0.25 s = 20 s; extraction alone is well under 5 s
    assert elapsed < 0.25 * n / 4, f"{n} local pages took {elapsed:.1f} s"
