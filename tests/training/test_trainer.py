"""`datagen train` end to end with the real engines (DeepSpeed + in-process transformers)."""

import json

import pytest
import yaml

from datagen.cli import main
from training.config import load_config

SMALL = {
    "steps": 4, "eval_every": 2, "checkpoint_every": 2, "keep_checkpoints": 1,
    "model": {"tiny_hidden": 64, "tiny_layers": 1},
    "data": {"task": "fact_copy", "task_size": 60, "band_weights": {"medium": 1.0},
             "eval_size": 8},
    "warm_start": {"steps": 2, "batch_size": 8},
    "rollout": {"batch_size": 8, "group_size": 4, "max_in_flight": 8, "max_staleness": 1,
                "max_new_tokens": 4},
    "loss": {"ppo_minibatches": 2},
    "engine": {"lr": 0.01, "micro_batch_size": 8},
}
# For the runs that keep dynamic sampling (the default): after 2 warm-start steps the random
# tiny policy rarely answers in the format, so a step's wait for groups with a signal is
# heavy-tailed (three runs here waited < 1 s a step; one sampled ~15,000 episodes for step 1,
# 399 s; the suite once took 174 s for this test); after 10 (a second's work) some answers are
# right by chance and each step finds its groups in a few seconds.
SIGNAL_WARM_START = {"steps": 10, "batch_size": 8}


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
    bad.write_text("rollout: {strict_reward: true}\n")        # the old key says what to write
    with pytest.raises(ValueError, match="^[^\n]*bad.yaml: rollout.strict_reward was replaced "
                                         "by rollout.reward: write `reward: strict`[^\n]*$"):
        load_config(bad)
    assert load_config().rollout.reward == "reward"


@pytest.mark.slow  # DeepSpeed + transformers, whole runs
def test_train_end_to_end(tmp_path, capsys):
    import safetensors.torch as st

    run_dir, wh_dir = tmp_path / "run", tmp_path / "wh"
    cfg = write_config(tmp_path, warm_start=SIGNAL_WARM_START)
    assert main(["train", "--config", str(cfg), "--run-dir", str(run_dir),
                 "--warehouse", str(wh_dir)]) == 0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    assert rows[0]["warm_start/nll"] > 0   # the warm start's last loss, beside the step-0 eval
    assert (run_dir / "warm_start" / "config.json").exists()   # the warm-started model, kept
    for r in rows[1:]:
        assert r["policy_version"] == r["step"] and 0 <= r["staleness_mean"] <= 1
        for key in ("reward_mean", "staleness_mean", "completion_len_mean", "kl_behav_prox",
                    "clip_fraction", "throughput_tokens_s", "train_s", "wait_batch_s",
                    "train_tokens_s", "gen_tokens_s", "wait_share"):
            assert key in r
        assert r["train_tokens_s"] > 0 and r["gen_tokens_s"] > 0 and 0 <= r["wait_share"] <= 1
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
    split = json.loads(run[0]["config"])["eval_split"]      # the resolved split is recorded
    assert split["kind"] == "task" and split["n_eval"] == 8
    assert not set(split["eval_question_ids"]) & {r["question_id"] for r in trained}
    ids = wh.sql("select episode_id from rollouts").to_pylist()
    assert len({r["episode_id"] for r in ids}) == len(ids)
    assert json.loads(run[0]["summary"])["staleness_trained_total"] == 32
    out = capsys.readouterr().out
    assert "final_model" in out

    # a second plain run into the same dir is refused; --resume on a fresh dir too
    assert main(["train", "--config", str(cfg), "--run-dir", str(run_dir),
                 "--warehouse", str(wh_dir)]) == 2
    assert main(["train", "--config", str(cfg), "--run-dir", str(tmp_path / "new"),
                 "--warehouse", str(wh_dir), "--resume"]) == 2
    assert "error:" in capsys.readouterr().err


def _run(tmp_path, **over):
    from training.trainer import run_train

    cfg = load_config(write_config(tmp_path, **over))
    return run_train(cfg, tmp_path / "run", warehouse=tmp_path / "wh")


@pytest.mark.integration
def test_failing_episodes_are_dropped_counted_and_training_finishes(tmp_path, monkeypatch):
    """Rewards that raise (MathTimeout) and generation requests that fail cost their groups,
    never the run; evaluation episodes that fail are counted."""
    import itertools

    import verifiers
    from training.engines.hf_engine import HFInferenceEngine
    from training.tasks import task_questions
    from verifiers import MathTimeout

    bad_answer = task_questions("fact_copy", 8, "eval")[0].answer  # in eval and in training
    real_score, real_generate = verifiers.score_response, HFInferenceEngine.agenerate
    calls = itertools.count(1)

    def score(response, gold, *args, **kwargs):
        if gold == bad_answer:
            raise MathTimeout("math-verify overran 5 s")
        return real_score(response, gold, *args, **kwargs)

    async def generate(self, request):
        if next(calls) % 9 == 0:
            raise RuntimeError("vLLM server answered 500")
        return await real_generate(self, request)

    monkeypatch.setattr(verifiers, "score_response", score)
    monkeypatch.setattr(HFInferenceEngine, "agenerate", generate)
    # judge mode scores responses cut by the token budget too (the tiny model's are, often)
    summary = _run(tmp_path, rollout={**SMALL["rollout"], "reward": "judge"},
                   warm_start=SIGNAL_WARM_START)
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    last = rows[-1]
    assert last["dropped_failed/MathTimeout"] > 0 and last["dropped_failed/RuntimeError"] > 0
    assert last["episodes_failed"] >= (last["dropped_failed/MathTimeout"]
                                       + last["dropped_failed/RuntimeError"])
    evals = [r for r in rows if r["step"] in (0, 2, 4)]
    assert all(r["eval_failed/MathTimeout"] >= 1 and r["eval_reward"] is not None
               for r in evals)
    assert summary["dropped_failed/MathTimeout"] >= last["dropped_failed/MathTimeout"]  # + later
    assert any(k.startswith("reward_rule/") for k in last)


