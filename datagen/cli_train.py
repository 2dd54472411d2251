"""CLI commands of the train stage (owned by that stage; kept light to import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import WarehouseOpt, add_command, error_exit, user_errors


def register(app: typer.Typer) -> None:
    add_command(app, "train", train)


TrainConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="YAML training config "
                                              "(see examples/train_cpu.yaml).")]
RunDirOpt = Annotated[Optional[Path], typer.Option(
    "--run-dir", help="Output folder (metrics.jsonl, checkpoints, final model). "
                      "Default: runs/<config name>.")]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="Continue from the latest "
                                         "checkpoint in --run-dir.")]


@user_errors
def train(config: TrainConfigOpt, run_dir: RunDirOpt = None, resume: ResumeOpt = False,
          warehouse: WarehouseOpt = None) -> None:
    """Asynchronous RL training (decoupled PPO + GRPO) on the warehouse's train_ready questions.

    The run's progress goes to stderr (a bar on a terminal, a line per step otherwise); vLLM,
    DeepSpeed, Triton and torch messages go to RUN_DIR/train.log (`datagen --verbose train`:
    to the terminal). SIGTERM stops it as Ctrl-C does: checkpoints kept, run marked.

    Several GPUs or nodes: deepspeed --num_gpus N --module datagen train --config FILE ...
    """
    import os

    from training.api import TrainingFailed
    from training.config import load_config
    from training.engines.deepspeed_engine import lone_process_env
    from training.progress import print_train_summary, train_quietly
    cfg, out = load_config(config), run_dir or Path("runs") / config.stem
    # The entry point sets what DeepSpeed reads from the environment (libraries never write
    # it): a lone process gets a 1-rank world; under a launcher nothing is missing.
    os.environ.update(lone_process_env())
    try:
        summary = train_quietly(cfg, out, warehouse or cfg.data.warehouse, resume)
    except TrainingFailed as exc:  # systematic failure: the run is marked failed, say why
        raise error_exit(str(exc), 1) from None
    print_train_summary(summary, out)
