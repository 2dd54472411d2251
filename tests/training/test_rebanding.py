"""Re-banding during training (training/reband.py): re-banding from rollouts changes
what the reader serves next; excluded questions come back (ε share, re-try after M
versions); a stream that runs dry stops the run cleanly."""

from __future__ import annotations

import json
from collections import Counter

import pytest

import warehouse
from tests.warehouse.helpers import add_ready
from training.config import RebandConfig
from training.reband import Rebander
from warehouse import StreamReader
from warehouse.schema import RolloutRecord

EASY, MIXED = [f"e{i}" for i in range(4)], [f"m{i}" for i in range(4)]


def _rollouts(wh, run_id, rewards: dict[str, list[float]], version: int) -> None:
    wh.append([RolloutRecord(question_id=q, policy_version=version, reward=r, run_id=run_id)
               for q, rs in rewards.items() for r in rs], run_id=run_id)


def test_starvation_rule_retries_after_m_versions_and_explores(tmp_path):
    """Questions re-banded too_easy leave the stream, come back as re-tries once M
    versions passed (once per rollout version), and through the ε share meanwhile."""
    wh = warehouse.open(tmp_path / "wh")
    add_ready(wh, EASY + MIXED, band_of=lambda q: "medium")
    _rollouts(wh, "train-1", {**{q: [1.0] * 8 for q in EASY},
                              **{q: [1.0, 0.0] * 4 for q in MIXED}}, version=0)
    weights = {"easy": 1.0, "medium": 1.0, "hard": 1.0}
    with StreamReader(wh.root, weights, seed=0) as reader:
        rebander = Rebander.attach(RebandConfig(reband_every=2, explore_share=0.0,
                                          retry_after_versions=3), reader, wh, "train-1")
        assert rebander.after_step(1, version=1) == {}               # only every K = 2 steps
        row = rebander.after_step(2, version=2)
        assert row["reband/band/too_easy"] == 4 and row["reband/queued"] == 0   # 0 + 3 > 2
        assert {i.question_id for i in reader.next_batch(4)} == set(MIXED)
        rows = wh.sql("select question_id, band, solver from difficulty where "
                      "source = 'training'").to_pylist()
        assert {r["question_id"] for r in rows if r["band"] == "too_easy"} == set(EASY)
        assert all(r["solver"] == "policy:train-1@v0" for r in rows)
        assert rebander.after_step(4, version=3)["reband/queued"] == 4   # due: 0 + 3 <= 3
        assert rebander.after_step(6, version=4)["reband/queued"] == 0   # not twice per version
        assert {i.question_id for i in reader.next_batch(4)} == set(EASY)
    with StreamReader(wh.root, weights, seed=0) as reader:       # ε = 0.5: half the draws
        Rebander.attach(RebandConfig(reband_every=1, explore_share=0.5), reader, wh, "train-1")
        served = Counter(i.band for i in reader.next_batch(8))
        assert served["too_easy"] >= 1 and served["medium"] == 4
    wh.close()


def test_off_by_default_and_config_bounds():
    assert Rebander.attach(RebandConfig(), reader=None, wh=None, run_id="r") is None
    assert RebandConfig().explore_share == 0.1
    with pytest.raises(ValueError):
        RebandConfig(explore_share=1.0)


def _reward_by_question():
    """Even answers: always right (too easy). Odd: half right in a question's first group,
    then always right (the policy 'learned' them). Counted per question text."""
    seen: Counter = Counter()

    def reward(response, answer, aliases=(), question=None, mode="reward", *, finished=True):
        seen[question] += 1
        if int(answer) % 2 == 0 or seen[question] > 4:
            return 1.0, "exact"
        return float(seen[question] % 2), "exact"
    return reward


@pytest.mark.integration  # ~20 s here: a real (tiny) training run
def test_reband_during_training_changes_what_is_served_and_a_dry_stream_stops_cleanly(
        tmp_path, monkeypatch):
    from tests.training.test_trainer import SMALL
    from training.config import load_config
    from training.trainer import run_train

    monkeypatch.setattr("training.workflow.answer_reward", _reward_by_question())
    cfg = load_config(overrides={
        **SMALL, "steps": 30, "eval_every": 100, "checkpoint_every": 100, "seed": 2,
        "data": {**SMALL["data"], "task_size": 8, "eval_size": 4,
                 "band_weights": {"easy": 1.0, "medium": 1.0, "hard": 1.0}},
        "warm_start": {"steps": 0},
        "rollout": {**SMALL["rollout"], "max_staleness": 0, "dynamic_sampling": False},
        "reband": {"reband_every": 1, "explore_share": 0.0}})
    summary = run_train(cfg, tmp_path / "run", warehouse=tmp_path / "wh")
    wh = warehouse.open(tmp_path / "wh")
    ready = wh.sql("select question_id, answer from questions").to_pylist()
    groups = Counter(r["question_id"] for r in wh.sql(
        "select question_id from rollouts").to_pylist())
    odd = {r["question_id"] for r in ready if int(r["answer"]) % 2}
    assert len(odd) == 4 and len(ready) == 8 and set(groups) == {r["question_id"] for r in ready}
    # evens: too_easy after their first group, never served again; odds: half right, so
    # served again in the next epoch, until a group all right banded them out as well
    assert {groups[q] // 4 for q in set(groups) - odd} == {1}
    assert min(groups[q] // 4 for q in odd) >= 2
    bands = Counter(r["band"] for r in wh.sql("select band from train_ready").to_pylist())
    assert bands["too_easy"] >= 7                  # all (the last group may be untrained)
    assert wh.sql("select count(*) as n from difficulty where source = 'training' and "
                  "solver like 'policy:train-%@v%'").to_pylist()[0]["n"] >= 8
    # nothing left to stream: the run said so and stopped, as a success, with a checkpoint
    steps = summary["steps"]
    assert summary["stopped"] == "stream_empty" and 6 <= steps < 30
    assert "no rows left in the streamed bands" in summary["stopped_reason"]
    run = wh.sql("select status, summary from runs where kind = 'train'").to_pylist()[0]
    assert run["status"] == "succeeded" and json.loads(run["summary"])["steps"] == steps
    assert (tmp_path / "run" / "checkpoints" / f"step_{steps}" / "DONE").exists()
    metrics = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in metrics]
    assert rows[-1]["step"] == steps and rows[-1]["reband/rebands"] == steps
    wh.close()


def test_search_agent_waits_a_sampled_latency_before_each_tool_call(tiny_model_dir):
    """The async benchmark's multi-turn workload: the latency is per tool call (not per
    episode), and a malformed turn, which calls no tool, waits nothing."""
    import asyncio

    from datagen.tools import PageTools
    from tests.training.test_agent import ITEM, PAGES, ScriptedEngine
    from tests.training.agent_helpers import make_agent
    from training.models import load_tokenizer

    tok, waits = load_tokenizer(tiny_model_dir), []
    agent = make_agent(tok, PageTools.from_pages(PAGES), max_turns=5,
                                tool_latency=lambda: waits.append(0.05) or 0.05)
    engine = ScriptedEngine(tok, ["<search>Varo bridge</search>", "no tag",
                                  "<open>http://w/varo</open>", "<answer>1934</answer>"])
    traj = asyncio.run(agent.run_episode(engine, ITEM))
    assert traj.info.agent.n_tool_calls == 2 and len(waits) == 2
    assert traj.info.episode_s >= 0.1 and traj.reward == 1.0
