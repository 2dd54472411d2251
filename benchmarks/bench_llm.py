"""Model-client throughput: bounded concurrency against a fixed-latency endpoint.

The endpoint is `tests.llm.loopback` in a separate process (so it does not share the GIL
with the client), answering every chat request after a fixed 200 ms. The client is the one
the composer uses (`ChatClient.chat_many`, cache on, `llm_calls` rows written to a temporary
warehouse), at C = 32 requests in flight, outside any flow. The ideal is C / 0.2 s requests
per second; the baseline is the same client at concurrency 1 on a 50-request slice. A
second identical run must be answered from the cache: the server counts what it received.

    python benchmarks/bench_llm.py [--quick]      # --quick: 640 requests (20 x C); full: 1280

Last line: RESULT llm ratio=<achieved/ideal req per s> speedup_vs_sequential=<x>
           cached_rerun_calls=<requests the server got during the identical rerun>

On a busy machine every request also waits for the scheduler twice (the endpoint's timer,
the client's wake-up), which no client can save: the bench also runs a do-nothing client
(raw keep-alive sockets, no JSON, no cache, no rows) right after, as the machine's floor
(`floor_ratio`), so the client's own share of a shortfall can be told from the machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import warehouse  # noqa: E402
from datagen.llm import ChatClient, ChatRequest, EndpointConfig  # noqa: E402

C = 32
LATENCY_S = 0.2
SEQUENTIAL_SLICE = 50


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.llm.loopback", "--latency",
                             str(LATENCY_S), "--model", "bench"], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def server_count(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as resp:
        return json.load(resp)["chat_requests"]


def requests(n: int, tag: str) -> list[ChatRequest]:
    return [ChatRequest(({"role": "user", "content": f"{tag} question {i}: who wrote it?"},),
                        n=1, temperature=0.7, max_tokens=32, purpose="bench/llm", item_id=f"{tag}{i}")
            for i in range(n)]


def warm_up(run_id: str, k: int) -> list[ChatRequest]:
    """k calls no run repeats (the round is per run), so every connection is open."""
    return [ChatRequest(({"role": "user", "content": f"warm-up {i}"},), round=hash(run_id))
            for i in range(k)]


def timed_run(base_url: str, wh, run_id: str, reqs: list[ChatRequest], concurrency: int,
              cache_dir: Path) -> tuple[float, dict]:
    """One pass through the composer's code path; the clock includes writing llm_calls."""
    ep = EndpointConfig(base_url=base_url, model="bench", max_concurrency=concurrency)
    client = ChatClient(ep, wh=wh, run_id=run_id, cache_dir=cache_dir)
    # set-up outside the clock, as in a long stage: preflight, the pool's `concurrency`
    # connections (the clock still includes committing every row)
    client.chat_many(warm_up(run_id, concurrency))
    client.flush()
    t, cpu = time.perf_counter(), time.process_time()
    results = client.chat_many(reqs)
    answered = time.perf_counter() - t
    client.close()  # the last rows and cache files: inside the clock
    elapsed = time.perf_counter() - t
    cpu_ms = (time.process_time() - cpu) * 1000 / len(reqs)
    if not all(r.ok for r in results):
        raise SystemExit(f"bench: {sum(not r.ok for r in results)} calls failed")
    return elapsed, {**client.totals(), "cpu_ms_per_call": cpu_ms, "close_s": elapsed - answered}


async def _raw_worker(host: str, port: int, n: int, tag: str) -> None:
    import asyncio
    reader, writer = await asyncio.open_connection(host, port)
    for i in range(n):
        body = json.dumps({"model": "bench", "n": 1, "messages": [
            {"role": "user", "content": f"floor {tag} {i}"}]}).encode()
        writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: bench\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        await reader.readexactly(length)
    writer.close()


def floor_ratio(base_url: str, n: int) -> float:
    """The ratio a client doing no work of its own gets here now (C connections, n requests)."""
    import asyncio
    from urllib.parse import urlsplit

    from datagen.llm.client import new_event_loop
    url = urlsplit(base_url)

    async def run() -> float:
        t = time.perf_counter()
        await asyncio.gather(*[_raw_worker(url.hostname, url.port, n // C, str(k)) for k in range(C)])
        return n / (time.perf_counter() - t) / (C / LATENCY_S)
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="640 requests (20 x C) instead of 1280")
    args = ap.parse_args()
    n = 20 * C if args.quick else 40 * C
    proc, base_url = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            wh = warehouse.open(Path(tmp) / "wh")
            cache = Path(tmp) / "wh" / "cache" / "llm"
            reqs = requests(n, "c")
            secs, totals = timed_run(base_url, wh, "bench-cold", reqs, C, cache)
            rps = n / secs
            before = server_count(base_url)
            secs_again, totals_again = timed_run(base_url, wh, "bench-rerun", reqs, C, cache)
            rerun_calls = server_count(base_url) - before - C  # less the warm-up calls
            seq_secs, _ = timed_run(base_url, wh, "bench-seq", requests(SEQUENTIAL_SLICE, "s"), 1, cache)
            seq_rps = SEQUENTIAL_SLICE / seq_secs
            rows = wh.sql("SELECT count(*) AS n FROM llm_calls").column("n")[0].as_py()
            wh.close()
        floor = floor_ratio(base_url, n)
    finally:
        proc.terminate()
        proc.wait(10)
    ideal = C / LATENCY_S
    print(f"{'run':<28}{'requests':>10}{'seconds':>10}{'req/s':>10}")
    print(f"{'concurrent C=32, cold':<28}{n:>10}{secs:>10.2f}{rps:>10.1f}")
    print(f"{'identical rerun (cache)':<28}{n:>10}{secs_again:>10.2f}{n / secs_again:>10.1f}")
    print(f"{'sequential (C=1)':<28}{SEQUENTIAL_SLICE:>10}{seq_secs:>10.2f}{seq_rps:>10.1f}")
    print(f"of the cold run's {secs:.2f} s, close() (the last rows and cache files) took "
          f"{totals['close_s']:.2f} s")
    print(f"client CPU per call (cold): {totals['cpu_ms_per_call']:.2f} ms, i.e. at most "
          f"{1000 / totals['cpu_ms_per_call']:.0f} req/s on one free core")
    print(f"ideal {ideal:.0f} req/s (C / {LATENCY_S} s); cold totals {totals}; rerun cached "
          f"{totals_again['cached']}; llm_calls rows {rows}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"machine floor: a do-nothing client (raw sockets) got floor_ratio={floor:.3f} "
          f"right after; the client's ratio is {rps / ideal / floor:.2f} of it")
    print(f"RESULT llm ratio={rps / ideal:.3f} speedup_vs_sequential={rps / seq_rps:.2f} "
          f"cached_rerun_calls={rerun_calls}")


if __name__ == "__main__":
    main()
