"""CLI commands of the pipeline: `build`, `verify`, `deploy` (kept light to import)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    ApiKeyEnvOpt, EndpointOpt, ModelOpt, UserError, WarehouseOpt, add_command, is_tty,
    open_warehouse, stderr_console, user_errors,
)

STAGES = ("crawl", "compose", "verify", "band")
BuildConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", help="YAML/TOML/JSON file of BuildConfig fields (see examples/build.yaml); "
                     "flags override it.")]
BuildSeedsArg = Annotated[Optional[list[str]], typer.Argument(
    help="URLs, sitemaps or folders; none: the built-in demo world (offline).")]
BackendOpt = Annotated[Optional[str], typer.Option(
    "--backend", help="The composer: embedded (no model) or llm (needs --model; without "
                      "--endpoint the model is served by vLLM for the build).")]
_SeedOpt = Annotated[Optional[int], typer.Option(
    "--seed", help="Random seed of every stage (same seed, same ids).")]
CronOpt = Annotated[Optional[str], typer.Option(
    "--cron", help="Cron schedule of the build, e.g. '0 3 * * *' (none: on demand).")]


def register(app: typer.Typer) -> None:
    add_command(app, "build", build)
    add_command(app, "verify", verify)
    add_command(app, "deploy", deploy)


@user_errors
def build(seeds: BuildSeedsArg = None, config: BuildConfigOpt = None, endpoint: EndpointOpt = None,
          model: ModelOpt = None, api_key_env: ApiKeyEnvOpt = None, seed: _SeedOpt = None,
          backend: BackendOpt = None, warehouse: WarehouseOpt = None) -> None:
    """Run the whole pipeline: crawl -> compose -> verify -> band, resumable after a crash.

    With no seeds it builds, serves and crawls the demo world, so a fresh machine gets a full
    warehouse offline. Running it again with the same config skips finished stages.
    """
    params = dict(locals())
    from datagen.cli_model import wants_local_endpoint, with_local_endpoint
    from flows.config import check_backend
    check_backend(backend, model)  # before a model server starts for a build that can't run
    if wants_local_endpoint(model, endpoint, backend):
        return with_local_endpoint(build, params)
    _own_prefect_home()  # before anything imports Prefect: it reads its settings once
    from flows.run import build_config
    root = _root(warehouse)
    cfg = build_config(root, config, seeds=seeds or None, seed=seed, endpoint=endpoint,
                       model_name=model, api_key_env=api_key_env, backend=backend)
    _print_report(_run_with_progress(root, cfg).report, root)


@user_errors
def verify(
    where: Annotated[Optional[str], typer.Option(
        "--where", help="SQL condition over questions (default: those missing a verdict).")] = None,
    decontamination: Annotated[str, typer.Option(
        "--decontamination", help="hub, off, or a folder of benchmark JSONL files.")] = "hub",
    warehouse: WarehouseOpt = None,
) -> None:
    """Re-run every question check (after adding one, or on questions of an older build)."""
    from flows.config import VerifyConfig
    from flows.stages import page_tools
    from flows.verify import StageError, run_verify
    cfg = VerifyConfig(decontamination=decontamination)
    wh = open_warehouse(warehouse)
    try:
        summary = run_verify(wh, cfg, where=where, pages=page_tools(wh))
    except StageError as exc:
        raise UserError(str(exc)) from None
    finally:
        wh.close()
    typer.echo(f"checked {summary.questions} questions: {summary.passed_all} passed every check, "
               f"{summary.verdicts} verdicts written (run {summary.run_id})")
    for name, counts in summary.by_check.items():
        typer.echo(f"  {name}: pass {counts['pass']} fail {counts['fail']} error {counts['error']}")


@user_errors
def deploy(config: BuildConfigOpt = None, cron: CronOpt = None,
           warehouse: WarehouseOpt = None) -> None:
    """Serve the build and stage flows as Prefect deployments (needs PREFECT_API_URL).

    Serves until Ctrl-C or SIGTERM. Trigger a run with
    `prefect deployment run build/datagen-build` and watch it in the Prefect UI.
    """
    from flows.config import load_build_config
    from flows.run import serve_deployments
    from warehouse.runs import sigterm_interrupts
    _check_deploy(cron)
    cfg = load_build_config(config)
    root = _root(warehouse)
    typer.echo(f"serving datagen-build (cron: {cron or 'none'}) and the stage flows for "
               f"warehouse {root}; Ctrl-C to stop", err=True)
    try:
        with sigterm_interrupts():
            serve_deployments(root, cfg, cron)
    except KeyboardInterrupt:
        typer.echo("stopped", err=True)


def _own_prefect_home() -> None:
    """The build's Prefect database apart from other Prefect installs; one line if unusable."""
    from datagen.prefect_home import database_problem, use_own_prefect_home
    use_own_prefect_home()
    if problem := database_problem():
        raise UserError(problem)


