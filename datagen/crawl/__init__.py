"""The crawl stage: fetch pages politely and robustly, extract their text, store them.

    config.py    CrawlConfig (one typed config; defaults in code)
    urls.py      URL normalisation, scope rules, private-address guard (pins addresses)
    fetch.py     one URL over HTTP: deadline, retries, redirect/byte/decompression caps,
                 connections to pinned addresses only (PinnedNetwork)
    robots.py    robots.txt per host
    extract.py   charset detection, robots meta, links, canonical, licence, trafilatura text
    seeds.py     URLs / sitemaps (.xml.gz, indexes) / folders / WARCs -> seeds and scope
    crawler.py   the async crawl loop, batched warehouse commits, CrawlSummary, run_crawl
    warc.py      web archives: WARC records in as fetched pages, WarcOut (rotating .warc.gz)
    server.py    loopback static server (serve_folder) used by the demo and the tests
    demo.py      crawl_demo: build + serve + crawl the demo world
"""

from datagen.crawl.config import PROJECT_UA, CrawlConfig
from datagen.crawl.crawler import Crawler, CrawlSummary, reason_code, run_crawl
from datagen.crawl.demo import crawl_demo, demo_world_dir
from datagen.crawl.seeds import SeedError
from datagen.crawl.server import serve_folder, serve_handler

__all__ = ["CrawlConfig", "Crawler", "CrawlSummary", "run_crawl", "crawl_demo",
           "demo_world_dir", "serve_folder", "serve_handler", "reason_code", "SeedError",
           "PROJECT_UA"]
