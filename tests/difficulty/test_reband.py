"""Re-banding from the rollouts training writes: bands move; train_ready and the reader follow."""

from __future__ import annotations

import pytest

from difficulty import BandConfig, run_band
from tests.difficulty.conftest import RateSolver, add_questions


def _rollouts(wh, run_id: str, outcomes: dict[str, list[tuple[int, float]]]) -> None:
    """Rows exactly as the trainer writes them (training.setup.rollout_records)."""
    from training.api import Trajectory
    from training.setup import rollout_records
    entries = [(Trajectory(question_id=q, prompt_ids=[1], output_ids=[2], output_logprobs=[0.0],
                           output_versions=[v], reward=r, start_version=v, group_id=f"{q}-{v}"), 0)
               for q, rows in outcomes.items() for v, r in rows]
    wh.append(rollout_records(entries, True, run_id), run_id=run_id)


def test_rebanding_moves_bands_and_train_ready_and_reader_follow(wh):
    from warehouse import StreamReader
    rates = {"qa": 0.0, "qb": 1.0, "qc": 0.5}
    add_questions(wh, rates)
    run_band(wh, BandConfig(plot=False), solver=RateSolver(rates))
    ready = {r["question_id"]: r["band"] for r in
             wh.sql("select question_id, band from train_ready").to_pylist()}
    assert ready["qa"] == "too_hard" and ready["qb"] == "too_easy"
    # The policy learned qa (all right at v3) and forgot qb (right at v2, wrong at v5).
    _rollouts(wh, "train-1", {"qa": [(3, 1.0)] * 8,
                              "qb": [(2, 1.0)] * 8 + [(5, 0.0)] * 8})
    s = run_band(wh, BandConfig(from_rollouts="train-1", plot=False))
    rows = {r["question_id"]: r for r in wh.sql(
        "select question_id, band, solver, source, k from difficulty where source = 'training'"
    ).to_pylist()}
    assert s.banded == 2 and rows["qa"]["solver"] == "policy:train-1@v3"
    assert rows["qb"]["solver"] == "policy:train-1@v5" and rows["qb"]["k"] == 8  # latest window
    ready = {r["question_id"]: r["band"] for r in
             wh.sql("select question_id, band from train_ready").to_pylist()}
    assert ready == {"qa": "too_easy", "qb": "too_hard", "qc": ready["qc"]}
    reader = StreamReader(wh, band_weights={"too_easy": 1.0}, seed=0, max_epochs=1)
    assert [i.question_id for i in reader.next_batch(10)] == ["qa"]
    pooled = run_band(wh, BandConfig(from_rollouts="train-1", rollout_window=0, plot=False))
    k = wh.scalar("select k from difficulty where run_id = ? and question_id = 'qb'",
                  [pooled.run_id])
    assert k == 16  # every version pooled


def test_rebanding_unknown_run_is_a_clear_error(wh):
    add_questions(wh, {"qa": 0.0})
    with pytest.raises(ValueError, match="no rollouts"):
        run_band(wh, BandConfig(from_rollouts="nope", plot=False))
