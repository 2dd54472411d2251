"""`datagen crawl --demo`: build the demo world (cached), serve it on loopback, crawl it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import httpcore

from datagen.crawl.config import DEMO_ENTITIES, CrawlConfig
from datagen.crawl.crawler import run_crawl
from datagen.crawl.summary import CrawlSummary
from datagen.crawl.server import serve_folder

DEMO_SEED = 0
# The demo's pages are stored under this base whatever port its server gets, so a re-run,
# a resumed build and two builds at once all see the same URLs (a re-run is a conditional
# re-crawl, 304s); connections to it go to the port served this time (`_ServedPort`).
DEMO_PORT = 47613
DEMO_BASE = f"http://127.0.0.1:{DEMO_PORT}"


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
    """Serve the demo world on a free port and crawl it as `DEMO_BASE` (stable URLs)."""
    site = demo_world_dir(n, seed)
    with serve_folder(site, port=0, subprocess=True) as base_url:
        served = _ServedPort(int(base_url.rsplit(":", 1)[1]))
        return run_crawl(demo_config(DEMO_BASE, **overrides), wh, on_progress,
                         parent_run_id=parent_run_id, network=served)


class _ServedPort(httpcore.AnyIOBackend):
    """The socket layer under the crawler's address pins: a connection to `DEMO_BASE` goes
    to the port the demo's server got this time; any other goes where it says."""

    def __init__(self, port: int):
        self.port = port

    async def connect_tcp(self, host: str, port: int, *args, **kwargs):
        if (host, port) == ("127.0.0.1", DEMO_PORT):
            port = self.port
        return await super().connect_tcp(host, port, *args, **kwargs)
