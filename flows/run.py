"""Running the build flow from the CLI: Prefect's ephemeral API unless PREFECT_API_URL is set.

`build_config` is the build's config as the CLI gives it (a mistake leaves a failed run row);
`run_build` checks what the build needs (flows/preflight.py: a problem is a failed run row and
one line, before the crawl) and runs the flow, stopped by one SIGTERM as by Ctrl-C
(warehouse/runs.py): what the stages committed stays, the runs are marked interrupted, a
served model and Prefect's ephemeral API server are stopped. `serve_until_stopped` runs the
same checks before it serves the build as a deployment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from warehouse.runs import sigterm_arrived, sigterm_interrupts
from flows.config import BuildConfig, load_build_config


def build_config(root: Path | str, path: Path | None, **overrides: object) -> BuildConfig:
    """`load_build_config`; a config that cannot start a build still leaves a `failed` run
    row in the warehouse at `root` saying why (ConfigError / ValueError, raised again)."""
    try:
        return load_build_config(path, **overrides)  # type: ignore[arg-type]
    except ValueError as exc:
        record_failed_build(root, path, str(exc))
        raise


def run_build(root: Path | str, cfg: BuildConfig,
              progress: Callable[[str, int, int], None] | None = None):
    """Run the `build` flow on the warehouse at `root` once its preflight passes; returns its
    `BuildResult`."""
    check_before_build(root, cfg)
    return _run_flow(root, cfg, progress)


def check_before_build(root: Path | str, cfg: BuildConfig) -> None:
    """`preflight.check_build`; a build it stops still leaves a `failed` run row saying why."""
    from flows.preflight import PreflightError, check_build
    try:
        check_build(root, cfg)
    except PreflightError as exc:
        record_failed_build(root, None, str(exc))
        raise


def _run_flow(root: Path | str, cfg: BuildConfig,
              progress: Callable[[str, int, int], None] | None):
    """The `build` flow under Prefect's settings for a CLI run, stopped by one SIGTERM."""
    from prefect.settings import (
        PREFECT_SERVER_ANALYTICS_ENABLED, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    from flows.build import build_flow
    from flows.stages import PROGRESS
    token = PROGRESS.set(progress)
    # A busy 2-core machine can take longer than Prefect's 20 s to start its ephemeral API;
    # and an offline machine would log a failed telemetry call at every build.
    settings = {PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 180,
                PREFECT_SERVER_ANALYTICS_ENABLED: False}
    try:
        with sigterm_interrupts(), temporary_settings(settings):
            try:
                return build_flow(str(root), cfg.model_dump(exclude_none=True))
            except Exception as exc:
                if sigterm_arrived():  # the stop surfaced as an error (warehouse/runs.py)
                    raise KeyboardInterrupt from exc
                raise
    finally:
        PROGRESS.reset(token)


class BuildFailed(ValueError):
    """A stage failed: one line for the CLI (the build's run row says failed and why)."""


def run_build_with_progress(root: Path | str, cfg: BuildConfig):
    """`run_build` under one bar per stage on stderr (a terminal's); Prefect's own logs only
    with -v; a failed preflight raises its PreflightError before any bar, a failed stage
    BuildFailed, each one line."""
    import logging

    from datagen.tables import progress_bar
    from flows.stages import STAGES
    check_before_build(root, cfg)
    quiet = logging.getLogger().level > logging.DEBUG
    for name in ("prefect", "prefect.flow_runs", "prefect.task_runs", "prefect.engine"):
        logging.getLogger(name).setLevel(logging.CRITICAL if quiet else logging.INFO)
    with progress_bar("{task.description:<8}", transient=False) as bar:
        tasks = {s: bar.add_task(s, total=None, start=False) for s in STAGES}

        def report(stage: str, done: int, total: int) -> None:
            bar.start_task(tasks[stage])
            bar.update(tasks[stage], completed=done, total=max(total, done))
        try:
            return _run_flow(root, cfg, report)
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            raise BuildFailed(f"build failed: {type(exc).__name__}: {exc}") from None


def check_deploy(cron: str | None) -> None:
    """A Prefect server to deploy to, and a cron expression Prefect takes (ValueError if not)."""
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.settings import PREFECT_API_URL
    if not PREFECT_API_URL.value():
        raise ValueError("no Prefect server configured: start one with `prefect server start` "
                         "and export PREFECT_API_URL=http://127.0.0.1:4200/api")
    if cron is None:
        return
    try:
        CronSchedule(cron=cron)
    except ValueError:
        raise ValueError(f"--cron '{cron}' is not a cron expression (e.g. '0 3 * * *')") from None


def record_failed_build(root: Path | str, config_file: Path | None, reason: str) -> None:
    """A build that cannot start still leaves a `failed` run row saying why."""
    import warehouse
    wh = warehouse.open(root)
    try:
        run_id = wh.start_run("build", {"config_file": str(config_file) if config_file else None})
        wh.finish_run(run_id, "failed", {"error": reason})
    finally:
        wh.close()


def serve_deployments(root: Path | str, cfg: BuildConfig, cron: str | None) -> None:
    """Serve `build` (on the cron schedule) and the stage flows as deployments until stopped."""
    from prefect import serve

    from flows.build import STAGE_FLOWS, build_flow
    params = {"warehouse": str(root), "config": cfg.model_dump(exclude_none=True)}
    deployments = [build_flow.to_deployment(name="datagen-build", cron=cron, parameters=params)]
    deployments += [f.to_deployment(name=f"datagen-{name}", parameters=params)
                    for name, f in STAGE_FLOWS.items()]
    serve(*deployments, print_starting_message=False)


def serve_until_stopped(root: Path | str, cfg: BuildConfig, cron: str | None) -> None:
    """`serve_deployments`, saying so on stderr, until Ctrl-C or SIGTERM ("stopped")."""
    import sys

    from flows.preflight import check_build
    check_build(root, cfg)
    print(f"serving datagen-build (cron: {cron or 'none'}) and the stage flows for "
          f"warehouse {root}; Ctrl-C to stop", file=sys.stderr)
    try:
        with sigterm_interrupts():
            serve_deployments(root, cfg, cron)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
