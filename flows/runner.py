"""Where the build's tasks run: in the flow's own process (`runner: default`), or as tasks on
Dask workers through Prefect's Dask task runner (`runner: dask`).

On Dask, the stages that parallelise are cut into shards, one Prefect task each, and the
shards run on the workers at the same time:

    crawl    by host (seeds grouped by host; the crawl stays on its seeds' hosts)
    compose  by seed (run_compose(shard=(i, n)): the seeds whose stable hash is i mod n;
             unsharded when max_questions is set — a budget over all seeds)
    verify   the per-question checks by question batch (ids split into at most n contiguous
             ranges, none smaller than the stage's batch_size), and beside them one task
             with the checks over the whole set (near-duplicates: cut by range, it would
             miss a pair split across two ranges)
    band     by question batch (at most n ranges, none smaller than its batch_size)

A shard is the stage's own entry point on a subset (`run_verify(where=…)`,
`BandConfig.where`, `CrawlConfig.seeds`, `run_compose(shard=…)`): it opens the warehouse
itself and its rows land through the warehouse's atomic commits (a busy catalog is retried
there), with its own `runs` row whose parent is the stage's run; the stage's run (in the
flow's process) names the build as its parent, counts the shards' rows and lists the
workers that ran them.
A stage with one shard (the demo crawl: one host) runs its usual task on a worker.

The scheduler is `dask_address` (a team's running cluster) or, by default, a local cluster
of `dask_workers` processes started for the build and closed after it.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import urlparse

from flows.config import BuildConfig, config_hash
from flows.stages import (
    StageResult, _warehouse, finish_in, parent_of, stage_task_named, with_rows,
)
from warehouse.lineage import finishing

if TYPE_CHECKING:
    from flows.build import StageRun

SHARDS_PER_THREAD = 1  # one shard per worker thread


@contextlib.contextmanager
def scheduler_address(cfg: BuildConfig) -> Iterator[str | None]:
    """The scheduler address the build's stage flows submit to (None: default runner)."""
    if cfg.runner != "dask":
        yield None
        return
    if cfg.dask_address:
        yield cfg.dask_address
        return
    import logging

    import dask
    from distributed import LocalCluster
    # Workers must be allowed children: the demo crawl serves its site from a subprocess.
    # The scheduler runs in this process: its INFO lines are not the build's output.
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        with dask.config.set({"distributed.worker.daemon": False}), LocalCluster(
                n_workers=cfg.dask_workers, threads_per_worker=1, processes=True,
                dashboard_address=None, silence_logs=logging.WARNING, env=worker_env(),
                # no dashboard, and its HTTP routes on a free port (not 8787)
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as local:
            yield local.scheduler_address
    finally:
        log.setLevel(level)


def worker_env() -> dict[str, str]:
    """What the local workers need from the flow's process: its Prefect API (the ephemeral
    one this build started, else each worker would start its own) and its log level."""
    import logging

    from prefect import get_client
    with get_client(sync_client=True) as client:
        url = str(client.api_url)
    level = logging.getLevelName(logging.getLogger("prefect").getEffectiveLevel())
    return {"PREFECT_API_URL": url, "PREFECT_LOGGING_LEVEL": str(level),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


def with_runner(stage_flow, address: str | None):
    """`stage_flow` with the Dask task runner on `address` (unchanged without one)."""
    if address is None:
        return stage_flow
    from prefect_dask import DaskTaskRunner
    return stage_flow.with_options(task_runner=DaskTaskRunner(address=address))


# ---- planning ---------------------------------------------------------------------------

def plan_shards(stage: str, root: str, cfg: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The shards of one stage: each a dict of what narrows the stage to its part."""
    if stage == "crawl":
        return [] if cfg.get("demo") is not None else _by_host(cfg.get("seeds") or [])
    if stage == "compose":
        return [] if cfg.get("max_questions") else [{"shard": [i, n]} for i in range(n)]
    with _warehouse(root) as wh:
        ids = _verify_ids(wh) if stage == "verify" else _band_ids(wh, cfg)
    parts = [{"ids": part} for part in ranges(ids, n, int(cfg.get("batch_size") or 1))]
    return parts + [{"whole_set": True}] if stage == "verify" and parts else parts


def ranges(ids: list[str], n: int, batch: int) -> list[list[str]]:
    """`ids` in at most n contiguous ranges of at least one commit batch each: a shard pays a
    fixed start-up on its worker (the page index, the places gazetteer): on a busy machine
    that CPU is worth it for a batch or more, not for a handful of questions."""
    size = -(-len(ids) // max(1, min(n, len(ids) // max(1, batch))))
    return [ids[i:i + size] for i in range(0, len(ids), size)] if ids else []


def _by_host(seeds: list[str]) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for s in seeds:
        groups.setdefault(urlparse(s).netloc if "://" in s else "", []).append(s)
    return [{"seeds": g} for _, g in sorted(groups.items())]


def _verify_ids(wh) -> list[str]:
    return [r["question_id"] for r in wh.sql(
        "select distinct question_id from questions order by 1").to_pylist()]


def _band_ids(wh, cfg: dict[str, Any]) -> list[str]:
    from difficulty import BandConfig
    from difficulty.run import load_items
    items, _ = load_items(wh, BandConfig(**{**cfg, "plot": False}))
    return [it.question.question_id for it in items]


# ---- a stage on the workers -------------------------------------------------------------

def run_sharded(stage: str, root: str, cfg: dict[str, Any], build_run_id: str,
                key: str) -> "StageRun":
    """Run one stage's shards as concurrent tasks on the flow's (Dask) task runner and return
    its StageRun; one shard or none: the stage's usual task, submitted to a worker."""
    from flows.build import StageRun
    t0 = time.perf_counter()
    shards = plan_shards(stage, root, cfg, _shard_count())
    if len(shards) <= 1:
        [result] = with_rows(root, 1, lambda _, refresh: stage_task_named(
            stage, refresh=refresh).submit(stage, root, cfg, build_run_id, key).result)
        return StageRun(result, time.perf_counter() - t0,
                        parent_of(root, result.run_id) != build_run_id)
    stage_run = _stage_run(root, stage, cfg, build_run_id, key, len(shards))
    keys = [f"{key}-shard{i}of{len(shards)}-{config_hash(p)}" for i, p in enumerate(shards)]
    with finishing(stage_run, finish_in(root)) as run:
        results = _gather(stage, root, cfg, stage_run, keys, shards)
        run.summary = summary = {**merge(results), "key": key}
    result = StageResult(stage, stage_run, key, summary["rows"], summary)
    return StageRun(result, time.perf_counter() - t0, parent_of(root, stage_run) != build_run_id)


def _gather(stage: str, root: str, cfg: dict[str, Any], parent: str, keys: list[str],
            shards: list[dict[str, Any]]) -> list[StageResult]:
    """Submit every shard at once; a cached shard whose rows are gone is run again."""
    return with_rows(root, len(shards), lambda i, refresh: stage_task_named(
        stage, shards[i], refresh=refresh).submit(stage, root, cfg, parent, keys[i],
                                                  shards[i]).result)


def merge(results: list[StageResult]) -> dict[str, Any]:
    """The stage run's summary: rows and numeric counts summed over shards, the workers."""
    out: dict[str, Any] = {"runner": "dask", "shards": len(results),
                           "rows": sum(r.rows for r in results),
                           "shard_runs": [r.run_id for r in results],
                           "workers": sorted({r.summary.get("worker", "?") for r in results})}
    for r in results:
        for k, v in r.summary.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.setdefault("totals", {})[k] = out.get("totals", {}).get(k, 0) + v
    return out


def _shard_count() -> int:
    """SHARDS_PER_THREAD x the cluster's worker threads (1 outside a Dask task runner)."""
    from prefect.context import FlowRunContext
    ctx = FlowRunContext.get()  # None outside a flow run
    if ctx is None:
        return 1
    from prefect_dask import DaskTaskRunner  # run_sharded runs only under runner: dask
    runner = ctx.task_runner
    if not isinstance(runner, DaskTaskRunner):
        return 1
    threads = sum(runner.client.nthreads().values())
    return max(1, threads * SHARDS_PER_THREAD)


def _stage_run(root, stage, cfg, build_run_id, key, n) -> str:
    """The stage's own runs row (the shards' parent); the same key reuses a finished one, so a
    rerun whose shards are all cached reports the stage as cached."""
    with _warehouse(root) as wh:
        rows = wh.sql("select run_id from runs where kind = ? and status = 'succeeded' and "
                      "json_extract_string(summary, '$.key') = ? order by started_at desc "
                      "limit 1", [stage, key]).to_pylist()
        if rows:
            return rows[0]["run_id"]
        return wh.start_run(stage, {**cfg, "runner": "dask", "shards": n, "key": key},
                            parent_run_id=build_run_id)
