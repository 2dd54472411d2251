"""The search environment (training/search_env/): built from the `agent:` config section
alone, its settings declared there only; one render, one continuation, one end-of-turn."""

from __future__ import annotations

import asyncio
import dataclasses

from datagen.tools import PageTools
from tests.training.test_agent import ITEM, PAGES, ScriptedEngine
from training.config import AgentConfig, TrainConfig
from training.search_env import SearchAgentWorkflow, SearchEnv, agent_workflows, parse_action


def test_the_environment_is_built_from_the_agent_section_alone():
    """`SearchEnv(AgentConfig(...), tools)`: the results shown, the snippet form and length
    come from the section; an unknown page is an observation, counted by reason."""
    from collections import Counter

    env = SearchEnv(AgentConfig(search_k=1, snippet="sentence", snippet_chars=40),
                    PageTools.from_pages(PAGES))
    shown = env.call(parse_action("<search>Varo bridge built</search>"))
    assert shown.count("http://") == 1 and shown.startswith("Varo: The Varo bridge")
    calls, errors = Counter(), Counter()
    seen = asyncio.run(env.observe(parse_action("<open>http://w/none</open>"), calls, errors))
    assert seen.startswith("error: not_found") and errors == {"not_found": 1}
    assert calls == {"open": 1}


def test_its_settings_are_declared_once(tiny_model_dir):
    """The workflow holds no setting of its own: the `agent:` section is its environment's,
    the per-turn budget and reward mode have no default (a run's rollout section gives them),
    and a run's agents carry the section it was given."""
    from training.models import load_tokenizer
    from training.search_env import agent as agent_module

    fields = {f.name: f for f in dataclasses.fields(SearchAgentWorkflow)}
    assert not set(AgentConfig.model_fields) & set(fields)
    for name in ("env", "max_new_tokens", "reward_mode", "temperature"):
        assert fields[name].default is dataclasses.MISSING, name
    assert "AgentSettings" not in vars(agent_module)
    cfg = TrainConfig(agent={"max_turns": 2, "search_k": 1},
                      rollout={"workflow": "search", "max_new_tokens": 24, "reward": "strict"})
    train, held_out = agent_workflows(cfg, load_tokenizer(tiny_model_dir),
                                      PageTools.from_pages(PAGES))
    for agent in (train, held_out):
        assert agent.env.settings == cfg.agent
        assert (agent.max_new_tokens, agent.reward_mode) == (24, "strict")
    loop = ["<search>Varo</search>"] * 5
    traj = asyncio.run(train.run_episode(ScriptedEngine(train.tokenizer, loop), ITEM))
    assert traj.n_turns == 2 and traj.info.agent.n_search == 1


def test_one_end_of_turn_helper(tiny_model_dir):
    """The template's end-of-turn token first (the agent's turns end there), EOS after it
    when it is another token (the proxy stops at either)."""
    from training.models import load_tokenizer
    from training.search_env.chat import end_of_turn_ids

    tok = load_tokenizer(tiny_model_dir)
    assert end_of_turn_ids(tok) == (tok.convert_tokens_to_ids("<|im_end|>"),)


def test_an_episode_counts_the_distinct_pages_it_was_shown(tiny_model_dir):
    """Pages seen: the urls of the hits a search showed and of the pages opened, each once
    (a page found by search and then opened is one page); a failed open shows none."""
    from tests.training.agent_helpers import make_agent
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    agent = make_agent(tok, PageTools.from_pages(PAGES), search_k=1, max_turns=6)
    turns = ["<search>Varo bridge built</search>", "<open>http://w/varo</open>",
             "<open>http://w/none</open>", "<open>http://w/lake</open>", "<answer>1934</answer>"]
    traj = asyncio.run(agent.run_episode(ScriptedEngine(tok, turns), ITEM))
    a = traj.info.agent
    assert (a.n_search, a.n_open, a.n_pages_seen, traj.reward) == (1, 3, 2, 1.0)
