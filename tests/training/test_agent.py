"""The multi-turn search agent: tag parsing, tool observations, loss mask, budgets, and a real
in-process engine (logprobs aligned across turns, a weight update inside an episode)."""

import asyncio
import time

import pytest

from datagen.tools import PageTools
from tests.training.agent_helpers import make_agent
from training.search_env import Action, agent_metrics, parse_action
from training.api import GenerationResult
from warehouse.reader import TrainItem

PAGES = {"http://w/varo": ("Varo", "Varo is a city. The Varo bridge was built in 1934."),
         "http://w/lake": ("Lake Kesto", "Lake Kesto lies north of Varo. It is deep.")}
ITEM = TrainItem("q1", "When was the Varo bridge built?", "1934", (), "easy", 0.5)


class ScriptedEngine:
    """Plays fixed turns (each ended by EOS) and records the prompts it was given."""

    max_model_len = None

    def __init__(self, tok, turns, version=2):
        self.tok, self.turns, self.version, self.prompts = tok, list(turns), version, []

    async def agenerate(self, request):
        self.prompts.append(list(request.prompt_ids))
        ids = self.tok.encode(self.turns.pop(0), add_special_tokens=False)
        ids = ids[:request.max_new_tokens - 1] + [self.tok.eos_token_id]
        return GenerationResult(request.prompt_ids, ids, [-0.25] * len(ids),
                                [self.version] * len(ids), "stop")


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    from training.models import load_tokenizer

    return load_tokenizer(tiny_model_dir)


def _agent(tok, tools=None, **kw):
    return make_agent(tok, tools or PageTools.from_pages(PAGES), **kw)


def test_parse_action_table():
    assert parse_action("x <open>http://w/varo#40</open>").arg == "http://w/varo#40"
    assert parse_action("<search></search>") .kind == "malformed"
    assert parse_action("<answer>a</answer><search>b</search>").kind == "answer"
    assert parse_action("just text").arg.startswith("no <search>")


def test_search_open_answer_episode(tok):
    engine = ScriptedEngine(tok, ["<search>Varo bridge built</search>",
                                  "<open>http://w/varo</open>", "<answer>1934</answer>"])
    traj = asyncio.run(_agent(tok).run_episode(engine, ITEM))
    assert traj.reward == 1.0 and traj.n_turns == 3
    assert (traj.info.agent.n_tool_calls, traj.info.agent.n_search, traj.info.agent.n_open) == (2, 1, 1)
    assert len(traj.loss_mask) == len(traj.output_ids) == len(traj.output_logprobs)
    # every later prompt extends the earlier sequence token for token (no re-tokenising)
    full = traj.prompt_ids + traj.output_ids
    assert all(full[:len(p)] == p for p in engine.prompts)
    observed = [i for i, m in zip(traj.output_ids, traj.loss_mask) if m == 0]
    model = [i for i, m in zip(traj.output_ids, traj.loss_mask) if m == 1]
    assert "built in 1934" in tok.decode(observed)  # the page reached the model as tool output
    assert "1934" not in tok.decode(model[:-8])     # only the answer turn says it
    assert all(lp == 0.0 for lp, m in zip(traj.output_logprobs, traj.loss_mask) if m == 0)
    assert sum(traj.loss_mask) == sum(len(tok.encode(t, add_special_tokens=False)) + 1 for t in [
        "<search>Varo bridge built</search>", "<open>http://w/varo</open>",
        "<answer>1934</answer>"])


class BadTools:
    def search(self, q, k):
        if q == "slow":
            time.sleep(0.5)
        raise RuntimeError("index broken")

    def open(self, url, offset=0):
        raise KeyError(f"no stored page {url}")


def test_malformed_calls_and_failing_tools_are_observations(tok):
    engine = ScriptedEngine(tok, ["hmm", "<find>x</find>", "<search>a</search>",
                                  "<search>slow</search>", "<open>http://nowhere</open>",
                                  "<answer>1935</answer>"])
    traj = asyncio.run(_agent(tok, BadTools(), max_turns=6, tool_timeout_s=0.1)
                       .run_episode(engine, ITEM))
    assert traj.info.agent.tool_errors == {"malformed": 2, "tool_RuntimeError": 1, "timeout": 1,
                                        "not_found": 1}
    assert traj.reward == 0.0 and traj.info.agent.answered and traj.n_turns == 6
    text = tok.decode(traj.output_ids)
    assert "error: timeout" in text and "error: not_found: no stored page" in text


