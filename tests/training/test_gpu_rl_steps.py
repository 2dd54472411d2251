"""benchmarks/gpu_rl_steps.py at its --quick shape: RL steps through both engines on a CPU,
so the script a GPU machine runs is known to work before device time is spent on it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_rl_steps.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_rl_steps", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_quick_rl_steps_measure_every_part_and_engines_agree(tmp_path):
    summary = _script().main(["--quick", "--steps", "2", "--no-reference", "--out",
                              str(tmp_path)])
    assert summary["steps"] == 2
    for key in ("gen_tps", "train_tps", "prox_s", "train_s", "update_s", "step_s"):
        assert summary[key] > 0, key
    # Same weights in both engines after each update, fp32 on a CPU: π_prox = π_behav.
    assert summary["prox_behav_gap"] < 1e-3
    written = json.loads((tmp_path / "gpu_rl_steps.json").read_text())
    assert all(0 < s["gen_tokens"] <= 4 * 16 for s in written["steps"])  # 4 x 16 tokens
