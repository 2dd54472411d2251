"""What `datagen train` shows while it runs: a rich bar on a terminal, one line per step (and
per warm-start step) otherwise; then the run's summary as `key<TAB>value` lines on stdout."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datagen.console import Console
    from training.config import TrainConfig


def train_quietly(cfg: "TrainConfig", out: Path, warehouse, resume: bool) -> dict:
    """`train_with_progress` with the libraries' output in OUT/train.log (`datagen --verbose`:
    on the terminal); run_train stops on SIGTERM as on Ctrl-C."""
    from datagen.console import exit_quietly, quiet_run, verbose_requested
    log = None if verbose_requested() else out / "train.log"
    try:
        with quiet_run(out / "train.log", verbose=log is None) as console:
            return train_with_progress(console, cfg, out, warehouse, resume)
    finally:   # the engines are closed and the run marked: nothing is left but exiting
        exit_quietly(log)


def train_with_progress(console: "Console", cfg: "TrainConfig", out: Path, warehouse,
                        resume: bool) -> dict:
    """`run_train` into `out`, its steps shown on `console` (the libraries' output is in the
    log `quiet_run` set up); returns the run's summary."""
    console.line(f"train: {cfg.steps} steps into {out}" + (
        f" (library logs: {console.log})" if console.log else ""))
    from training.trainer import run_train
    with _progress(console, cfg.steps) as advance:
        return run_train(cfg, out, warehouse=warehouse, resume=resume, on_step=advance)


@contextmanager
def _progress(console: "Console", total: int):
    """A rich bar on a terminal; one line per step (and per warm-start step) otherwise."""
    bar = _bar(console, total) if console.tty else None
    with bar or nullcontext():
        task = bar.add_task("train", total=total, info="") if bar else None

        def advance(row: dict) -> None:
            done, info = step_text(row)
            if bar is None:
                console.line(f"{'warm start' if done == 0 else 'step'} {info}")
                return
            bar.update(task, completed=done, info=info)
        yield advance


def _bar(console: "Console", total: int):
    from rich.console import Console as RichConsole
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("train"), BarColumn(), TextColumn("{task.completed}/"
                    "{task.total} {task.fields[info]}"), TimeElapsedColumn(),
                    console=RichConsole(file=console.err, force_terminal=True))


def step_text(row: dict) -> tuple[int, str]:
    """(steps done, what to show): warm-start steps count as step 0."""
    if "warm_start_step" in row:   # supervised steps before step 1
        nll = row["nll"]
        return 0, (f"{row['warm_start_step']}/{row['warm_start_steps']}"
                   + (f" nll {nll:.3f}" if nll is not None else ""))
    ev = row.get("eval_reward")
    return row["step"], (f"{row['step']} reward {row['reward_mean'] or 0:.2f}"
                         + (f" eval {ev:.2f}" if ev is not None else "")
                         + f" ({row.get('elapsed_s', 0):.0f} s)")


SUMMARY_KEYS = ("steps", "policy_version", "final_reward_mean", "final_eval_reward",
                "groups_started", "groups_accepted", "dropped_no_signal",
                "dropped_rejected_episode", "dropped_late", "staleness_mean_all", "staleness_max",
                "final_model")


def print_train_summary(summary: dict, run_dir: Path) -> None:
    """The run's summary, one `key<TAB>value` line each (a follower rank: one line)."""
    if "engine_calls" in summary:  # a follower rank under the DeepSpeed launcher
        print(f"rank {summary['rank']}: replayed {summary['engine_calls']} engine calls")
        return
    for k in SUMMARY_KEYS:
        print(f"{k}\t{summary.get(k)}")
    print(f"metrics\t{run_dir / 'metrics.jsonl'}")
    print(f"reward_curve\t{run_dir / 'reward_curve.png'}")
