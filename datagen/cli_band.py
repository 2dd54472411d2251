"""CLI command of the band stage: `datagen band` (kept light to import). It builds the
policy solver a `policy:PATH` names here, as `difficulty` itself never imports training."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    EndpointOpt, ModelOpt, WarehouseOpt, add_command, read_config_section, user_errors,
)
from datagen.cli_model import wants_local_endpoint, with_local_endpoint


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

    Adaptive k: rounds of attempts until the band is decided; progress on stderr, then a band x
    hops table. Its PNG and band.log (vLLM's, torch's output; `datagen --verbose`: the terminal)
    go to WAREHOUSE/reports/. `--solver llm --model NAME` alone serves the model with vLLM.
    """
    params = dict(locals())
    if solver == "llm" and wants_local_endpoint(model, endpoint, None):
        return with_local_endpoint(band, params)
    from difficulty.report import print_band_summary
    from difficulty.stage import band_config, band_stage
    cfg = band_config(read_config_section(config, "band", "BandConfig"), solver=solver,
                      where=where, from_rollouts=from_rollouts, max_k=max_k,
                      confidence=confidence, endpoint=endpoint, model=model,
                      rollout_window=rollout_window, seed=seed)
    result = band_stage(warehouse, cfg, lambda: _policy_solver(cfg), no_tool_check)
    print_band_summary(result.summary, result.no_tool if no_tool_check else None)


def _policy_solver(cfg):
    """The policy solver `policy:PATH` names, built by training (difficulty never imports
    training) with the checkpoint's own tokenizer; None for the other solvers."""
    if not cfg.solver.startswith("policy:") or cfg.from_rollouts:
        return None
    from datagen.models import resolve_model
    from training.evaluation.policies import policy_solver
    return policy_solver(resolve_model(cfg.solver.split(":", 1)[1]))
