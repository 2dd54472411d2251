"""A warm start on the warehouse's own questions takes training-split questions of the
streamed bands only: never a held-out (evaluation) question."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from training.config import TrainConfig
from training.warm_start import warehouse_pairs
from training.split import resolve_split
from training.tasks import load_task


def test_warm_start_pairs_are_training_split_questions_of_streamed_bands(wh):
    load_task(wh, "fact_copy", 200, band="medium")
    load_task(wh, "fact_copy", 260, seed=1, band="too_hard")
    cfg = TrainConfig(data={"eval_fraction": 0.3, "eval_size": 200,
                            "band_weights": {"medium": 1.0}},
                      warm_start={"steps": 10, "batch_size": 64, "answers": "true"})
    split = resolve_split(cfg.data, wh)
    pairs = warehouse_pairs(SimpleNamespace(wh=wh, split=split), cfg)
    held_out = {i.question for i in split.items}
    rows = {r["question"]: r for r in wh.sql(
        "select question, answer, band from train_ready").to_pylist()}
    assert pairs and not {q for q, _ in pairs} & held_out
    assert all(rows[q]["band"] == "medium" and rows[q]["answer"] == a for q, a in pairs)


def test_random_answers_on_warehouse_questions_are_refused(wh):
    cfg = TrainConfig(warm_start={"steps": 1, "answers": "random"})
    with pytest.raises(ValueError, match="answers: true"):
        warehouse_pairs(SimpleNamespace(wh=wh, split=None), cfg)
