"""`examples/train_build_cpu.yaml` streams a build's composed questions: the single-turn QA
workflow trains a few steps on train_ready (band weights, the held-out split), with
`rollout.dynamic_sampling: false` so that a policy that answers nothing yet still steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.training.test_agent_e2e import _banded_copy

REPO = Path(__file__).resolve().parents[2]


def _config(tmp_path: Path) -> Path:
    cfg = yaml.safe_load((REPO / "examples" / "train_build_cpu.yaml").read_text())
    cfg.update(steps=2, eval_every=2, checkpoint_every=2)
    cfg["warm_start"]["steps"] = 2
    cfg["model"].update(tiny_hidden=64, tiny_layers=1)
    cfg["data"].update(eval_size=4, band_weights={"medium": 1.0})
    cfg["rollout"].update(batch_size=8, group_size=4, max_in_flight=8, max_new_tokens=8)
    cfg["engine"].update(micro_batch_size=8)
    path = tmp_path / "train_build.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.slow
@pytest.mark.integration
def test_train_build_example_streams_composed_questions(demo_composed, tmp_path):
    import warehouse
    from datagen.cli import main
    from training.split import in_eval_fraction

    root = _banded_copy(demo_composed, tmp_path / "wh")
    run_dir = tmp_path / "run"
    assert main(["train", "--config", str(_config(tmp_path)), "--run-dir", str(run_dir),
                 "--warehouse", str(root)]) == 0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    wh = warehouse.open(root, read_only=True)
    try:
        seen = wh.sql("select r.question_id, q.hops, r.trained from rollouts r join "
                      "(select distinct question_id, hops from questions) q using "
                      "(question_id)").to_pylist()
    finally:
        wh.close()
    trained = [r for r in seen if r["trained"]]
    assert len(trained) == 2 * 8
    assert any(r["hops"] >= 2 for r in seen)                       # composed, not only seeds
    assert not any(in_eval_fraction(r["question_id"], 0.05) for r in seen)   # held out
