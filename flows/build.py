"""The `build` flow: crawl -> compose -> verify -> band over one build run, one subflow each.

Every stage's `runs` row names the build run as its parent. A build killed at any point and
started again with the same config skips the stages that finished (their cached results, whose
rows are checked in the warehouse) and resumes the one that did not (each stage skips the work
whose rows exist), so it ends with the same questions, verdicts and bands.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from prefect import flow

from flows.config import BuildConfig, config_hash
from flows.stages import (
    StageResult, _warehouse, finish_in, input_snapshot, parent_of, stage_key, stage_task_named,
    with_rows,
)
from warehouse.lineage import finishing


@dataclass
class StageRun:
    result: StageResult
    seconds: float
    cached: bool


@dataclass
class BuildResult:
    run_id: str
    stages: dict[str, StageRun] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    markdown: str = ""


def stage_config(cfg: BuildConfig, stage: str) -> dict[str, Any]:
    """The resolved config one stage runs with (plain JSON: it is part of the cache key); the
    demo crawl's says which demo world."""
    if stage == "crawl":
        crawl = {"resume": True, **cfg.crawl_fields()}
        return {**crawl, "demo": cfg.demo.model_dump()} if cfg.is_demo else \
            {"seeds": cfg.seeds, **crawl}
    return cfg.resolved()[stage]


def run_stage(stage: str, root: str, cfg: BuildConfig, build_run_id: str) -> StageRun:
    """Run (or reuse) one stage; a cached result whose rows are gone is recomputed."""
    stage_cfg = stage_config(cfg, stage)
    with _warehouse(root) as wh:
        key = stage_key(stage, root, {"demo": None, **stage_cfg}, input_snapshot(wh, stage))
    if cfg.runner == "dask":  # shards on the workers (flows/runner.py)
        from flows.runner import run_sharded
        return run_sharded(stage, root, stage_cfg, build_run_id, key)
    t0 = time.perf_counter()

    def start(_: int, refresh: bool):
        result = stage_task_named(stage, refresh=refresh)(stage, root, stage_cfg, build_run_id,
                                                          key)
        return lambda: result
    [result] = with_rows(root, 1, start)
    cached = parent_of(root, result.run_id) != build_run_id
    return StageRun(result, time.perf_counter() - t0, cached)


@flow(name="crawl")
def crawl_flow(warehouse: str, config: dict[str, Any], parent_run_id: str = "") -> StageRun:
    return run_stage("crawl", warehouse, BuildConfig(**config), parent_run_id)


@flow(name="compose")
def compose_flow(warehouse: str, config: dict[str, Any], parent_run_id: str = "") -> StageRun:
    return run_stage("compose", warehouse, BuildConfig(**config), parent_run_id)


@flow(name="verify")
def verify_flow(warehouse: str, config: dict[str, Any], parent_run_id: str = "") -> StageRun:
    return run_stage("verify", warehouse, BuildConfig(**config), parent_run_id)


@flow(name="band")
def band_flow(warehouse: str, config: dict[str, Any], parent_run_id: str = "") -> StageRun:
    return run_stage("band", warehouse, BuildConfig(**config), parent_run_id)


STAGE_FLOWS = {"crawl": crawl_flow, "compose": compose_flow, "verify": verify_flow,
               "band": band_flow}


@flow(name="build")
def build_flow(warehouse: str, config: dict[str, Any]) -> BuildResult:
    """The whole pipeline on one warehouse; the summary is also a markdown artifact."""
    from flows.report import build_report, publish
    cfg = BuildConfig(**config)
    build_run_id = _start_build(warehouse, cfg)
    out = BuildResult(build_run_id)
    with finishing(build_run_id, finish_in(warehouse)) as run:
        from flows.runner import scheduler_address, with_runner
        with scheduler_address(cfg) as address:  # None unless runner: dask
            for stage, stage_flow in STAGE_FLOWS.items():
                out.stages[stage] = with_runner(stage_flow, address)(warehouse, config,
                                                                     build_run_id)
        with _warehouse(warehouse) as wh:
            out.report = build_report(wh, cfg, out)
        out.markdown = publish(out)
        run.summary = out.report
    return out


def _start_build(root: str, cfg: BuildConfig) -> str:
    """A `build` run row; a killed build of the same config is the one this run resumes."""
    resolved = cfg.resolved()
    with _warehouse(root) as wh:
        rows = wh.sql("select run_id, config, status from runs where kind = 'build' "
                      "order by started_at desc").to_pylist()
        want = config_hash(resolved)
        earlier = next((r["run_id"] for r in rows if r["status"] in ("running", "interrupted")
                        and _config_hash_of(r["config"]) == want), "")
        return wh.start_run("build", resolved, resumed_from=earlier)


def _config_hash_of(text: str) -> str:
    import json
    try:
        return config_hash(json.loads(text))
    except ValueError:
        return ""
