"""`datagen train` under the DeepSpeed launcher: 2 CPU ranks, ZeRO-2. Rank 0 runs the rollouts
and replays every engine call on rank 1 (training/ranks.py)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.training.engine_helpers import free_port
from tests.training.test_trainer import SMALL

ROOT = Path(__file__).resolve().parents[2]



@pytest.mark.slow
@pytest.mark.integration
def test_two_rank_training_through_the_deepspeed_launcher(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CPU ranks only: on a GPU box the launcher would place ranks on GPUs")
    # two steps, and no waiting for groups with a signal (dynamic sampling): what is checked
    # here is the ranks' agreement, not a learning curve
    cfg = {**SMALL, "steps": 2, "eval_every": 2, "checkpoint_every": 2,
           "rollout": {**SMALL["rollout"], "dynamic_sampling": False},
           "engine": {**SMALL["engine"], "zero_stage": 2}}
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    launcher = shutil.which("deepspeed") or str(Path(sys.executable).parent / "deepspeed")
    cmd = [launcher, "--num_gpus", "2", "--master_port", str(free_port()), "--module",
           "datagen", "train", "--config", str(tmp_path / "train.yaml"), "--run-dir",
           str(run_dir), "--warehouse", str(tmp_path / "wh")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]             # one leader wrote metrics
    ckpt = run_dir / "checkpoints" / "step_2"
    assert (ckpt / "rng_rank0.pt").exists() and (ckpt / "rng_rank1.pt").exists()
    assert (run_dir / "final" / "model.safetensors").exists()
    calls = int(re.search(r"rank 1: replayed (\d+) engine calls", out).group(1))
    # per step at least: π_prox forward, one train_batch per minibatch, the weight export
    assert calls >= cfg["steps"] * (1 + cfg["loss"]["ppo_minibatches"] + 1)
