"""Crawl throughput: our crawler vs a bare asyncio + httpx + trafilatura loop.

Both sides fetch the demo world from the same loopback server (a separate process, so
neither shares the GIL with it), with the same concurrency and politeness (per-host
concurrency = global concurrency, no delay). Ours starts from the index page and discovers
the links, checks robots.txt, extracts links/licence/text and commits every page to a real
warehouse; the bare loop is handed the URL list and only extracts text.

    python benchmarks/bench_crawl.py [--quick]

Last line: RESULT crawl ratio=<ours/bare pages per s> pages_per_s=<ours>
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import trafilatura

import warehouse
from datagen.crawl import CrawlConfig, Crawler, serve_folder
from datagen.demo_world import build_world, write_world

CONCURRENCY = 8


async def bare_loop(urls: list[str]) -> int:
    """The baseline: fetch each URL at fixed concurrency and extract its main text."""
    sem = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY)
    done = 0
    async with httpx.AsyncClient(limits=limits, timeout=20) as client:
        async def one(url: str) -> None:
            nonlocal done
            async with sem:
                resp = await client.get(url)
                if resp.status_code == 200 and trafilatura.extract(resp.text):
                    done += 1
        await asyncio.gather(*(one(u) for u in urls))
    return done


def run_ours(base: str, tmp: Path, i: int) -> tuple[int, float]:
    wh = warehouse.open(tmp / f"wh{i}")
    cfg = CrawlConfig(seeds=[base + "/index.html"], allow_private=True,
                      global_concurrency=CONCURRENCY, per_host_concurrency=CONCURRENCY,
                      per_host_delay_s=0.0)
    t = time.perf_counter()
    summary = asyncio.run(Crawler(cfg, wh, run_id=f"bench{i}").run())
    elapsed = time.perf_counter() - t
    stored = wh.count("pages")
    wh.close()
    assert stored == summary.stored
    return summary.stored, elapsed


def run_bare(urls: list[str]) -> tuple[int, float]:
    t = time.perf_counter()
    n = asyncio.run(bare_loop(urls))
    return n, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller world, fewer rounds")
    args = ap.parse_args()
    n, rounds = (600, 3) if args.quick else (2000, 3)
    tmp = Path(tempfile.mkdtemp(prefix="bench_crawl_"))
    try:
        world = build_world(n, seed=0)
        write_world(world, tmp / "site")
        with serve_folder(tmp / "site", subprocess=True) as base:
            urls = [base + "/index.html"] + [base + e.path for e in world]
            ours, bare = [], []
            run_bare(urls[:50])  # warm the server's page cache and both code paths
            for i in range(rounds):  # interleaved: load on the shared machine hits both sides
                pages, secs = run_ours(base, tmp, i)
                ours.append(pages / secs)
                pages_b, secs_b = run_bare(urls)
                bare.append(pages_b / secs_b)
                print(f"round {i}: ours {pages} pages in {secs:.2f} s ({ours[-1]:.1f}/s) | "
                      f"bare {pages_b} pages in {secs_b:.2f} s ({bare[-1]:.1f}/s)")
        o, b = statistics.median(ours), statistics.median(bare)
        paired = statistics.median(x / y for x, y in zip(ours, bare))
        print(f"{'side':<8}{'pages/s (median)':>18}")
        print(f"{'ours':<8}{o:>18.1f}\n{'bare':<8}{b:>18.1f}")
        print(f"median of per-round ratios {paired:.3f} (the shared machine's load varies by round)")
        print(f"RESULT crawl ratio={o / b:.3f} pages_per_s={o:.1f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
