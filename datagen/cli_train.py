"""CLI commands of the train stage (owned by that stage; kept light to import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    WarehouseOpt, add_command, fail, is_tty, stderr_console, user_errors,
)


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

    Several GPUs or nodes: deepspeed --num_gpus N --module datagen train --config FILE ...
    """
    import os

    from training.config import load_config
    from training.engines.deepspeed_engine import lone_process_env
    from training.trainer import run_train

    # The entry point sets what DeepSpeed reads from the environment (libraries never write
    # it): a lone process gets a 1-rank world; under a launcher nothing is missing.
    os.environ.update(lone_process_env())
    cfg = load_config(config)
    out = run_dir or Path("runs") / config.stem
    console = stderr_console()
    from training.api import TrainingFailed
    try:
        with _progress(console, cfg.steps) as advance:
            summary = run_train(cfg, out, warehouse=warehouse or cfg.data.warehouse,
                                resume=resume, on_step=advance)
    except TrainingFailed as exc:  # systematic failure: the run is marked failed, say why
        raise fail(str(exc), 1) from None
    _print_summary(summary, out)


def _progress(console, total: int):
    from contextlib import contextmanager

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    @contextmanager
    def ctx():
        progress = Progress(TextColumn("train"), BarColumn(), TextColumn("{task.completed}/"
                            "{task.total} {task.fields[info]}"), TimeElapsedColumn(),
                            console=console, disable=not is_tty())
        with progress:
            task = progress.add_task("train", total=total, info="")

            def advance(row: dict) -> None:
                if "warm_start_step" in row:   # supervised steps before step 1
                    nll = row["nll"]
                    progress.update(task, completed=0, info=f"warm start {row['warm_start_step']}"
                                    f"/{row['warm_start_steps']}" + (
                                        f" nll {nll:.3f}" if nll is not None else ""))
                    return
                ev = row.get("eval_reward")
                info = f"reward {row['reward_mean'] or 0:.2f}" + (
                    f" eval {ev:.2f}" if ev is not None else "")
                progress.update(task, completed=row["step"], info=info)
            yield advance
    return ctx()


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
