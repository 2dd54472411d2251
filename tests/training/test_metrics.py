"""The reward curve's minutes axis (training/metrics.py)."""

from __future__ import annotations

import json

import pytest


def test_reward_curve_marks_minutes_at_the_steps_they_were_reached(tmp_path):
    """A run whose warm start took 5 min, then 6 s a step: minute 10 is drawn over step 50,
    and no mark falls outside the run's own minutes."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from training.metrics import _minutes_axis, plot_reward_curve

    rows = [{"step": s, "elapsed_s": 300 + 6 * s, "reward_mean": 0.5} for s in range(101)]
    fig, ax = plt.subplots()
    ax.plot([r["step"] for r in rows], [0.5] * len(rows))
    _minutes_axis(ax, rows)
    top = fig.axes[1]
    marks = {float(t.get_text()): pos for t, pos in zip(top.get_xticklabels(), top.get_xticks())}
    plt.close(fig)
    assert marks[10.0] == pytest.approx(50.0)
    assert min(marks) >= 5 and max(marks) <= 15 and len(marks) >= 3
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert plot_reward_curve(tmp_path).stat().st_size > 1000


def test_a_resume_keeps_the_checkpoints_rows_and_their_clock(tmp_path):
    """After a crash past step 2, a resume from step 2 drops the replayed steps' rows and
    carries the run's elapsed time on from step 2's (the minutes axis stays monotonic)."""
    from training.metrics import MetricsLogger, read_metrics

    rows = [{"step": s, "elapsed_s": 100.0 + 10 * s} for s in range(5)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    log = MetricsLogger(tmp_path, resume_step=2)
    log.close()
    assert read_metrics(tmp_path) == rows[:3] and log.elapsed_before == 120.0
    assert MetricsLogger(tmp_path / "new").elapsed_before == 0.0
