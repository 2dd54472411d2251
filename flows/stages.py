"""The data stages as small typed Prefect tasks.

A task gets the warehouse root, its stage config (plain JSON) and the build run's id, and
returns a `StageResult` (the stage run's id, its row count, its summary) — never rows. Its
cache key is the stage, the hash of its resolved config and warehouse, and the snapshot that
last changed its inputs, so a rerun of the same config skips finished work. The warehouse
stays the source of truth: `run_stage` recomputes a cached stage whose rows are gone.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from prefect import task

from flows.config import config_hash

OUTPUT_TABLE = {"crawl": "fetches", "compose": "questions", "verify": "verdicts",
                "band": "difficulty"}
INPUT_TABLES = {"crawl": (), "compose": ("pages",), "verify": ("questions",),
                "band": ("questions", "verdicts")}

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


def stage_key(stage: str, root: str, cfg: dict[str, Any], snapshot: int) -> str:
    return f"datagen-{stage}-{config_hash([root, cfg])}-s{snapshot}"


def input_snapshot(wh, stage: str) -> int:
    """The last snapshot that changed the stage's inputs (0 for the crawl: its input is the
    seed list, which is part of its config)."""
    tables = INPUT_TABLES[stage]
    return wh.last_changed(tables) if tables else 0


def rows_present(wh, result: StageResult) -> bool:
    """Are the rows a (possibly cached) stage result claims still in the warehouse?"""
    if not result.run_id:
        return False
    return rows_of(wh, result.stage, result.run_id) == result.rows


def rows_of(wh, stage: str, run_id: str) -> int:
    """Rows of the stage's output table written by one run."""
    table = wh.sql(f"select count(*) as n from {OUTPUT_TABLE[stage]} where run_id = ?", [run_id])
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
def _warehouse(root: str) -> Iterator[Any]:
    import warehouse
    wh = warehouse.open(root)
    try:
        yield wh
    finally:
        wh.close()


def _progress(stage: str) -> Callable[[int, int], None] | None:
    report = PROGRESS.get()
    return None if report is None else (lambda done, total: report(stage, done, total))


def _result(stage: str, wh, summary: Any, key: str) -> StageResult:
    n = rows_of(wh, stage, summary.run_id)
    return StageResult(stage, summary.run_id, key, n, summary.as_dict())


TASK_OPTS = dict(cache_key_fn=_key_fn, persist_result=True, retries=2, retry_delay_seconds=3,
                 retry_condition_fn=_retryable)


@task(name="crawl", **TASK_OPTS)
def crawl_task(root: str, cfg: dict[str, Any], parent_run_id: str, cache_key: str,
               demo: dict[str, Any] | None = None) -> StageResult:
    """Crawl the seeds (or serve and crawl the demo world); stored pages are not re-requested."""
    from datagen.crawl import CrawlConfig, crawl_demo, run_crawl
    report = _progress("crawl")
    on_progress = None if report is None else (
        lambda s: report(s.attempted, max(s.discovered, s.attempted)))
    with _warehouse(root) as wh:
        if demo is not None:
            summary = crawl_demo(wh, n=demo["entities"], seed=demo["seed"], on_progress=on_progress,
                                 parent_run_id=parent_run_id, **cfg)
        else:
            summary = run_crawl(CrawlConfig(**cfg), wh, on_progress, parent_run_id=parent_run_id)
        return _result("crawl", wh, summary, cache_key)


@task(name="compose", **TASK_OPTS)
def compose_task(root: str, cfg: dict[str, Any], parent_run_id: str,
                 cache_key: str) -> StageResult:
    """Seeds and composed questions from the stored pages."""
    from datagen.compose import ComposeConfig, run_compose
    with _warehouse(root) as wh, endpoint_slot(cfg):
        report = _progress("compose")
        on_progress = None if report is None else (lambda s: report(s.seeds_done, s.seeds_total))
        summary = run_compose(wh, ComposeConfig(**cfg), parent_run_id=parent_run_id,
                              progress=on_progress)
        return _result("compose", wh, summary, cache_key)


@task(name="verify", **TASK_OPTS)
def verify_task(root: str, cfg: dict[str, Any], parent_run_id: str,
                cache_key: str) -> StageResult:
    """Every question check on the questions that lack a verdict."""
    from flows.config import VerifyConfig
    from flows.verify import run_verify
    with _warehouse(root) as wh:
        extra = {"page_tools": _page_tools(wh)}
        summary = run_verify(wh, VerifyConfig(**cfg), parent_run_id=parent_run_id, extra=extra,
                             progress=_progress("verify"))
        return _result("verify", wh, summary, cache_key)


@task(name="band", **TASK_OPTS)
def band_task(root: str, cfg: dict[str, Any], parent_run_id: str,
              cache_key: str) -> StageResult:
    """Solver attempts -> pass rates -> bands for the verified questions."""
    from difficulty import BandConfig, run_band
    with _warehouse(root) as wh, endpoint_slot(cfg):
        summary = run_band(wh, BandConfig(**cfg), parent_run_id=parent_run_id,
                           progress=_progress("band"))
        return _result("band", wh, summary, cache_key)


def _page_tools(wh) -> Any:
    from datagen.tools import PageTools
    return PageTools.open(wh)


@contextlib.contextmanager
def endpoint_slot(cfg: dict[str, Any]) -> Iterator[None]:
    """Hold one slot of the endpoint's global concurrency limit for the whole task (not per
    request: the client bounds its own requests). The limit is created when missing —
    Prefect silently skips a limit that does not exist."""
    kind = cfg.get("backend", cfg.get("solver"))   # compose has a backend, band a solver
    if not cfg.get("endpoint") or kind == "embedded":
        yield
        return
    from prefect.concurrency.sync import concurrency
    name = ensure_endpoint_limit(cfg["endpoint"], int(cfg.get("max_concurrency") or 8))
    with concurrency(name, occupy=1, strict=True):
        yield


def ensure_endpoint_limit(endpoint: str, limit: int) -> str:
    """Create the global concurrency limit `llm:<host:port>` unless it exists; its name."""
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
