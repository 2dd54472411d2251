"""End to end on CPU: a small demo warehouse (the demo world crawled and composed, every
question passed and banded), then `datagen train --config examples/search_agent_cpu.yaml`
(shrunk) with the search agent: multi-turn episodes with real tool calls, rollouts rows with
their turn and tool counts, agent metrics in metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def _banded_copy(src: Path, dst: Path) -> Path:
    """`src`'s pages and questions in a new warehouse, each question passed and banded (the
    verify and band stages' outcome without their minutes of work)."""
    import warehouse
    from tests.conftest import _copy_warehouse
    from warehouse import QuestionRecord
    from warehouse.admit import admit

    source = warehouse.open(src, read_only=True)
    try:
        questions = source.sql("select * from questions")
    finally:
        source.close()
    wh = _copy_warehouse(src, dst)
    try:
        ids = questions.column("question_id").to_pylist()
        with wh.transaction() as tx:
            tx.append(questions, QuestionRecord)
            admit(tx, ids, check="test", solver="test")
    finally:
        wh.close()
    return dst


def _format_model(out: Path, questions: list[str]) -> Path:
    """A tiny model taught (plain torch, seconds) to open a turn with a search or an answer
    tag, so the short run has tool calls and answered/unanswered episodes (a reward signal);
    the agent's own warm start is too slow for the test budget (tested in test_agent.py)."""
    import torch

    from tests.training.agent_helpers import make_agent
    from training.models import build_tiny_model, load_causal_lm, load_tokenizer

    build_tiny_model(out, hidden=64, heads=2, kv_heads=1, intermediate=128, layers=1)
    tok, model = load_tokenizer(out), load_causal_lm(out)
    agent = make_agent(tok, None)
    turns = [tok.encode(t, add_special_tokens=False) + [tok.eos_token_id]
             for t in ("<search>city</search>", "<answer>1</answer>")]
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    torch.manual_seed(0)
    for step in range(60):
        prompt = agent.prompt_ids(questions[step % len(questions)])
        ids = torch.tensor([prompt + turns[step % 2]])
        logp = torch.log_softmax(model(ids).logits[0, :-1], -1)
        nll = -logp.gather(-1, ids[0, 1:, None])[len(prompt) - 1:].mean()
        opt.zero_grad()
        nll.backward()
        opt.step()
    model.save_pretrained(out, safe_serialization=True)
    return out


def _config(tmp_path: Path, model: Path) -> Path:
    cfg = yaml.safe_load((REPO / "examples" / "search_agent_cpu.yaml").read_text())
    cfg.update(steps=2, eval_every=2, checkpoint_every=2)
    # The example's real model, vLLM and cold start are the slow and vLLM tests' business
    # (test_agent_real_model.py); here the agent path runs on a tiny model in-process.
    cfg["model"] = {"path": str(model)}
    cfg.pop("warm_start")
    cfg["rollout"].pop("vllm_kwargs")
    cfg["rollout"]["inference"] = "hf"
    cfg["engine"]["precision"] = "fp32"
    cfg["data"].update(eval_size=4, band_weights={"medium": 1.0})
    # dynamic_sampling off: a batch never waits for groups with a signal (a tiny model's
    # episodes rarely differ; with it on, the two steps took from 1 to 15+ minutes)
    cfg["rollout"].update(batch_size=8, group_size=4, max_in_flight=8, max_new_tokens=20,
                          dynamic_sampling=False)
    cfg["agent"].update(format_reward=0.1, max_turns=2,   # answered vs not: a learning signal from step 1
                        context_tokens=768)   # the tiny model has 1,024 positions
    cfg["engine"].update(micro_batch_size=8, lr=1e-4)   # keep the taught format for 2 steps
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def banded_with_model(demo_composed: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(a banded copy of the demo warehouse, a tiny model taught the tags on its questions)."""
    import warehouse

    root = _banded_copy(demo_composed, tmp_path / "wh")
    wh = warehouse.open(root, read_only=True)
    questions = wh.sql("select question from questions limit 8").column(0).to_pylist()
    wh.close()
    return root, _format_model(tmp_path / "model", questions)


@pytest.mark.slow
@pytest.mark.integration
def test_search_agent_trains_on_a_demo_warehouse(demo_composed, tmp_path):
    import warehouse
    from datagen.cli import main

    root, model = banded_with_model(demo_composed, tmp_path)
    run_dir = tmp_path / "run"
    assert main(["train", "--config", str(_config(tmp_path, model)), "--run-dir", str(run_dir),
                 "--warehouse", str(root)]) == 0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    # a step's agent metrics cover the episodes that finished during it (a fast second
    # batch can be made of episodes that all finished before step 1 was logged)
    with_agent = [r for r in rows[1:] if "agent/turns" in r]
    assert with_agent
    for r in with_agent:
        for key in ("agent/turns", "agent/tool_calls", "agent/answer_rate", "agent/search_rate",
                    "agent/context_overflows", "agent/reward_task", "agent/reward_with_format"):
            assert key in r, key
    assert rows[-1]["eval_reward"] is not None
    wh = warehouse.open(root, read_only=True)
    try:
        got = wh.sql("select n_turns, n_tool_calls, trained from rollouts").to_pylist()
    finally:
        wh.close()
    trained = [r for r in got if r["trained"]]
    assert len(trained) == 2 * 8
    assert max(r["n_turns"] for r in got) >= 2 and sum(r["n_tool_calls"] for r in got) > 0
    assert all(r["n_turns"] >= 1 for r in got)
    _resume_one_more_step(tmp_path, model, run_dir, root)


def _resume_one_more_step(tmp_path: Path, model: Path, run_dir: Path, root: Path) -> None:
    """`--resume` of the multi-turn run with one more step: it loads the step-2 checkpoint,
    reruns the episodes that were in flight there first (their questions are rolled out again) and
    trains exactly one more batch; metrics are not doubled."""
    import warehouse
    from datagen.cli import main

    saved = json.loads((run_dir / "checkpoints" / "step_2" / "trainer_state.json").read_text())
    pending = {i["question_id"] for i in saved["controller"]["pending_items"]}
    cfg = yaml.safe_load(_config(tmp_path, model).read_text())
    cfg.update(steps=3, eval_every=3, checkpoint_every=3)
    path = tmp_path / "agent3.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["train", "--config", str(path), "--run-dir", str(run_dir), "--warehouse",
                 str(root), "--resume"]) == 0
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3]
    wh = warehouse.open(root, read_only=True)
    try:
        runs = wh.sql("select run_id, status, resumed_from from runs where kind = 'train' "
                      "order by started_at").to_pylist()
        second = runs[-1]
        rolled = wh.sql("select question_id, n_turns, trained from rollouts where run_id = ?",
                        [second["run_id"]]).to_pylist()
    finally:
        wh.close()
    assert second["status"] == "succeeded" and second["resumed_from"] == runs[0]["run_id"]
    # in flight at step 2: rerun first (two groups of 4 fit max_in_flight 8; the run may end
    # before a third is rolled out)
    assert pending and len(pending & {r["question_id"] for r in rolled}) >= min(len(pending), 2)
    assert sum(r["trained"] for r in rolled) == 8 and all(r["n_turns"] >= 1 for r in rolled)