def test_turn_limit_context_budget_and_format_term(tok):
    loop = ["<search>Varo</search>"] * 10
    limited = asyncio.run(_agent(tok, max_turns=3).run_episode(ScriptedEngine(tok, loop), ITEM))
    assert limited.n_turns == 3 and not limited.info.agent.answered and limited.reward == 0.0
    small = _agent(tok, context_tokens=len(_agent(tok).prompt_ids(ITEM.question)) + 60,
                   max_turns=10)
    over = asyncio.run(small.run_episode(ScriptedEngine(tok, loop), ITEM))
    assert over.info.agent.overflow and len(over.prompt_ids) + len(over.output_ids) <= small.context_tokens
    fmt = _agent(tok, format_reward=0.05)
    wrong = asyncio.run(fmt.run_episode(ScriptedEngine(tok, ["<answer>1900</answer>"]), ITEM))
    assert (wrong.reward, wrong.info.agent.reward_task, wrong.info.agent.reward_format) == (0.05, 0.0, 0.05)
    with pytest.raises(ValueError, match="format_reward"):
        _agent(tok, format_reward=0.5)
    m = agent_metrics([limited, over, wrong])
    assert m["agent/answer_rate"] == pytest.approx(1 / 3) and m["agent/context_overflows"] == 1


def test_evidence_credit_pays_a_wrong_answer_for_the_chain_it_read(tok):
    """A two-page question answered wrong: reading both pages earns twice reading one; no
    answer earns nothing; a right answer stays 1; an agent given no evidence pays the answer
    alone (the held-out agent's case)."""
    both = {"q1": frozenset({"http://w/varo", "http://w/lake"})}
    agent = _agent(tok, max_turns=3, evidence_reward=0.2, evidence=both)
    play = lambda a, turns: asyncio.run(a.run_episode(ScriptedEngine(tok, turns), ITEM))  # noqa: E731
    read_two = ["<open>http://w/varo</open>", "<open>http://w/lake</open>"]
    one = play(agent, ["<open>http://w/varo</open>", "<answer>1900</answer>"])
    two = play(agent, read_two + ["<answer>1900</answer>"])
    silent = play(agent, read_two + ["hmm"])
    right = play(agent, ["<open>http://w/varo</open>", "<answer>1934</answer>"])
    assert (one.reward, two.reward) == (pytest.approx(0.1), pytest.approx(0.2))
    assert (two.info.agent.reward_task, two.info.agent.reward_evidence) == (0.0, pytest.approx(0.2))
    assert silent.reward == 0.0 and right.reward == 1.0
    assert play(_agent(tok, max_turns=3, evidence_reward=0.2), read_two + ["<answer>1900</answer>"]
                ).reward == 0.0
    assert agent_metrics([one, two])["agent/reward_evidence"] == pytest.approx(0.15)
    with pytest.raises(ValueError, match="evidence_reward"):
        _agent(tok, evidence_reward=0.6)


def test_real_engine_logprobs_aligned_and_update_mid_episode(tok, hf_engine, tiny_model_dir):
    """Random tiny model: turns are mostly malformed, so episodes run to the turn limit. The
    behaviour logprobs of model tokens equal a fresh forward pass over the whole sequence,
    and a weight update while the episode runs gives its later tokens the new version."""
    import torch

    from training.models import load_causal_lm

    agent = _agent(tok, max_turns=3, max_new_tokens=24)

    async def run():
        task = asyncio.create_task(agent.run_episode(hf_engine, ITEM))
        while hf_engine.tokens_generated < 30 and not task.done():
            await asyncio.sleep(0.01)
        await hf_engine.update_weights(1, str(tiny_model_dir))  # same weights, new version
        return await task

    traj = asyncio.run(run())
    assert traj.n_turns >= 2 and {0, 1} <= set(traj.output_versions)
    ids = torch.tensor([traj.prompt_ids + traj.output_ids])
    with torch.no_grad():
        logp = torch.log_softmax(load_causal_lm(tiny_model_dir)(ids).logits[0, :-1].float(), -1)
    ref = logp.gather(-1, ids[0, 1:, None])[:, 0][len(traj.prompt_ids) - 1:]
    got = torch.tensor(traj.output_logprobs)
    mask = torch.tensor(traj.loss_mask).bool()
    assert torch.allclose(got[mask], ref[mask], atol=1e-3)