@pytest.mark.integration
def test_predictable_questions_and_loglinear_prox_in_a_run(tmp_path):
    """8 questions, 2 groups a step: the second epoch starts at step 5, and the questions
    whose groups were all-equal in the first are skipped, not generated; π_prox without the
    forward pass. Dynamic sampling off: every group trains, whatever its rewards."""
    _run(tmp_path, steps=6, data={**SMALL["data"], "task_size": 8},
         rollout={**SMALL["rollout"], "dynamic_sampling": False, "predictable_versions": 50},
         loss={"ppo_minibatches": 2, "prox_logp": "loglinear"})
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(7))
    last = rows[-1]
    assert last["questions_skipped_predictable"] > 0
    assert last["gradient_share"] == pytest.approx(
        last["episodes_with_gradient"] / last["episodes_generated"])
    assert all(r["kl_behav_prox"] is not None and r["prox_s"] < 0.05 for r in rows[1:])


@pytest.mark.integration
def test_an_unreachable_engine_fails_the_run_with_one_error(tmp_path, monkeypatch):
    import httpx

    from training.api import TrainingFailed
    from training.engines.hf_engine import HFInferenceEngine

    real_generate, down, seen = HFInferenceEngine.agenerate, [], []

    async def generate(self, request):
        if down:
            raise httpx.ConnectError("[Errno 111] Connection refused")
        return await real_generate(self, request)

    monkeypatch.setattr(HFInferenceEngine, "agenerate", generate)
    from training.trainer import run_train

    # no waiting for groups with a signal (dynamic sampling): the failure is the point here
    cfg = load_config(write_config(tmp_path, steps=6, rollout={**SMALL["rollout"],
                                                                "dynamic_sampling": False}))
    with pytest.raises(TrainingFailed, match="^the inference engine is unreachable "
                                             "\\(ConnectError: \\[Errno 111\\][^\n]*$"):
        run_train(cfg, tmp_path / "run", warehouse=tmp_path / "wh",
                  on_step=lambda row: seen.append(row) or (
                      down.append(row["step"]) if row["step"] == 2 else None))
    # the progress bar heard of each warm-start step before step 1
    assert [r.get("warm_start_step") for r in seen[:3]] == [1, 2, None]
    import warehouse
    wh = warehouse.open(tmp_path / "wh")
    assert wh.sql("select status from runs where kind = 'train'").to_pylist() == [
        {"status": "failed"}]
    steps = [json.loads(x)["step"]
             for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] < 6


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.vllm
def test_killing_the_vllm_server_mid_run_fails_the_run_with_one_error(vllm_servers,
                                                                      tiny_model_dir, tmp_path):
    """A real vLLM server (taken from the session's: this test kills it), killed (SIGKILL)
    after step 2: one TrainingFailed naming it."""
    import os
    import signal

    import warehouse
    from training.api import TrainingFailed
    from training.engines.vllm_server import stop_server
    from training.trainer import run_train

    server = vllm_servers.take()

    def kill_at_step_2(row):
        if row["step"] == 2:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()

    try:
        # dynamic_sampling off: with it, steps 1-2 waited minutes for a random tiny policy's
        # groups with a signal (the test took 435 s); the kill is what this test is about
        cfg = load_config(write_config(
            tmp_path, steps=8, model={"path": str(tiny_model_dir)},
            rollout={**SMALL["rollout"], "inference": "remote", "dynamic_sampling": False,
                     "servers": [server.url]}))
        # the kill lands between requests (ConnectError, with the URL) or inside one (the
        # connection reset by the dying server): one line either way
        with pytest.raises(TrainingFailed, match="^the inference engine is unreachable "
                                                 "\\((ConnectError|ConnectionResetError|"
                                                 "RemoteProtocolError|ReadError)[^\n]*$"):
            run_train(cfg, tmp_path / "run", warehouse=tmp_path / "wh", on_step=kill_at_step_2)
    finally:
        stop_server(server.proc)
    wh = warehouse.open(tmp_path / "wh")
    assert wh.sql("select status from runs where kind = 'train'").to_pylist() == [
        {"status": "failed"}]
