"""CLI command of the band stage: `datagen band` (kept light to import).

Parses the flags into a BandConfig, builds the policy solver a `policy:PATH` names (from
training's inference engine, which `difficulty` itself never imports), calls
`difficulty.stage.band_stage`, and prints the band x hops table with the plot's path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    EndpointOpt, ModelOpt, WarehouseOpt, add_command, is_tty, read_config_section, user_errors,
)


def register(app: typer.Typer) -> None:
    add_command(app, "band", band)


SolverOpt = Annotated[str, typer.Option(
    "--solver", help="embedded (no model), llm (--endpoint/--model) or policy:PATH "
                     "(a trainer checkpoint in HF format).")]
Where = Annotated[Optional[str], typer.Option(
    "--where", help="SQL filter on questions, e.g. \"hops >= 2\".")]
FromRollouts = Annotated[Optional[str], typer.Option(
    "--from-rollouts", help="Re-band from this training run's rollouts.")]
MaxK = Annotated[Optional[int], typer.Option("--max-k", min=1, help="Most attempts per question.")]
Confidence = Annotated[Optional[float], typer.Option(
    "--confidence", help="Stop once one band has this posterior probability.")]
RolloutWindow = Annotated[Optional[int], typer.Option(
    "--rollout-window", min=0, help="Re-banding: each question's last N policy versions "
                                    "(0 pools all; default 1).")]
_SeedOpt = Annotated[Optional[int], typer.Option("--seed", help="Run seed of the attempts.")]
NoToolCheck = Annotated[bool, typer.Option(
    "--no-tool-check", help="llm/policy solvers: first write a no_tool_solvable verdict "
                            "(fail when answered without tools); failing questions "
                            "are then not banded.")]
_ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", help="YAML/JSON file with BandConfig fields; flags override it.")]


@user_errors
def band(warehouse: WarehouseOpt = None, solver: SolverOpt = "embedded", where: Where = None,
         from_rollouts: FromRollouts = None, max_k: MaxK = None, confidence: Confidence = None,
         endpoint: EndpointOpt = None, model: ModelOpt = None,
         rollout_window: RolloutWindow = None, seed: _SeedOpt = None,
         no_tool_check: NoToolCheck = False, config: _ConfigOpt = None) -> None:
    """Measure how hard each question is: solver attempts -> pass rate -> band.

    Adaptive k: attempts come in rounds until the band is decided. Prints a band x hops table
    and writes a PNG of the bands by hops beside the summary. `--solver llm --model NAME`
    without --endpoint serves the model with vLLM for the run.
    """
    params = dict(locals())
    from datagen.cli_model import wants_local_endpoint, with_local_endpoint
    if solver == "llm" and wants_local_endpoint(model, endpoint, None):
        return with_local_endpoint(band, params)
    from difficulty.stage import band_config
    cfg = band_config(read_config_section(config, "band", "BandConfig"), solver=solver,
                      where=where, from_rollouts=from_rollouts, max_k=max_k,
                      confidence=confidence, endpoint=endpoint, model=model,
                      rollout_window=rollout_window, seed=seed)
    result = _run(warehouse, cfg, no_tool_check)
    if no_tool_check:
        typer.echo(f"no-tool check: {result.no_tool['fail']} answered without tools (verdict "
                   f"fail), {result.no_tool['pass']} not", err=True)
    print_summary(result.summary)


def _policy_solver(cfg):
    """The policy solver `policy:PATH` names, built by training (difficulty never imports
    training) with the checkpoint's own tokenizer; None for the other solvers."""
    if not cfg.solver.startswith("policy:") or cfg.from_rollouts:
        return None
    from datagen.models import resolve_model
    from training.evaluation.policies import policy_solver
    return policy_solver(resolve_model(cfg.solver.split(":", 1)[1]))


def _run(warehouse: Optional[Path], cfg, no_tool_check: bool):
    """The stage under a progress bar on stderr (when it is a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from datagen.cli_common import stderr_console
    from difficulty.stage import band_stage
    columns = (TextColumn("band"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), disable=not is_tty(), transient=True) as bar:
        task = bar.add_task("band", total=None)
        return band_stage(warehouse, cfg, solver=_policy_solver(cfg), no_tool_check=no_tool_check,
                          progress=lambda done, total: bar.update(task, completed=done,
                                                                  total=total))


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
