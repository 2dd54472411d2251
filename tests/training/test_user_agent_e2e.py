"""End to end on CPU: `datagen train` with `rollout.workflow` naming the user's agent
(examples/search_agent_openai.py, a plain async function with the openai client): its calls
go through the trainer's OpenAI-compatible endpoint, become multi-turn trajectories, and two
RL steps train on them; rollouts rows carry the turns and tool calls the function made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.training.test_agent_e2e import _config, banded_with_model


async def agent_with_format_bonus(question, client, tools):
    """The example agent, paying itself 0.1 for answering: a tiny model's episodes get a
    learning signal in two steps (and the function-given reward path runs)."""
    from training.user_agent import load_entrypoint
    answer = await load_entrypoint("examples/search_agent_openai.py:agent")(question, client,
                                                                            tools)
    return answer, 0.1 if answer else 0.0


@pytest.mark.slow
@pytest.mark.integration
def test_a_users_openai_agent_trains_through_the_trainers_endpoint(demo_composed, tmp_path):
    import warehouse
    from datagen.cli import main

    root, model = banded_with_model(demo_composed, tmp_path)
    cfg = yaml.safe_load(_config(tmp_path, model).read_text())
    cfg["rollout"]["workflow"] = "tests.training.test_user_agent_e2e:agent_with_format_bonus"
    # the search agent's cold start teaches the example its tags (the same prompt): one step
    cfg["warm_start"] = {"steps": 1, "batch_size": 4, "answers": "true", "search_scripts": True}
    path = tmp_path / "user_agent.yaml"
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    assert main(["train", "--config", str(path), "--run-dir", str(run_dir),
                 "--warehouse", str(root)]) == 0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2] and rows[-1]["eval_reward"] is not None
    assert (run_dir / "warm_start" / "config.json").is_file()
    assert any(r["loss"] != 0.0 for r in rows[1:])      # a signal reached the loss
    # the trajectories made from the recorded calls line up with the trainer's tokens:
    # the behaviour logprobs the endpoint recorded equal the trainer's own at v0
    assert rows[1]["kl_behav_prox"] < 1e-3
    wh = warehouse.open(root, read_only=True)
    try:
        got = wh.sql("select n_turns, n_tool_calls, trained from rollouts").to_pylist()
    finally:
        wh.close()
    assert sum(r["trained"] for r in got) == 2 * 8
    assert max(r["n_turns"] for r in got) >= 2 and sum(r["n_tool_calls"] for r in got) > 0
