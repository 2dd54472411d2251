"""CLI commands of the train stage (owned by that stage; kept light to import)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from datagen.cli_common import WarehouseOpt, add_command, fail, user_errors

if TYPE_CHECKING:
    from datagen.console import Console


def register(app: typer.Typer) -> None:
    add_command(app, "train", train)


@user_errors
def train(
    config: Annotated[Path, typer.Option("--config", "-c", help="YAML training config "
                                         "(see examples/train_cpu.yaml).")],
    run_dir: Annotated[Optional[Path], typer.Option(
        "--run-dir", help="Output folder (metrics.jsonl, checkpoints, final model). "
                          "Default: runs/<config name>.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the latest "
                                         "checkpoint in --run-dir.")] = False,
    warehouse: WarehouseOpt = None,
) -> None:
    """Asynchronous RL training (decoupled PPO + GRPO) on the warehouse's train_ready questions.

    The run's progress goes to stderr (a bar on a terminal, a line per step otherwise); vLLM,
    DeepSpeed, Triton and torch messages go to RUN_DIR/train.log (`datagen --verbose train`:
    to the terminal). SIGTERM stops it as Ctrl-C does: checkpoints kept, run marked.

    Several GPUs or nodes: deepspeed --num_gpus N --module datagen train --config FILE ...
    """
    from training.config import load_config

    cfg = load_config(config)
    out = run_dir or Path("runs") / config.stem
    summary = _run_quietly(cfg, out, warehouse or cfg.data.warehouse, resume)
    _print_summary(summary, out)


def _run_quietly(cfg, out: Path, warehouse, resume: bool) -> dict:
    """run_train with the libraries' output in RUN/train.log (run_train stops on SIGTERM as on
    Ctrl-C); a systematic failure is one line after the console is back (the run is marked
    failed)."""
    import os

    from datagen.console import exit_quietly, quiet_run, verbose_requested
    from training.api import TrainingFailed

    try:
        with quiet_run(out / "train.log", verbose_requested()) as console:
            console.line(f"train: {cfg.steps} steps into {out}" + (
                f" (library logs: {console.log})" if console.log else ""))
            from training.engines.deepspeed_engine import lone_process_env
            from training.trainer import run_train

            # The entry point sets what DeepSpeed reads from the environment (libraries never
            # write it): a lone process gets a 1-rank world; under a launcher nothing is missing.
            os.environ.update(lone_process_env())
            with _progress(console, cfg.steps) as advance:
                return run_train(cfg, out, warehouse=warehouse, resume=resume, on_step=advance)
    except TrainingFailed as exc:  # systematic failure: the run is marked failed, say why
        raise fail(str(exc), 1) from None
    finally:   # the engines are closed and the run marked: nothing is left but exiting
        exit_quietly(None if verbose_requested() else out / "train.log")


def _progress(console: "Console", total: int):
    """A rich bar on a terminal; one line per step (and per warm-start step) otherwise."""
    from contextlib import contextmanager, nullcontext

    @contextmanager
    def ctx():
        bar = _bar(console, total) if console.tty else None
        with bar or nullcontext():
            task = bar.add_task("train", total=total, info="") if bar else None

            def advance(row: dict) -> None:
                done, info = _step_text(row)
                if bar is None:
                    console.line(f"{'warm start' if done == 0 else 'step'} {info}")
                    return
                bar.update(task, completed=done, info=info)
            yield advance
    return ctx()


def _bar(console: "Console", total: int):
    from rich.console import Console as RichConsole
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("train"), BarColumn(), TextColumn("{task.completed}/"
                    "{task.total} {task.fields[info]}"), TimeElapsedColumn(),
                    console=RichConsole(file=console.err, force_terminal=True))


def _step_text(row: dict) -> tuple[int, str]:
    """(steps done, what to show): warm-start steps count as step 0."""
    if "warm_start_step" in row:   # supervised steps before step 1
        nll = row["nll"]
        return 0, (f"{row['warm_start_step']}/{row['warm_start_steps']}"
                   + (f" nll {nll:.3f}" if nll is not None else ""))
    ev = row.get("eval_reward")
    return row["step"], (f"{row['step']} reward {row['reward_mean'] or 0:.2f}"
                         + (f" eval {ev:.2f}" if ev is not None else "")
                         + f" ({row.get('elapsed_s', 0):.0f} s)")


def _print_summary(summary: dict, run_dir: Path) -> None:
    if "engine_calls" in summary:  # a follower rank under the DeepSpeed launcher
        typer.echo(f"rank {summary['rank']}: replayed {summary['engine_calls']} engine calls")
        return
    keys = ("steps", "policy_version", "final_reward_mean", "final_eval_reward",
            "groups_started", "groups_accepted", "dropped_no_signal", "dropped_rejected_episode",
            "dropped_late", "staleness_mean_all", "staleness_max", "final_model")
    for k in keys:
        typer.echo(f"{k}\t{summary.get(k)}")
    typer.echo(f"metrics\t{run_dir / 'metrics.jsonl'}")
    typer.echo(f"reward_curve\t{run_dir / 'reward_curve.png'}")
