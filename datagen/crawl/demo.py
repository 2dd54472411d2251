"""`datagen crawl --demo`: build the demo world (cached), serve it on loopback, crawl it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from datagen.crawl.config import CrawlConfig
from datagen.crawl.crawler import CrawlSummary, run_crawl
from datagen.crawl.server import serve_folder

DEMO_ENTITIES = 2000
DEMO_SEED = 0
# A fixed port keeps the demo's URLs stable across runs, so a re-run is a conditional
# re-crawl (304s) rather than a new site; any free port is the fallback.
DEMO_PORT = 47613


def demo_world_dir(n: int = DEMO_ENTITIES, seed: int = DEMO_SEED) -> Path:
    """Where the demo world is cached ($DATAGEN_CACHE, else ~/.cache/datagen); built if absent."""
    from datagen.demo_world import build_world, write_world
    from datagen.demo_world.render import WORLD_FORMAT
    base = Path(os.environ.get("DATAGEN_CACHE")
                or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "datagen")
    out = base / f"demo-world-n{n}-s{seed}"
    info = out / "world.json"
    if info.exists():
        meta = json.loads(info.read_text())
        if meta.get("entities") == n and meta.get("format") == WORLD_FORMAT:
            return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    write_world(build_world(n, seed), tmp)
    if out.exists():  # a stale or partial copy; replace it whole
        import shutil
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def demo_config(base_url: str, **overrides) -> CrawlConfig:
    """Loopback is our own server: allow it, and drop the per-host delay meant for the web."""
    opts = dict(seeds=[base_url + "/index.html"], allow_private=True, global_concurrency=8,
                per_host_concurrency=8, per_host_delay_s=0.0)
    opts.update(overrides)
    return CrawlConfig(**opts)


def crawl_demo(wh, n: int = DEMO_ENTITIES, seed: int = DEMO_SEED,
               on_progress: Callable[[CrawlSummary], None] | None = None,
               parent_run_id: str = "", **overrides) -> CrawlSummary:
    site = demo_world_dir(n, seed)
    try:
        server = serve_folder(site, port=DEMO_PORT, subprocess=True)
        base_url = server.__enter__()
    except OSError:
        server = serve_folder(site, port=0, subprocess=True)
        base_url = server.__enter__()
    try:
        return run_crawl(demo_config(base_url, **overrides), wh, on_progress,
                         parent_run_id=parent_run_id)
    finally:
        server.__exit__(None, None, None)
