"""The verify and band stages of a demo build, and each check and the solver against its bare
baseline, measured in the same run on the same warehouse.

The crawl and compose stages run as `datagen build` runs them (the build's stage configs, no
Prefect), then verify and band, each timed (wall and CPU seconds; the workers' CPU is in the
wall time only). Then, on the questions the build made, each part against the bare library
work it is built on:
- near_duplicates (in the stage's batches) vs one MiniLM encode of every question and one
  matrix search over them (`SentenceEmbedder` + `similar_pairs`);
- unique_answer vs bare `bm25s` queries: every question retrieved (top 10) from the same index;
- the embedded solver's attempts (`max_k` per question, candidates found once) vs the bare
  libraries doing what it must: bm25s on the searches it issued (the question and its
  follow-ups, as its tool calls record them) on the same index, and each attempt's seed
  (hashlib) and seeded draw (`random`).
A ratio is bare seconds / ours (1.0: ours costs what the library does; goal >= 0.8).

    python benchmarks/bench_build.py [--quick] [--entities N] [--keep DIR]

The last line is ``RESULT build verify_s=... band_s=... near_dup_ratio=... unique_ratio=...
solver_ratio=...``; `uptime` is printed first and last (quote it with the figures).
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of this process)."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def stage(wh, build_cfg, name: str):
    from flows.build import stage_config
    from flows.stages import STAGES
    return STAGES[name].run(wh, stage_config(build_cfg, name), "", None)


def build_stages(wh, entities: int) -> dict[str, float]:
    """Run the four stages; seconds of each (wall) and CPU of verify and band."""
    from flows.config import BuildConfig, DemoSpec
    cfg = BuildConfig(demo=DemoSpec(entities=entities))
    out: dict[str, float] = {}
    for name in ("crawl", "compose", "verify", "band"):
        _, wall, cpu = timed(lambda: stage(wh, cfg, name))
        out[f"{name}_s"] = wall
        if name in ("verify", "band"):
            out[f"{name}_cpu_s"] = cpu
        print(f"{name:<8} {wall:8.1f} s wall {cpu:8.1f} s CPU (load {load()})", flush=True)
    return out


def questions(wh) -> list:
    """Every question (its latest row), in id order: what the verify stage checked."""
    from verifiers.stage import select
    return select(wh, [], "true")


def bench_near_dup(qs: list, batch: int) -> dict[str, float]:
    from verifiers.checks import CheckContext
    from verifiers.dedup import DEFAULT_THRESHOLD, NearDuplicates, SentenceEmbedder, similar_pairs
    texts = [q.question for q in qs]
    embedder = SentenceEmbedder()
    embedder.encode(texts[:8])  # warm: both sides start from a loaded model

    def bare():
        emb = embedder.encode(sorted(set(texts)))
        return sum(1 for _ in similar_pairs(emb, DEFAULT_THRESHOLD))
    _, bare_s, _ = timed(bare)
    check = NearDuplicates(embedder=embedder)
    ctx = CheckContext()

    def ours():
        check.encode_ahead([texts[i:i + batch] for i in range(0, len(texts), batch)])
        return [check.run(qs[i:i + batch], ctx) for i in range(0, len(qs), batch)]
    _, ours_s, _ = timed(ours)
    return {"near_dup_s": ours_s, "near_dup_bare_s": bare_s, "near_dup_ratio": bare_s / ours_s}


def bench_unique(wh, qs: list, batch: int) -> dict[str, float]:
    from flows.stages import page_tools
    from verifiers.checks import CheckContext
    from verifiers.uniqueness import UniqueAnswer
    from warehouse import page_index
    tools = page_tools(wh)
    tools.load_texts()
    texts = [q.question for q in qs]

    def bare():
        tokens = [t for t in page_index.tokenize(texts) if t]
        return tools.index.retriever.retrieve(tokens, k=10, show_progress=False)
    _, bare_s, _ = timed(bare)
    check, ctx = UniqueAnswer(), CheckContext(wh=wh, pages=tools)
    _, ours_s, _ = timed(lambda: [check.run(qs[i:i + batch], ctx)
                                  for i in range(0, len(qs), batch)])
    return {"unique_s": ours_s, "unique_bare_s": bare_s, "unique_ratio": bare_s / ours_s}


def bench_solver(wh, qs: list, max_k: int) -> dict[str, float]:
    from difficulty.records import SolverQuestion
    from difficulty.solvers.base import attempt_seed
    from difficulty.solvers.embedded import EmbeddedSolver
    from flows.stages import page_tools
    from warehouse import page_index
    tools = page_tools(wh)
    tools.load_texts()
    sq = [SolverQuestion(q.question_id, q.question) for q in qs]
    solver = EmbeddedSolver(tools)
    attempts, ours_s, _ = timed(lambda: solver.solve(sq, max_k))
    queries = searches(attempts)

    def bare():
        tokens = [t for t in page_index.tokenize(queries) if t]
        hits = tools.index.retriever.retrieve(tokens, k=5, show_progress=False)
        draws = [random.Random(attempt_seed(q.question_id, q.run_seed, i)).random()
                 for q in sq for i in range(max_k)]
        return hits, draws
    _, bare_s, _ = timed(bare)
    return {"solver_s": ours_s, "solver_bare_s": bare_s, "solver_ratio": bare_s / ours_s,
            "solver_searches_per_q": len(queries) / max(1, len(sq))}


def searches(attempts: list) -> list[str]:
    """The queries the solver searched, from each question's first attempt's tool calls
    (every attempt of a question records the same calls)."""
    return [ast.literal_eval(call[len("search("):-1]) for tries in attempts if tries
            for call in tries[0].tool_calls if call.startswith("search(")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 500-entity demo world (default 2000)")
    ap.add_argument("--entities", type=int, default=None)
    ap.add_argument("--keep", type=Path, help="build the warehouse here and keep it")
    args = ap.parse_args()
    entities = args.entities or (500 if args.quick else 2000)
    print(f"uptime: load {load()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench_build_"))
    root = args.keep or tmp / "wh"
    os.environ.setdefault("DATAGEN_CACHE", str(tmp / "cache"))
    import warehouse
    from difficulty import BandConfig
    from flows.config import VerifyConfig
    result: dict[str, float] = {}
    try:
        wh = warehouse.open(root)
        try:
            result.update(build_stages(wh, entities))
            qs = questions(wh)
            batch = VerifyConfig().batch_size
            result.update(bench_near_dup(qs, batch))
            result.update(bench_unique(wh, qs, batch))
            result.update(bench_solver(wh, qs, BandConfig().max_k))
            result["questions"] = len(qs)
            result["train_ready"] = wh.scalar("select count(*) from train_ready")
        finally:
            wh.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for k, v in result.items():
        print(f"{k:<16} {v:10.3f}")
    print(f"uptime: load {load()}")
    fields = " ".join(f"{k}={v:.3f}" if "ratio" in k else f"{k}={v:.1f}"
                      for k, v in result.items())
    print(f"RESULT build {fields}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
