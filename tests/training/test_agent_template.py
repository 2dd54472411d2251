"""The search agent on a real chat model's template, token in / token out: at every turn
boundary an episode's ids are the template's rendering of its messages (tokens lost or
re-cut at template boundaries are the bug this guards against), with the real SmolLM2
tokenizer (no weights needed; skipped when the model is not pulled), the tiny ChatML one,
and a template without a tool role (tool results become user turns)."""

from __future__ import annotations

import asyncio
import functools

import pytest

from datagen.tools import PageTools
from tests.training.agent_helpers import make_agent
from training.api import GenerationResult
from warehouse.reader import TrainItem

PAGES = {"http://w/varo": ("Varo", "Varo is a city. The Varo bridge was built in 1934 by "
                                   "the river's north bank, ten years after the war.")}
ITEM = TrainItem("q1", "When was the Varo bridge built?", "1934", (), "easy", 0.5)
TURNS = ["<search>Varo bridge built</search>", "<open>http://w/varo</open>",
         "I read it. <answer>1934</answer>"]
NO_TOOL_ROLE = (
    "{% for m in messages %}{% if m['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('roles: system, user, assistant') }}{% endif %}"
    "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


class TemplateEngine:
    """Plays fixed turns as the canonical ids of their text, ended by the request's stop token
    when they fit (else cut: finish 'length'); records the requests."""

    def __init__(self, tok, turns, max_model_len=None):
        self.tok, self.turns, self.requests, self.version = tok, list(turns), [], 0
        self.max_model_len = max_model_len

    async def agenerate(self, request):
        self.requests.append(request)
        ids = self.tok.encode(self.turns.pop(0), add_special_tokens=False)
        stop = len(ids) < request.max_new_tokens
        ids = ids + [request.stop_token_ids[0]] if stop else ids[:request.max_new_tokens]
        return GenerationResult(request.prompt_ids, ids, [-0.5] * len(ids), [0] * len(ids),
                                "stop" if stop else "length")


@functools.cache
def _load(folder: str):
    from training.models import load_tokenizer

    return load_tokenizer(folder)


@pytest.fixture(params=["smollm2", "tiny_chatml", "tiny_no_tool_role"])
def tok(request, tiny_model_dir):
    from training.models import load_tokenizer

    if request.param == "smollm2":
        return _load(str(request.getfixturevalue("smollm2_folder")))
    tok = load_tokenizer(tiny_model_dir)
    if request.param == "tiny_no_tool_role":
        tok.chat_template = NO_TOOL_ROLE
    return tok


def _rendered(tok, messages, generation_prompt=True) -> list[int]:
    ids = tok.apply_chat_template([{"role": r, "content": c} for r, c in messages],
                                  add_generation_prompt=generation_prompt, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@pytest.mark.parametrize("observation_tokens,turn_tokens", [(160, 32), (7, 32), (160, 6)])
def test_ids_are_the_templates_rendering_at_every_turn_boundary(tok, observation_tokens,
                                                                turn_tokens):
    """Cases: whole observations; observations cut to 7 tokens; model turns cut by the
    budget (no end-of-turn token: the template's closing is added after them)."""
    agent = make_agent(tok, PageTools.from_pages(PAGES), max_turns=3,
                                max_observation_tokens=observation_tokens,
                                max_new_tokens=turn_tokens, search_k=1)
    engine = TemplateEngine(tok, TURNS)
    ep, traj = asyncio.run(agent.play_tokens(engine, ITEM))
    roles = [r for r, _ in ep.messages]
    tool = "user" if tok.chat_template == NO_TOOL_ROLE else "tool"
    assert roles == ["system", "user", "assistant", tool, "assistant", tool, "assistant"]
    for k, request in enumerate(engine.requests):   # each turn's prompt: the rendering so far
        assert request.prompt_ids == _rendered(tok, ep.messages[:2 + 2 * k]), k
        assert request.stop_token_ids == (agent.eot_id,)
    full = traj.prompt_ids + traj.output_ids
    assert full[:len(engine.requests[-1].prompt_ids)] == engine.requests[-1].prompt_ids
    closed = _rendered(tok, ep.messages, generation_prompt=False)
    if turn_tokens > 6:   # the last turn ended at the end-of-turn token: only the template's
        rest = closed[len(full):]   # separator after it is left
        assert closed[:len(full)] == full and tok.decode(rest).strip() == ""
        assert full[-1] == agent.eot_id == tok.convert_tokens_to_ids("<|im_end|>")
    observed = tok.decode([i for i, m in zip(traj.output_ids, traj.loss_mask) if not m])
    if turn_tokens > 6:   # (cut turns are malformed: the observations are errors)
        assert ("built in 1934" in observed) == (observation_tokens > 7)
    else:
        assert observed.count("error: malformed") == 2
    assert len(traj.loss_mask) == len(traj.output_ids) == len(traj.output_logprobs)


def test_the_context_budget_is_the_models(tiny_model_dir):
    """None: the model's own length (the tiny Qwen2's 8,192 positions); more is refused with
    one line; an engine that serves less (vLLM's max_model_len) bounds the episode."""
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    tools = PageTools.from_pages(PAGES)
    assert make_agent(tok, tools).context_tokens == 8192
    with pytest.raises(ValueError, match="longer than the model's context length 8192"):
        make_agent(tok, tools, context_tokens=8193)
    agent = make_agent(tok, tools, max_turns=8, max_new_tokens=32)
    prompt = len(agent.prompt_ids(ITEM.question))
    engine = TemplateEngine(tok, ["<search>Varo bridge</search>"] * 8, prompt + 90)
    traj = asyncio.run(agent.run_episode(engine, ITEM))
    assert traj.info.agent.overflow and len(traj.prompt_ids + traj.output_ids) <= prompt + 90


TWO_PAGES = {
    "http://w/mirage": ("Mirage (1965 film)", "Mirage is a 1965 thriller directed by Edward "
                        "Dmytryk from a screenplay by Peter Stone."),
    "http://w/dmytryk": ("Edward Dmytryk", "Edward Dmytryk (September 4, 1908 – July 1, 1999) "
                         "was a Canadian-born American film director."),
}
TWO_PAGE_ITEM = TrainItem("q2", "When was the director who directed Mirage born?",
                          "September 4, 1908", (), "hard", 0.2)
TWO_PAGE_TURNS = ["<search>Mirage 1965 thriller director</search>",
                  "<open>http://w/mirage</open>",
                  "<search>Edward Dmytryk</search>",
                  "<open>http://w/dmytryk</open>",
                  "<answer>September 4, 1908</answer>"]


def test_a_two_page_episode_searches_twice_and_matches_the_template(tok):
    """The path a two-page question needs (search, open, search the bridge entity the page
    names, open, answer) at 8 turns: two searches, both pages seen, and at every turn
    boundary the ids are the template's rendering of the messages so far."""
    agent = make_agent(tok, PageTools.from_pages(TWO_PAGES), max_turns=8,
                       max_observation_tokens=160, max_new_tokens=32, search_k=1)
    engine = TemplateEngine(tok, TWO_PAGE_TURNS)
    ep, traj = asyncio.run(agent.play_tokens(engine, TWO_PAGE_ITEM))
    calls = [c for _, c in ep.messages if c.startswith("<search>")]
    assert len(engine.requests) == 5 and len(calls) == 2 and ep.calls["search"] == 2
    assert ep.seen == set(TWO_PAGES) and ep.messages[-1][1].endswith(
        "<answer>September 4, 1908</answer>")
    for k, request in enumerate(engine.requests):
        assert request.prompt_ids == _rendered(tok, ep.messages[:2 + 2 * k]), k
    full = traj.prompt_ids + traj.output_ids
    closed = _rendered(tok, ep.messages, generation_prompt=False)
    assert closed[:len(full)] == full and tok.decode(closed[len(full):]).strip() == ""