def _check_deploy(cron: str | None) -> None:
    """A Prefect server to deploy to, and a cron expression Prefect takes."""
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.settings import PREFECT_API_URL
    if not PREFECT_API_URL.value():
        raise UserError("no Prefect server configured: start one with `prefect server start` "
                        "and export PREFECT_API_URL=http://127.0.0.1:4200/api")
    if cron is None:
        return
    try:
        CronSchedule(cron=cron)
    except ValueError:
        raise UserError(f"--cron '{cron}' is not a cron expression (e.g. '0 3 * * *')") from None


def _root(warehouse: Path | None) -> Path:
    wh = open_warehouse(warehouse)
    root = wh.root
    wh.close()
    return root


def _run_with_progress(root: Path, cfg):
    import logging

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from flows import run_build
    quiet = logging.getLogger().level > logging.DEBUG  # -v shows Prefect's own logs
    for name in ("prefect", "prefect.flow_runs", "prefect.task_runs", "prefect.engine"):
        logging.getLogger(name).setLevel(logging.CRITICAL if quiet else logging.INFO)
    columns = (TextColumn("{task.description:<8}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), disable=not is_tty()) as bar:
        tasks = {s: bar.add_task(s, total=None, start=False) for s in STAGES}

        def report(stage: str, done: int, total: int) -> None:
            bar.start_task(tasks[stage])
            bar.update(tasks[stage], completed=done, total=max(total, done))
        try:
            return run_build(root, cfg, report)
        except (UserError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a failed stage: one line; the run row says failed + why
            raise UserError(f"build failed: {type(exc).__name__}: {exc}") from None


def _print_report(report: dict, root: Path) -> None:
    from rich.console import Console

    from flows.report import NEXT_COMMANDS
    console = Console(file=sys.stdout, width=max(100, Console().width))
    console.print(_report_table(report))
    stages = ", ".join(f"{k} {v['seconds']:.0f} s{' (cached)' if v['cached'] else ''}"
                       for k, v in report["stages"].items())
    console.print(f"stages: {stages}; decontamination {report['decontamination']}; "
                  f"warehouse {root}")
    console.print("next: " + "\n      ".join(NEXT_COMMANDS))


def _report_table(report: dict):
    from rich.table import Table
    table = Table(title=f"datagen build {report['build_run_id']}", title_justify="left")
    table.add_column("what")
    table.add_column("count", justify="right")
    rows = [("pages stored", report["pages"])]
    rows += [(f"fetches {k} (this build)", n) for k, n in report["fetches"].items()]
    rows += [("seed questions (1 hop)", report["seeds"])]
    rows += [(f"questions with {k} hops", n) for k, n in report["questions_by_hops"].items()]
    rows += [(f"compose rejected: {k}", n) for k, n in list(report["compose_rejected"].items())[:8]]
    rows += [(f"verify failed: {k}", n) for k, n in list(report["verify_failed"].items())[:8]]
    rows += [(f"train_ready {k}", n) for k, n in report["train_ready_by_band"].items()]
    for what, n in rows + [("train_ready", report["train_ready"])]:
        table.add_row(what, str(n))
    return table
