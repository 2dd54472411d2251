"""CLI commands of the pipeline: `build`, `verify`, `deploy` (kept light to import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    ApiKeyEnvOpt, EndpointOpt, ModelOpt, UserError, WarehouseOpt, add_command, open_warehouse,
    user_errors,
)
from datagen.cli_model import wants_local_endpoint, with_local_endpoint

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
    from flows.config import check_backend
    check_backend(backend, model)  # before a model server starts for a build that can't run
    if wants_local_endpoint(model, endpoint, backend):
        return with_local_endpoint(build, params)
    from datagen.prefect_home import own_prefect_home_checked
    own_prefect_home_checked()  # before anything imports Prefect: it reads its settings once
    from flows.report import print_build_report
    from flows.run import build_config, run_build_with_progress
    root = _root(warehouse)
    cfg = build_config(root, config, seeds=seeds or None, seed=seed, endpoint=endpoint,
                       model_name=model, api_key_env=api_key_env, backend=backend)
    print_build_report(run_build_with_progress(root, cfg).report, root)


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
    from flows.verify import StageError, run_verify, summary_lines
    with open_warehouse(warehouse) as wh:
        try:
            summary = run_verify(wh, VerifyConfig(decontamination=decontamination), where=where,
                                 pages=page_tools(wh))
        except StageError as exc:
            raise UserError(str(exc)) from None
    typer.echo("\n".join(summary_lines(summary)))


@user_errors
def deploy(config: BuildConfigOpt = None, cron: CronOpt = None,
           warehouse: WarehouseOpt = None) -> None:
    """Serve the build and stage flows as Prefect deployments (needs PREFECT_API_URL).

    Serves until Ctrl-C or SIGTERM. Trigger a run with
    `prefect deployment run build/datagen-build` and watch it in the Prefect UI.
    """
    from flows.config import load_build_config
    from flows.run import check_deploy, serve_until_stopped
    check_deploy(cron)
    cfg = load_build_config(config)
    serve_until_stopped(_root(warehouse), cfg, cron)


def _root(warehouse: Path | None) -> Path:
    with open_warehouse(warehouse) as wh:
        return wh.root
