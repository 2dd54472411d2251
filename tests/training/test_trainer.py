"""`datagen train` end to end with the real engines (DeepSpeed + in-process transformers)."""

import json

import pytest
import yaml

from datagen.cli import main
from training.config import load_config

SMALL = {
    "steps": 4, "eval_every": 2, "checkpoint_every": 2, "keep_checkpoints": 1,
    "model": {"tiny_hidden": 64, "tiny_heads": 2, "tiny_kv_heads": 1, "tiny_layers": 1,
              "tiny_intermediate": 128},
    "data": {"task": "fact_copy", "task_size": 60, "band_weights": {"medium": 1.0},
             "eval_size": 8},
    "warm_start": {"steps": 2, "batch_size": 8},
    "rollout": {"batch_size": 8, "group_size": 4, "max_in_flight": 8, "max_staleness": 1,
                "max_new_tokens": 4},
    "loss": {"ppo_minibatches": 2},
    "engine": {"lr": 0.01, "micro_batch_size": 8, "build_shm_op": False},
}


def write_config(tmp_path, **over):
    cfg = {**SMALL, **over}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_config_rejects_unknown_keys_and_bad_sizes(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rollout: {batch_size: 10, group_size: 4}\n")
    with pytest.raises(ValueError, match="multiple of"):
        load_config(bad)
    bad.write_text("stepz: 3\n")
    with pytest.raises(ValueError, match="stepz"):
        load_config(bad)
    assert load_config(overrides={"steps": 7}).steps == 7
    with pytest.raises(ValueError, match="reference model"):   # not silently ignored
        load_config(overrides={"loss": {"kl_coef": 0.1}})


@pytest.mark.slow  # ~100 s here under load: DeepSpeed + transformers, whole runs
def test_train_end_to_end(tmp_path, capsys):
    import safetensors.torch as st

    run_dir, wh_dir = tmp_path / "run", tmp_path / "wh"
    cfg = write_config(tmp_path)
    assert main(["train", "--config", str(cfg), "--run-dir", str(run_dir),
                 "--warehouse", str(wh_dir)]) == 0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    for r in rows[1:]:
        assert r["policy_version"] == r["step"] and 0 <= r["staleness_mean"] <= 1
        for key in ("reward_mean", "staleness_mean", "completion_len_mean", "kl_behav_prox",
                    "clip_fraction", "throughput_tokens_s", "train_s", "wait_batch_s"):
            assert key in r
    assert [r["step"] for r in rows if r["eval_reward"] is not None] == [0, 2, 4]
    assert (run_dir / "reward_curve.png").stat().st_size > 1000
    assert any((run_dir / "tensorboard").iterdir())
    assert [p.name for p in (run_dir / "checkpoints").iterdir()] == ["step_4"]
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["steps"] == 4

    base = st.load_file(str(next((run_dir / "base_model").glob("*.safetensors"))))
    final = st.load_file(str(next((run_dir / "final").glob("*.safetensors"))))
    assert any(not (base[k] == final[k]).all() for k in base)   # training changed weights

    import warehouse
    wh = warehouse.open(wh_dir)
    trained = wh.sql("select question_id, policy_version, staleness from rollouts "
                     "where trained").to_pylist()
    assert len(trained) == 4 * 8
    assert all(0 <= r["staleness"] <= 1 for r in trained)
    run = wh.sql("select config, status, summary from runs where kind = 'train'").to_pylist()
    assert run[0]["status"] == "succeeded" and json.loads(run[0]["config"])["steps"] == 4
    assert json.loads(run[0]["summary"])["staleness_trained_total"] == 32
    out = capsys.readouterr().out
    assert "final_model" in out

    # a second plain run into the same dir is refused; --resume on a fresh dir too
    assert main(["train", "--config", str(cfg), "--run-dir", str(run_dir),
                 "--warehouse", str(wh_dir)]) == 2
    assert main(["train", "--config", str(cfg), "--run-dir", str(tmp_path / "new"),
                 "--warehouse", str(wh_dir), "--resume"]) == 2
    assert "error:" in capsys.readouterr().err
