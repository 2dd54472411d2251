"""Crawl throughput: over HTTP against a bare loop, and from disk against extraction alone.

http: both sides fetch the demo world from the same loopback server (a separate process, so
neither shares the GIL with it), with the same concurrency and politeness (per-host
concurrency = global concurrency, no delay). Ours starts from the index page and discovers
the links, checks robots.txt, extracts links/licence/text and commits every page to a real
warehouse; the bare loop is handed the URL list and only extracts text.

folder: `datagen crawl FOLDER` with the default config (its politeness is for the web)
against extraction alone: the same `process_body` on the same files, each worker reading
its own files, nothing stored, in as many processes as the crawl uses in all (its
extraction workers + its own process), so that on a shared machine neither side gets a
larger share of the CPUs by having more processes.

warc: the same site written as one gzipped WARC (warcio; each page gzip content-encoded,
as servers send it), ingested with `datagen crawl FILE.warc.gz` defaults, against the same
extraction-only baseline on the site's files.

warcmem (not in the default parts): peak RSS of a fresh process ingesting a WARC of the
site's pages once and four times over (each copy with its own URLs and one sentence of its
own, so every record is stored), into a warehouse: memory must not grow with the archive.

    python benchmarks/bench_crawl.py [--quick] [--parts http,folder,warc,warcmem]

Last line: RESULT crawl ratio=<ours/bare pages per s> pages_per_s=<ours>
           folder_ratio=<folder crawl / extraction-only pages per s (wall clock)>
           folder_cpu_ratio=<the same per CPU second: what a loaded machine can't skew>
           warc_ratio=<WARC ingestion / extraction-only pages per s> warc_cpu_ratio=<…>
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import trafilatura

import warehouse
from datagen.crawl import CrawlConfig, Crawler, serve_folder
from datagen.crawl import extract as ex
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


def _extract_file(path: str) -> bool:
    """Extraction alone, as the crawler's workers run it (a worker reads its own file)."""
    url = Path(path).as_uri()
    page = ex.process_body(Path(path).read_bytes(), "text/html", "text/html", "", url,
                           False, False, True)
    return not isinstance(page, str) and not page.noindex


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the pools' workers)."""
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_extract_only(files: list[str], processes: int) -> tuple[int, float, float]:
    """(pages, wall seconds, CPU seconds) of extraction alone."""
    from concurrent.futures import ProcessPoolExecutor
    cpu = cpu_seconds()
    with ProcessPoolExecutor(processes) as pool:
        pool.submit(len, b"").result()  # started before the clock, as the crawler's pool is
        t = time.perf_counter()
        n = sum(pool.map(_extract_file, files, chunksize=4))
        wall = time.perf_counter() - t
    return n, wall, cpu_seconds() - cpu


def write_site_warc(site: Path, path: Path, copies: int = 1) -> None:
    """Every HTML file of the site as a gzip-encoded 200 response, in one gzipped WARC."""
    import gzip
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)
        for c, f in ((c, f) for c in range(copies) for f in sorted(site.rglob("*.html"))):
            page = f.read_bytes()
            if copies > 1:
                page = page.replace(b"</article>", f"<p>Copy {c} of this page.</p></article>".encode())
            body = gzip.compress(page, 6)
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                               ("Content-Encoding", "gzip"),
                                               ("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            url = "http://site.example/" + (f"{c}/" if copies > 1 else "") + str(f.relative_to(site))
            w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                http_headers=http))


def run_folder(site: Path, tmp: Path, tag: str) -> tuple[int, float, float]:
    """(pages, wall seconds, CPU seconds) of a default-config crawl of a folder (or WARC)."""
    wh = warehouse.open(tmp / f"wh_{tag}")
    cfg = CrawlConfig(seeds=[str(site)])  # defaults: politeness for the web, not for files
    cpu, t = cpu_seconds(), time.perf_counter()
    summary = asyncio.run(Crawler(cfg, wh, run_id=tag).run())
    elapsed, cpu = time.perf_counter() - t, cpu_seconds() - cpu
    assert wh.count("pages") == summary.stored
    wh.close()
    return summary.stored, elapsed, cpu


