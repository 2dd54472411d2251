"""Fixtures of the crawl tests: the hostile loopback server and a small demo world."""

from __future__ import annotations

import pytest

from datagen.crawl import CrawlConfig, serve_folder, serve_handler
from tests.crawl.hostile import HostileState, handler_factory


@pytest.fixture
def hostile():
    """(base_url, state) of a running hostile server on 127.0.0.1."""
    state = HostileState()
    with serve_handler(handler_factory(state)) as base:
        yield base, state


def fast_config(seeds: list[str], **kw) -> CrawlConfig:
    """Loopback politeness, short deadlines and small caps so hostile cases end quickly."""
    opts = dict(seeds=seeds, allow_private=True, global_concurrency=8, per_host_concurrency=8,
                per_host_delay_s=0.0, request_deadline_s=2.5, max_retries=3, backoff_base_s=0.05,
                max_bytes=2_000_000, max_decompressed_bytes=5_000_000, extract_processes=0,
                batch_size=8)
    opts.update(kw)
    return CrawlConfig(**opts)


def demo_world(tmp_path_factory, n: int, seed: int):
    """(folder, world) of a demo world written into a fresh temporary folder."""
    from datagen.demo_world import build_world, write_world
    out = tmp_path_factory.mktemp(f"world{n}")
    world = build_world(n, seed=seed)
    write_world(world, out)
    return out, world


@pytest.fixture(scope="session")
def small_world_dir(tmp_path_factory):
    return demo_world(tmp_path_factory, 200, seed=7)


@pytest.fixture
def small_world_site(small_world_dir):
    out, world = small_world_dir
    with serve_folder(out) as base:
        yield base, out, world
