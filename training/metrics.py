"""Run-directory outputs: metrics.jsonl, TensorBoard, the reward-curve PNG, checkpoint rotation."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


class MetricsLogger:
    """One JSON object per step in `DIR/metrics.jsonl`, the same scalars to TensorBoard."""

    def __init__(self, run_dir: Path, resume_step: int | None = None):
        self.path = run_dir / "metrics.jsonl"
        self.elapsed_before = 0.0   # a resumed run's clock starts where its checkpoint's did
        if resume_step is not None and self.path.exists():
            # Steps after the checkpoint are replayed after a resume: drop their old lines.
            kept = [json.loads(ln) for ln in self.path.read_text().splitlines()
                    if ln.strip() and json.loads(ln)["step"] <= resume_step]
            self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))
            self.elapsed_before = max((r.get("elapsed_s", 0.0) for r in kept), default=0.0)
        self._tb = None
        try:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(run_dir / "tensorboard"))
        except ImportError:  # tensorboard is optional for the run itself
            logger.warning("tensorboard not installed: metrics go to metrics.jsonl only")

    def log(self, row: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if self._tb is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and v is not None and k != "step":
                    self._tb.add_scalar(k, v, row["step"])

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "metrics.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def plot_reward_curve(run_dir: Path) -> Path:
    """reward_mean per step and eval_reward where measured, as `DIR/reward_curve.png`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    out = Path(run_dir) / "reward_curve.png"
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in rows], [r["reward_mean"] for r in rows],
            label="reward_mean (all finished episodes)")
    ev = [r for r in rows if r.get("eval_reward") is not None]
    ax.plot([r["step"] for r in ev], [r["eval_reward"] for r in ev], "o-",
            label="eval_reward (held-out)")
    ax.set_xlabel("step")
    _minutes_axis(ax, rows)
    ax.set_ylabel("reward")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _minutes_axis(ax, rows: list[dict[str, Any]]) -> None:
    """A top axis in minutes since the run started (warm start included), read off each
    step's `elapsed_s`: a goal like "0.5 within 20 minutes" is read off the curve itself."""
    import numpy as np

    timed = sorted((r["step"], r["elapsed_s"] / 60) for r in rows if "elapsed_s" in r)
    if len(timed) < 2:
        return
    from matplotlib.ticker import MaxNLocator

    steps, minutes = (np.array(v, dtype=float) for v in zip(*timed))
    marks = [m for m in MaxNLocator(8, steps=[1, 2, 5, 10]).tick_values(minutes[0], minutes[-1])
             if minutes[0] <= m <= minutes[-1]]
    top = ax.twiny()
    top.set_xlim(ax.get_xlim())
    top.set_xticks(np.interp(marks, minutes, steps), [f"{m:g}" for m in marks])
    top.set_xlabel("minutes (warm start included)")


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Complete checkpoints (those with a DONE marker), oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    done = [p for p in root.iterdir() if p.is_dir() and (p / "DONE").exists()]
    return sorted(done, key=lambda p: int(p.name.split("_")[-1]))


def rotate_checkpoints(run_dir: Path, keep: int) -> None:
    for old in checkpoint_dirs(run_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)


def gradient_metrics(counts: dict[str, int]) -> dict[str, Any]:
    """The generation a run spends on episodes that train nothing, from the controller's
    run-long counters: `gradient_share` = episodes whose advantage was nonzero when trained
    over all episodes generated (None before any), and the questions skipped as predictable.

    >>> gradient_metrics({"episodes_generated": 40, "episodes_with_gradient": 16})["gradient_share"]
    0.4
    """
    generated, with_gradient = counts.get("episodes_generated", 0), counts.get(
        "episodes_with_gradient", 0)
    return {"episodes_generated": generated, "episodes_with_gradient": with_gradient,
            "gradient_share": with_gradient / generated if generated else None,
            "questions_skipped_predictable": counts.get("skipped_predictable", 0)}