def bench_http(world, site: Path, tmp: Path, rounds: int) -> dict[str, float]:
    with serve_folder(site, subprocess=True) as base:
        urls = [base + "/index.html"] + [base + e.path for e in world]
        ours, bare = [], []
        run_bare(urls[:50])  # warm the server's page cache and both code paths
        for i in range(rounds):  # interleaved: load on the shared machine hits both sides
            pages, secs = run_ours(base, tmp, i)
            ours.append(pages / secs)
            pages_b, secs_b = run_bare(urls)
            bare.append(pages_b / secs_b)
            print(f"http round {i}: ours {pages} pages in {secs:.2f} s ({ours[-1]:.1f}/s) | "
                  f"bare {pages_b} pages in {secs_b:.2f} s ({bare[-1]:.1f}/s)")
    o, b = statistics.median(ours), statistics.median(bare)
    paired = statistics.median(x / y for x, y in zip(ours, bare))
    print(f"http: ours {o:.1f} pages/s, bare {b:.1f} pages/s (medians); median of per-round "
          f"ratios {paired:.3f} (the shared machine's load varies by round)")
    return {"ratio": o / b, "pages_per_s": o}


def bench_folder(site: Path, tmp: Path, rounds: int, warc: Path | None = None) -> dict[str, float]:
    """Folder (or, with `warc`, that WARC) crawl vs extraction alone, paired per round."""
    files = sorted(str(p) for p in site.rglob("*.html"))
    processes = CrawlConfig().extract_processes + 1
    name = "warc" if warc else "folder"
    ratios, cpu_ratios = [], []
    for i in range(rounds):  # interleaved, paired per round
        n_x, secs_x, cpu_x = run_extract_only(files, processes)
        n_f, secs_f, cpu_f = run_folder(warc or site, tmp, f"{name}{i}")
        ratios.append((n_f / secs_f) / (n_x / secs_x))
        cpu_ratios.append((n_f / cpu_f) / (n_x / cpu_x))
        print(f"{name} round {i}: crawl {n_f} pages in {secs_f:.2f} s ({n_f / secs_f:.1f}/s, "
              f"{cpu_f:.1f} CPU s) | extraction only {n_x} pages in {secs_x:.2f} s "
              f"({n_x / secs_x:.1f}/s, {cpu_x:.1f} CPU s) | ratio {ratios[-1]:.3f}, "
              f"per CPU second {cpu_ratios[-1]:.3f}")
    print(f"{name}: {len(files)} files, {processes} processes on each side, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return {f"{name}_ratio": statistics.median(ratios),
            f"{name}_cpu_ratio": statistics.median(cpu_ratios)}


def warc_peak_rss(n: int, copies: int) -> None:
    """In a fresh process: ingest a WARC of `copies` x the site; print records and peak RSS."""
    import resource
    tmp = Path(tempfile.mkdtemp(prefix="bench_warcmem_"))
    try:
        write_world(build_world(n, seed=0), tmp / "site")
        write_site_warc(tmp / "site", tmp / "a.warc.gz", copies)
        pages, secs, _ = run_folder(tmp / "a.warc.gz", tmp, "mem")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"WARCMEM records={pages} stored_in_s={secs:.1f} "
              f"warc_mb={(tmp / 'a.warc.gz').stat().st_size / 1e6:.1f} peak_rss_mb={peak:.0f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_warcmem(n: int) -> dict[str, float]:
    import subprocess
    import sys
    out = {}
    for copies in (1, 4):
        line = subprocess.run([sys.executable, __file__, "--warcmem", f"{n},{copies}"],
                              capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        print(f"warcmem x{copies}: {line}")
        out[f"warc_peak_rss_mb_x{copies}"] = float(line.rsplit("=", 1)[1])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller world, fewer rounds")
    ap.add_argument("--parts", default="http,folder,warc", help="comma-separated: http, folder, warc")
    ap.add_argument("--warcmem", help=argparse.SUPPRESS)  # N,COPIES: one warcmem process
    args = ap.parse_args()
    if args.warcmem:
        warc_peak_rss(*map(int, args.warcmem.split(",")))
        return
    parts = set(args.parts.split(","))
    n, rounds = (1000, 3) if args.quick else (2000, 3)
    tmp = Path(tempfile.mkdtemp(prefix="bench_crawl_"))
    result: dict[str, float] = {}
    try:
        world = build_world(n, seed=0)
        write_world(world, tmp / "site")
        if "http" in parts:
            result.update(bench_http(world, tmp / "site", tmp, rounds))
        if "folder" in parts:
            result.update(bench_folder(tmp / "site", tmp, rounds))
        if "warc" in parts:
            write_site_warc(tmp / "site", tmp / "site.warc.gz")
            result.update(bench_folder(tmp / "site", tmp, rounds, warc=tmp / "site.warc.gz"))
        if "warcmem" in parts:
            result.update(bench_warcmem(n))
        fields = " ".join(f"{k}={v:.3f}" if "ratio" in k else f"{k}={v:.1f}"
                          for k, v in result.items())
        print(f"RESULT crawl {fields}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