def test_train_batch_masks_tool_output(tok):
    from training.api import RolloutBatch
    from training.trainer import build_train_batch

    engine = ScriptedEngine(tok, ["<search>Varo</search>", "<answer>1934</answer>",
                                  "<answer>7</answer>"])
    agent = _agent(tok)
    a = asyncio.run(agent.run_episode(engine, ITEM))
    b = asyncio.run(agent.run_episode(engine, ITEM))
    batch = build_train_batch(RolloutBatch([[a, b]], [ITEM], 0, [0, 0]), 0)
    row = batch["loss_mask"][0, len(a.prompt_ids):len(a.prompt_ids) + len(a.output_ids)]
    assert row.tolist() == a.loss_mask and batch["loss_mask"][1].sum() == len(b.output_ids)


def test_a_two_page_script_follows_its_chain_page_by_page(tok):
    """The cold start's script of a bridge question: search, open the first page at its quote
    (it names the next), search that name, open its page, answer: two searches, two opens."""
    from training.search_env.warm import TeacherEngine, oracle_plan

    agent = _agent(tok, search_k=1, snippet_chars=20, max_turns=6)
    item = TrainItem("q2", "When was the bridge of the city Lake Kesto lies north of built?",
                     "1934", (), "hard", 0.1)
    evidence = [{"url": "http://w/lake", "quote": "Lake Kesto lies north of Varo."},
                {"url": "http://w/varo", "quote": "The Varo bridge was built in 1934."}]
    plan = oracle_plan(agent, item, evidence)
    assert [t.split(">")[0] for t in plan] == ["<search", "<open", "<search", "<open", "<answer"]
    assert plan[1].startswith("<open>http://w/lake") and plan[2] == "<search>Varo</search>"
    assert plan[3].startswith("<open>http://w/varo#")
    traj = asyncio.run(agent.run_episode(TeacherEngine(tok, plan), item))
    assert traj.reward == 1.0
    assert (traj.info.agent.n_search, traj.info.agent.n_open) == (2, 2)


def test_config_selects_the_agent():
    from training.config import load_config

    cfg = load_config(overrides={"rollout": {"workflow": "search"}, "agent": {"max_turns": 2}})
    assert (cfg.rollout.workflow, cfg.agent.max_turns) == ("search", 2)
    with pytest.raises(ValueError, match="format_reward"):
        load_config(overrides={"agent": {"format_reward": 0.2}})


def test_warm_start_scripts_are_agent_episodes(tok):
    """Oracle scripts (search, open at the quote when the results lack the gold, answer) and
    format scripts play through the agent itself: same template, no loss on tool output."""
    import random

    from training.search_env.warm import TeacherEngine, format_plan, oracle_plan

    agent = _agent(tok, search_k=1, snippet_chars=20)
    evidence = [{"url": "http://w/varo", "quote": "The Varo bridge was built in 1934."}]
    plan = oracle_plan(agent, ITEM, evidence)
    assert plan[1].startswith("<open>http://w/varo#") and plan[-1] == "<answer>1934</answer>"
    traj = asyncio.run(agent.run_episode(TeacherEngine(tok, plan), ITEM))
    assert traj.reward == 1.0 and traj.info.agent.n_open == 1
    assert "built in 1934" in tok.decode([i for i, m in zip(traj.output_ids, traj.loss_mask)
                                          if not m])
    agent = _agent(tok, search_k=1, snippet_chars=80)
    shown = agent.env.call(Action("search", ITEM.question))
    guesses = {format_plan(agent, ITEM, random.Random(s))[1] for s in range(40)}
    fmt = format_plan(agent, ITEM, random.Random(0))
    assert fmt[0] == f"<search>{ITEM.question}</search>"   # the query copies the question
    words = {g.removeprefix("<answer>").removesuffix("</answer>") for g in guesses}
    # a random word it was shown, neither a stop word nor one the question holds
    assert words == {"city", "1934"} and all(w in shown for w in words)
