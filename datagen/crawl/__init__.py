"""The crawl stage: fetch pages politely and robustly, extract their text, store them.

The file tree is in datagen/README.md.
"""

from datagen.crawl.config import PROJECT_UA, CrawlConfig
from datagen.crawl.crawler import Crawler, run_crawl
from datagen.crawl.demo import crawl_demo, demo_world_dir
from datagen.crawl.seeds import SeedError
from datagen.crawl.server import serve_folder, serve_handler
from datagen.crawl.summary import CrawlSummary, reason_code

__all__ = ["CrawlConfig", "Crawler", "CrawlSummary", "run_crawl", "crawl_demo",
           "demo_world_dir", "serve_folder", "serve_handler", "reason_code", "SeedError",
           "PROJECT_UA"]
