"""CLI command of the band stage: `datagen band` (kept light to import).

Builds the solver the flags name — the policy solver from training's inference engine,
which `difficulty` itself never imports — calls `difficulty.run_band`, and prints the
band x hops table with the plot's path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    UserError, WarehouseOpt, add_command, is_tty, read_config_section, user_errors,
)


def register(app: typer.Typer) -> None:
    add_command(app, "band", band)


@user_errors
def band(
    warehouse: WarehouseOpt = None,
    solver: Annotated[str, typer.Option(
        "--solver", help="embedded (no model), llm (--endpoint/--model) or policy:PATH "
                         "(a trainer checkpoint in HF format).")] = "embedded",
    where: Annotated[Optional[str], typer.Option(
        "--where", help="SQL filter on questions, e.g. \"hops >= 2\".")] = None,
    from_rollouts: Annotated[Optional[str], typer.Option(
        "--from-rollouts", help="Re-band from this training run's rollouts.")] = None,
    max_k: Annotated[Optional[int], typer.Option("--max-k", min=1,
                                                 help="Most attempts per question.")] = None,
    confidence: Annotated[Optional[float], typer.Option(
        "--confidence", help="Stop once one band has this posterior probability.")] = None,
    endpoint: Annotated[Optional[str], typer.Option(
        "--endpoint", help="OpenAI-compatible base URL (llm solver).")] = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", help="Model name (llm solver).")] = None,
    rollout_window: Annotated[Optional[int], typer.Option(
        "--rollout-window", min=0, help="Re-banding: each question's last N policy versions "
                                        "(0 pools all; default 1).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Run seed of the attempts.")] = None,
    no_tool_check: Annotated[bool, typer.Option(
        "--no-tool-check", help="llm/policy solvers: first write a no_tool_solvable verdict "
                                "(fail when answered without tools); failing questions "
                                "are then not banded.")] = False,
    config: Annotated[Optional[Path], typer.Option(
        "--config", help="YAML/JSON file with BandConfig fields; flags override it.")] = None,
) -> None:
    """Measure how hard each question is: solver attempts -> pass rate -> band.

    Adaptive k: attempts come in rounds until the band is decided. Prints a band x hops table
    and writes a PNG of the bands by hops beside the summary. `--solver llm --model NAME`
    without --endpoint serves the model with vLLM for the run.
    """
    params = dict(locals())
    from datagen.cli_model import wants_local_endpoint, with_local_endpoint
    if solver == "llm" and wants_local_endpoint(model, endpoint, None):
        return with_local_endpoint(band, params)
    cfg = _config(config, solver=solver, where=where, from_rollouts=from_rollouts, max_k=max_k,
                  confidence=confidence, endpoint=endpoint, model=model,
                  rollout_window=rollout_window, seed=seed)
    from datagen.cli_common import open_warehouse
    if no_tool_check and (cfg.solver == "embedded" or cfg.from_rollouts):
        raise UserError("--no-tool-check needs --solver llm or policy:PATH (a model to ask)")
    wh = open_warehouse(warehouse)
    try:
        built = None if cfg.from_rollouts else _solver(wh, cfg)
        if no_tool_check:
            _no_tool_check(wh, cfg, built)
        summary = _run(wh, cfg, built)
    finally:
        wh.close()
    print_summary(summary)


def _config(path: Optional[Path], **flags):
    from pydantic import ValidationError

    from difficulty import BandConfig
    data = read_config_section(path, "band", "BandConfig")
    data.update({k: v for k, v in flags.items() if v is not None})
    try:
        cfg = BandConfig(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"])) or "config"
        raise UserError(f"bad band setting {where}: {err['msg']}") from None
    return cfg


def _no_tool_check(wh, cfg, solver) -> None:
    from difficulty.notool import no_tool_check
    if cfg.solver == "llm":
        from difficulty.solvers.llm import make_llm_solver
        solver = make_llm_solver(wh, cfg, use_tools=False)
        try:
            counts = no_tool_check(wh, cfg, solver)
        finally:
            solver.close()
    else:
        counts = no_tool_check(wh, cfg, solver)
    typer.echo(f"no-tool check: {counts['fail']} answered without tools (verdict fail), "
               f"{counts['pass']} not", err=True)


def _solver(wh, cfg):
    if cfg.solver.startswith("policy:"):
        from datagen.models import resolve_model
        from training.evaluation.policies import policy_solver
        # A pulled registry name names its folder; training builds the solver (difficulty
        # never imports training) with the checkpoint's own tokenizer.
        return policy_solver(resolve_model(cfg.solver.split(":", 1)[1]))
    from difficulty.run import make_solver
    return make_solver(wh, cfg)


def _run(wh, cfg, solver):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from datagen.cli_common import stderr_console
    from difficulty import run_band
    columns = (TextColumn("band"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), disable=not is_tty(), transient=True) as bar:
        task = bar.add_task("band", total=None)
        try:
            return run_band(wh, cfg, solver=solver,
                            progress=lambda done, total: bar.update(task, completed=done,
                                                                    total=total))
        finally:
            if solver is not None:  # re-banding from rollouts asks no solver
                solver.close()


def print_summary(s) -> None:
    """Band x hops counts, mean pass rate per hop count, stop reasons, the plot's path."""
    from rich.console import Console
    from rich.table import Table

    from difficulty import BANDS
    table = Table(title=f"band {s.run_id} ({s.solver})", title_justify="left")
    table.add_column("hops")
    for b in BANDS:
        table.add_column(b, justify="right")
    table.add_column("total", justify="right")
    table.add_column("mean pass rate", justify="right")
    for hops, row in s.by_band_hops.items():
        table.add_row(hops, *(str(row.get(b, 0)) for b in BANDS), str(sum(row.values())),
                      f"{s.mean_pass_rate_by_hops.get(hops, 0.0):.3f}")
    console = Console(file=sys.stdout, width=max(100, Console().width))
    console.print(table)
    stops = ", ".join(f"{k} {v}" for k, v in sorted(s.stop_reasons.items()))
    console.print(f"{s.banded} banded ({s.skipped_already_banded} already banded, skipped), "
                  f"{s.attempts} attempts ({s.failed_attempts} failed); stops: {stops or '-'}")
    if s.plot_path:  # unwrapped, so scripts can pick the path up
        typer.echo(f"plot: {s.plot_path}")
