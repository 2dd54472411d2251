"""The data stages as small typed Prefect tasks.

A task gets the warehouse root, its stage config (plain JSON) and the build run's id, and
returns a `StageResult` (the stage run's id, its row count, its summary) — never rows. Its
cache key is the stage, the hash of its resolved config and warehouse, and the snapshot that
last changed its inputs, so a rerun of the same config skips finished work. The warehouse
stays the source of truth: `with_rows` reruns a cached task whose rows are gone. `STAGES`
is the one table of the stages: their tables and entry points, whole and per shard.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Protocol

from prefect import task

from flows.config import config_hash
from flows.verify import in_ids

if TYPE_CHECKING:
    from datagen.tools import PageTools
    from warehouse import Warehouse
    from warehouse.lineage import Finish

Progress = Callable[[int, int], None]


# The CLI's progress display; tasks run in the flow's thread, where this is set.
PROGRESS: contextvars.ContextVar[Callable[[str, int, int], None] | None] = \
    contextvars.ContextVar("datagen_build_progress", default=None)


@dataclass(frozen=True)
class StageResult:
    stage: str
    run_id: str
    cache_key: str
    rows: int  # rows the stage's run wrote to its output table
    summary: dict[str, Any] = field(default_factory=dict)


class StageSummary(Protocol):
    """What every stage's entry point returns: its run's id and a JSON-able summary."""

    run_id: str

    def as_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Stage:
    """One data stage: the table it writes, the tables whose changes invalidate its cache,
    its entry point on the whole stage (`run`) and on one shard (`run_part`, the Dask
    runner's), and which model endpoint it holds a slot of (None: it uses none)."""

    name: str
    output: str
    inputs: tuple[str, ...]
    run: Callable[["Warehouse", dict[str, Any], str, Progress | None], StageSummary]
    run_part: Callable[["Warehouse", dict[str, Any], dict[str, Any], str], StageSummary]
    endpoint: Callable[[dict[str, Any]], tuple[str, int] | None] = lambda cfg: None


def stage_key(stage: str, root: str, cfg: dict[str, Any], snapshot: int) -> str:
    return f"datagen-{stage}-{config_hash([root, cfg])}-s{snapshot}"


def input_snapshot(wh: "Warehouse", stage: str) -> int:
    """The last snapshot that changed the stage's inputs (0 for the crawl: its input is the
    seed list, which is part of its config)."""
    tables = STAGES[stage].inputs
    return wh.last_changed(tables) if tables else 0


def rows_present(wh: "Warehouse", result: StageResult) -> bool:
    """Are the rows a (possibly cached) stage result claims still in the warehouse?"""
    if not result.run_id:
        return False
    return rows_of(wh, result.stage, result.run_id) == result.rows


def rows_of(wh: "Warehouse", stage: str, run_id: str) -> int:
    """Rows of the stage's output table written by one run."""
    table = wh.sql(f"select count(*) as n from {STAGES[stage].output} where run_id = ?", [run_id])
    return int(table.column("n")[0].as_py())


def _key_fn(context, parameters: dict[str, Any]) -> str:
    return parameters["cache_key"]


def _retryable(task, task_run, state) -> bool:
    """Retry only what a retry can fix: a busy catalog, a dropped connection, a timeout."""
    from warehouse.errors import WarehouseError
    exc = state.result(raise_on_failure=False)
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return isinstance(exc, WarehouseError) and "locked" in str(exc).lower()


@contextlib.contextmanager
def _warehouse(root: str) -> Iterator["Warehouse"]:
    import warehouse
    wh = warehouse.open(root)
    try:
        yield wh
    finally:
        wh.close()


def finish_in(root: str) -> "Finish":
    """A `finishing` callback that opens the warehouse at `root` to finish the run: a flow
    holds no warehouse open while its stages (which open their own) run."""
    def finish(run_id: str, status: str, summary: Mapping[str, object]) -> None:
        with _warehouse(root) as wh:
            wh.finish_run(run_id, status, summary)
    return finish


def _progress(stage: str) -> Progress | None:
    report = PROGRESS.get()
    return None if report is None else (lambda done, total: report(stage, done, total))


def worker_id() -> str:
    """host:pid of the process a task runs in (the proof of where it ran)."""
    return f"{socket.gethostname()}:{os.getpid()}"


TASK_OPTS = dict(cache_key_fn=_key_fn, persist_result=True, retries=2, retry_delay_seconds=3,
                 retry_condition_fn=_retryable)


@task(name="stage", **TASK_OPTS)
def stage_task(stage: str, root: str, cfg: dict[str, Any], parent_run_id: str, cache_key: str,
               part: dict[str, Any] | None = None) -> StageResult:
    """One stage (or, with `part`, one shard of it: the Dask runner's) on the warehouse at
    `root`, holding a slot of its model endpoint's limit for the whole task."""
    spec = STAGES[stage]
    with _warehouse(root) as wh, endpoint_slot(spec.endpoint(cfg)):
        if part is None:
            summary = spec.run(wh, cfg, parent_run_id, _progress(stage))
            extra: dict[str, Any] = {}
        else:
            summary = spec.run_part(wh, cfg, part, parent_run_id)
            extra = {"worker": worker_id()}
        n = rows_of(wh, stage, summary.run_id)
        return StageResult(stage, summary.run_id, cache_key, n, {**summary.as_dict(), **extra})


def stage_task_named(stage: str, part: dict[str, Any] | None = None, *, refresh: bool = False):
    """`stage_task` under the name Prefect shows: the stage's (`crawl`, ...) or `shard`."""
    opts: dict[str, Any] = {"refresh_cache": True} if refresh else {}
    return stage_task.with_options(name=stage if part is None else "shard", **opts)


def with_rows(root: str, n: int,
              start: Callable[[int, bool], Callable[[], StageResult]]) -> list[StageResult]:
    """The results of `n` (possibly cached) tasks, each whose rows are gone from the warehouse
    run again without its cache: the warehouse is the source of truth. `start(i, refresh)`
    starts task i and returns what waits for its result."""
    results = [wait() for wait in [start(i, False) for i in range(n)]]
    with _warehouse(root) as wh:
        redo = [i for i, r in enumerate(results) if not rows_present(wh, r)]
    for i, wait in [(i, start(i, True)) for i in redo]:
        results[i] = wait()
    return results


def parent_of(root: str, run_id: str) -> str:
    """The parent run of `run_id` ('' if none or unknown)."""
    with _warehouse(root) as wh:
        rows = wh.sql("select parent_run_id from runs where run_id = ?", [run_id]).to_pylist()
    return (rows[0]["parent_run_id"] or "") if rows else ""


# ---- the stages' entry points -----------------------------------------------------------

def _crawl(wh, cfg: dict[str, Any], parent: str, progress: Progress | None) -> StageSummary:
    """Crawl the seeds (or serve and crawl the demo world); stored pages are not re-requested."""
    from datagen.crawl import CrawlConfig, crawl_demo, run_crawl
    on_progress = None if progress is None else (
        lambda s: progress(s.attempted, max(s.discovered, s.attempted)))
    settings = {k: v for k, v in cfg.items() if k != "demo"}
    demo = cfg.get("demo")
    if demo is not None:
        return crawl_demo(wh, n=demo["entities"], seed=demo["seed"], on_progress=on_progress,
                          parent_run_id=parent, **settings)
    return run_crawl(CrawlConfig(**settings), wh, on_progress, parent_run_id=parent)


def _crawl_part(wh, cfg: dict[str, Any], part: dict[str, Any], parent: str) -> StageSummary:
    from datagen.crawl import CrawlConfig, run_crawl
    return run_crawl(CrawlConfig(**{**cfg, "seeds": part["seeds"]}), wh, parent_run_id=parent)


def _compose(wh, cfg: dict[str, Any], parent: str, progress: Progress | None,
             shard: tuple[int, int] | None = None) -> StageSummary:
    """Seeds and composed questions from the stored pages."""
    from datagen.compose import ComposeConfig, run_compose
    on_progress = None if progress is None else (lambda s: progress(s.seeds_done, s.seeds_total))
    return run_compose(wh, ComposeConfig(**cfg), parent_run_id=parent, progress=on_progress,
                       shard=shard)


def _compose_part(wh, cfg: dict[str, Any], part: dict[str, Any], parent: str) -> StageSummary:
    return _compose(wh, cfg, parent, None, shard=tuple(part["shard"]))


def _verify(wh, cfg: dict[str, Any], parent: str, progress: Progress | None) -> StageSummary:
    """Every question check on the questions that lack a verdict."""
    from flows.config import VerifyConfig
    from flows.verify import run_verify
    return run_verify(wh, VerifyConfig(**cfg), parent_run_id=parent, pages=page_tools(wh),
                      progress=progress)


def _verify_part(wh, cfg: dict[str, Any], part: dict[str, Any], parent: str) -> StageSummary:
    from flows.config import VerifyConfig
    from flows.verify import run_verify_part
    return run_verify_part(wh, VerifyConfig(**cfg), part, parent)


def _band(wh, cfg: dict[str, Any], parent: str, progress: Progress | None) -> StageSummary:
    """Solver attempts -> pass rates -> bands for the verified questions."""
    from difficulty import BandConfig, run_band
    return run_band(wh, BandConfig(**cfg), parent_run_id=parent, progress=progress)


def _band_part(wh, cfg: dict[str, Any], part: dict[str, Any], parent: str) -> StageSummary:
    from difficulty import BandConfig, run_band
    where = in_ids(part["ids"])
    where = f"({cfg['where']}) and {where}" if cfg.get("where") else where
    return run_band(wh, BandConfig(**{**cfg, "where": where, "plot": False}),
                    parent_run_id=parent)


def page_tools(wh: "Warehouse") -> "PageTools":
    """The search tools over `wh`'s pages that the verify stage hands its checks."""
    from datagen.tools import PageTools
    return PageTools.open(wh)


def _endpoint_if(key: str) -> Callable[[dict[str, Any]], tuple[str, int] | None]:
    """The endpoint (url, concurrency) of a stage whose `key` setting says `llm`."""
    def endpoint(cfg: dict[str, Any]) -> tuple[str, int] | None:
        if cfg.get(key) != "llm" or not cfg.get("endpoint"):
            return None
        return cfg["endpoint"], int(cfg.get("max_concurrency") or 8)
    return endpoint


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("crawl", "fetches", (), _crawl, _crawl_part),
    Stage("compose", "questions", ("pages",), _compose, _compose_part, _endpoint_if("backend")),
    Stage("verify", "verdicts", ("questions",), _verify, _verify_part),
    Stage("band", "difficulty", ("questions", "verdicts"), _band, _band_part,
          _endpoint_if("solver")),
)}


@contextlib.contextmanager
def endpoint_slot(endpoint: tuple[str, int] | None) -> Iterator[None]:
    """Hold one slot of the endpoint's global concurrency limit for the whole task (not per
    request: the client bounds its own requests). The limit is created when missing —
    Prefect silently skips a limit that does not exist."""
    if endpoint is None:
        yield
        return
    from prefect.concurrency.sync import concurrency
    name = ensure_endpoint_limit(*endpoint)
    with concurrency(name, occupy=1, strict=True):
        yield


def ensure_endpoint_limit(endpoint: str, limit: int) -> str:
    """The name of the endpoint's global concurrency limit, `llm-HOST-PORT` (the host's dots
    as underscores), created with `limit` slots unless it exists (an existing one keeps its
    slots)."""
    from urllib.parse import urlparse

    from prefect import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound
    url = urlparse(endpoint)
    name = f"llm-{url.hostname}-{url.port or ''}".rstrip("-").replace(".", "_")
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(name=name, limit=limit))
    return name
