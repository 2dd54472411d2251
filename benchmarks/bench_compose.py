"""Crawl + compose of the demo world: the 4-minute budget, and questions per second.

    project:  `crawl_demo` then `run_compose` (embedded backend, hops 2-4): seeds and composed
              questions written to a fresh warehouse.
    baseline: seed mining alone on the same stored pages (mine_pages + make_seeds, nothing
              composed or written), so the composer's own cost reads as a ratio.

    python benchmarks/bench_compose.py [--quick]     # --quick: 300 entities instead of 2000

Prints a table and `RESULT compose entities=... crawl_s=... compose_s=... total_s=...
questions=... composed=... questions_per_s=... seed_only_s=... compose_over_seed=...`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--entities", type=int, default=None)
    args = parser.parse_args()
    n = args.entities or (300 if args.quick else 2000)
    import warehouse
    from datagen.compose import ComposeConfig, run_compose
    from datagen.compose.run import load_pages
    from datagen.crawl import crawl_demo
    from datagen.seeds import FactStore, make_seeds, mine_pages
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        wh = warehouse.open(Path(tmp) / "wh")
        crawl = crawl_demo(wh, n=n)
        t1 = time.perf_counter()
        summary = run_compose(wh, ComposeConfig(seed=0))
        t2 = time.perf_counter()
        pages = load_pages(wh)
        seeds = make_seeds(FactStore(mine_pages(pages), {p.url: p.title for p in pages}))
        t3 = time.perf_counter()
        wh.close()
    written = summary.seeds_new + summary.composed
    rows = [("entities", n), ("pages stored", crawl.stored), ("crawl s", f"{t1 - t0:.1f}"),
            ("compose s", f"{t2 - t1:.1f}"), ("total s", f"{t2 - t0:.1f}"),
            ("seeds", summary.seeds), ("composed", summary.composed),
            ("by hops", dict(sorted(summary.composed_by_hops.items()))),
            ("questions/s (compose)", f"{written / (t2 - t1):.0f}"),
            ("baseline: seed mining s", f"{t3 - t2:.1f} ({len(seeds)} seed candidates)")]
    for k, v in rows:
        print(f"{k:<28} {v}")
    print(f"RESULT compose entities={n} crawl_s={t1 - t0:.1f} compose_s={t2 - t1:.1f} "
          f"total_s={t2 - t0:.1f} questions={written} composed={summary.composed} "
          f"questions_per_s={written / (t2 - t1):.1f} seed_only_s={t3 - t2:.1f} "
          f"compose_over_seed={(t2 - t1) / max(t3 - t2, 1e-9):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
