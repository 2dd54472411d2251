"""`band_stage`: what `datagen band` does, as one library call (the CLI parses, calls this,
prints): open the warehouse, build the solver the config names, optionally write the no-tool
check's verdicts first, band, close the solver and the warehouse. It runs quietly: the band's
progress on the console (a bar on a terminal, a line per batch of questions otherwise), what
libraries print in WAREHOUSE/reports/band.log.

A policy solver (`solver: policy:PATH`) is built by the caller's `build_solver` from
training's inference engine: `difficulty` never imports `training`.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from difficulty.config import BandConfig
from difficulty.records import BandSummary, Solver

if TYPE_CHECKING:
    from datagen.console import Console
    from warehouse import Warehouse


@dataclass(frozen=True)
class BandStageResult:
    """The band run's summary, and the no-tool check's counts when it ran ({} when not)."""

    summary: BandSummary
    no_tool: dict[str, int]


def band_config(settings: Mapping[str, Any], **flags: Any) -> BandConfig:
    """The config from a file's settings, then the flags that were given (None: not given)."""
    from datagen.config_io import validate
    data = {**settings, **{k: v for k, v in flags.items() if v is not None}}
    return validate(BandConfig, data, "band")


def band_stage(warehouse: Path | None, cfg: BandConfig,
               build_solver: Callable[[], Solver | None] = lambda: None,
               no_tool_check: bool = False) -> BandStageResult:
    """Band into the warehouse at `warehouse` (None: the default one); see the module
    docstring. `build_solver` returns the solver that replaces the one `cfg` names (a policy
    solver; None: cfg's); it runs after the quiet run begins, so its engine's output is logged."""
    import warehouse as wh_mod
    from datagen.console import counted
    from difficulty.run import make_solver, run_band
    if no_tool_check and (cfg.solver == "embedded" or cfg.from_rollouts):
        raise ValueError("--no-tool-check needs --solver llm or policy:PATH (a model to ask)")
    with contextlib.ExitStack() as stack:  # closed last-in first: solvers, then the warehouse
        wh = wh_mod.open(warehouse)  # opened first: a log must not make a new folder foreign
        stack.callback(wh.close)
        console = stack.enter_context(_quiet(wh, cfg))
        solver = build_solver()
        if solver is None and not cfg.from_rollouts:  # re-banding from rollouts asks no solver
            solver = make_solver(wh, cfg)
        if solver is not None:
            stack.callback(solver.close)
        counts = _no_tool_check(wh, cfg, solver) if no_tool_check else {}
        progress = stack.enter_context(counted(console, "band", "questions"))
        return BandStageResult(run_band(wh, cfg, solver=solver, progress=progress), counts)


@contextlib.contextmanager
def _quiet(wh: "Warehouse", cfg: BandConfig) -> Iterator["Console"]:
    """The band's own lines on the console; what libraries print (a policy solver's vLLM
    engine, torch, transformers) appended to WAREHOUSE/reports/band.log, beside the band
    plots (`datagen --verbose`: on the terminal)."""
    from datagen.console import quiet_run, verbose_requested
    with quiet_run(wh.root / "reports" / "band.log", verbose=verbose_requested()) as console:
        console.line(f"band: solver {cfg.solver} on {wh.root}" + (
            f" (library logs: {console.log})" if console.log else ""))
        yield console


def _no_tool_check(wh: "Warehouse", cfg: BandConfig, solver: Solver) -> dict[str, int]:
    """The no-tool check with the band's solver, or, for `solver: llm`, the same model asked
    without the page search."""
    from difficulty.notool import no_tool_check
    if cfg.solver != "llm":
        return no_tool_check(wh, cfg, solver)
    from difficulty.solvers.llm import make_llm_solver
    bare = make_llm_solver(wh, cfg, use_tools=False)
    try:
        return no_tool_check(wh, cfg, bare)
    finally:
        bare.close()
