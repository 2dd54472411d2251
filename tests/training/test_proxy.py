"""The trainer's OpenAI-compatible endpoint (training/proxy.py) and the user's agent as a
workflow (training/user_agent.py): real HTTP on loopback through the `openai` client, token
ids continued across calls, the loss mask on generated tokens only, refusals with a reason."""

import asyncio

import openai
import pytest

from datagen.tools import PageTools
from training.api import GenerationResult
from training.search_env.chat import continue_ids, end_of_turn_ids, render_ids
from training.proxy import ChatProxy
from training.user_agent import (CountedTools, UserAgentWorkflow, load_entrypoint,
                                 trajectory_from_calls)
from warehouse.reader import TrainItem

ITEM = TrainItem("q1", "When was the Varo bridge built?", "1934", (), "easy", 0.5)
PAGES = {"http://w/varo": ("Varo", "Varo is a city. The Varo bridge was built in 1934.")}


class ScriptedEngine:
    """Replies with fixed texts (each closed by the end-of-turn token); records prompts."""

    def __init__(self, tok, replies, version=3):
        self.tok, self.replies, self.version, self.prompts = tok, list(replies), version, []

    async def agenerate(self, request):
        self.prompts.append(list(request.prompt_ids))
        ids = self.tok.encode(self.replies.pop(0), add_special_tokens=False)
        ids = ids[:request.max_new_tokens - 1] + [request.stop_token_ids[0]]
        return GenerationResult(request.prompt_ids, ids, [-0.5] * len(ids),
                                [self.version] * len(ids), "stop")


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    from training.models import load_tokenizer

    return load_tokenizer(tiny_model_dir)


def _run(coro_fn, tok, engine, **kw):
    """Start a proxy in a fresh loop, run `coro_fn(proxy, engine)`, stop the proxy."""
    async def main():
        proxy = ChatProxy(tok, max_new_tokens=kw.pop("max_new_tokens", 24),
                          context_tokens=kw.pop("context_tokens", 512), **kw)
        await proxy.start()
        try:
            return await coro_fn(proxy, engine)
        finally:
            await proxy.close()
    return asyncio.run(main())


async def _two_turns(question, client, tools):
    """A user's agent as people write them: search, then answer from what it found."""
    msgs = [{"role": "system", "content": "Search, then answer."},
            {"role": "user", "content": question}]
    first = await client.chat.completions.create(model="policy", messages=msgs)
    msgs.append({"role": "assistant", "content": first.choices[0].message.content})
    hit = tools.search(question, 1)[0]
    msgs.append({"role": "user", "content": f"Result: {hit.snippet}"})
    second = await client.chat.completions.create(model="policy", messages=msgs)
    return second.choices[0].message.content


async def _edits_history(question, client, tools):
    msgs = [{"role": "user", "content": question}]
    await client.chat.completions.create(model="policy", messages=msgs)
    msgs += [{"role": "assistant", "content": "something else"}, {"role": "user", "content": "?"}]
    return (await client.chat.completions.create(model="policy", messages=msgs)).choices[0] \
        .message.content


def test_user_agent_episode_is_one_trajectory_with_loss_on_generated_tokens(tok):
    engine = ScriptedEngine(tok, ["search Varo bridge", "1934"])

    async def play(proxy, engine):
        wf = UserAgentWorkflow(proxy, _two_turns, PageTools.from_pages(PAGES))
        return await wf.run_episode(engine, ITEM), proxy.counts
    traj, counts = _run(play, tok, engine)
    assert traj.reward == 1.0 and traj.n_turns == 2 and traj.info.agent.n_search == 1
    first_prompt, second_prompt = engine.prompts
    assert traj.prompt_ids == first_prompt
    # the second call continued the first's ids: earlier tokens never re-tokenised
    assert second_prompt == traj.prompt_ids + traj.output_ids[:len(second_prompt)
                                                             - len(first_prompt)]
    generated = [t for t, m in zip(traj.output_ids, traj.loss_mask) if m]
    replies = [tok.encode(r, add_special_tokens=False) for r in ("search Varo bridge", "1934")]
    eot = end_of_turn_ids(tok)[0]
    assert generated == replies[0] + [eot] + replies[1] + [eot]
    masked = [lp for lp, m in zip(traj.output_logprobs, traj.loss_mask) if not m]
    assert masked and all(lp == 0.0 for lp in masked)
    assert "Result:" in tok.decode([t for t, m in zip(traj.output_ids, traj.loss_mask) if not m])
    assert counts["calls"] == 2 and counts["calls_not_continuing"] == 0


def test_an_agent_that_edits_its_history_is_rejected_with_a_reason(tok):
    engine = ScriptedEngine(tok, ["a", "b"])

    async def play(proxy, engine):
        wf = UserAgentWorkflow(proxy, _edits_history, PageTools.from_pages(PAGES))
        return await wf.run_episode(engine, ITEM), wf.rejected, proxy.counts
    traj, rejected, counts = _run(play, tok, engine)
    assert traj is None and rejected == {"history_edited": 1}
    assert counts["calls_not_continuing"] == 1


def test_refusals_are_400s_that_say_what_to_change(tok):
    async def probe(proxy, engine):
        episode = proxy.open_episode(engine)
        ok = openai.AsyncOpenAI(base_url=proxy.url, api_key="x", max_retries=0,
                                default_headers={"X-Episode-Id": episode})
        anon = openai.AsyncOpenAI(base_url=proxy.url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        errors = {}
        for name, call in {
                "stream": ok.chat.completions.create(model="p", messages=msgs, stream=True),
                "n": ok.chat.completions.create(model="p", messages=msgs, n=2),
                "stop": ok.chat.completions.create(model="p", messages=msgs, stop=["\n"]),
                "no_episode": anon.chat.completions.create(model="p", messages=msgs),
                "unknown": anon.chat.completions.create(model="p", messages=msgs,
                                                        user="ep-nope"),
                "bad_role": ok.chat.completions.create(model="p",
                                                       messages=[{"role": "x", "content": ""}]),
        }.items():
            with pytest.raises(openai.BadRequestError) as info:
                await call
            errors[name] = str(info.value)
        models = await ok.models.list()
        await ok.close(), await anon.close()
        return errors, [m.id for m in models.data]
    errors, models = _run(probe, tok, ScriptedEngine(tok, []), model_name="smol")
    assert "streaming" in errors["stream"] and "n = 1" in errors["n"]
    assert "stop strings" in errors["stop"] and "X-Episode-Id" in errors["no_episode"]
    assert "ep-nope" in errors["unknown"] and "messages.0.role" in errors["bad_role"]
    assert models == ["smol"]


def test_context_limit_and_max_tokens_follow_the_run(tok):
    async def probe(proxy, engine):
        episode = proxy.open_episode(engine)
        long = {"messages": [{"role": "user", "content": "word " * 400}]}
        with pytest.raises(Exception, match="context"):
            await proxy.complete(episode, long)
        reply = await proxy.complete(episode, {"messages": [{"role": "user", "content": "hi"}],
                                               "max_tokens": 500, "temperature": 0.2})
        return reply, proxy.counts
    reply, counts = _run(probe, tok, ScriptedEngine(tok, ["one two three four five six"]),
                         max_new_tokens=4, context_tokens=64)
    assert reply["usage"]["completion_tokens"] == 4 and reply["choices"][0]["finish_reason"]
    assert counts["temperature_ignored"] == 1


def test_the_real_engine_answers_through_the_endpoint_with_logprobs_recorded(tok, hf_engine):
    async def play(proxy, engine):
        episode = proxy.open_episode(engine)
        client = openai.AsyncOpenAI(base_url=proxy.url, api_key="x", max_retries=0,
                                    default_headers={"X-Episode-Id": episode})
        reply = await client.chat.completions.create(
            model="policy", messages=[{"role": "user", "content": "When was it built?"}])
        await client.close()
        return reply, proxy.close_episode(episode).calls
    reply, calls = _run(play, tok, hf_engine, max_new_tokens=8)
    (call,) = calls
    assert reply.choices[0].message.content == call.text
    assert call.prompt_ids == render_ids(tok, [("user", "When was it built?")])
    assert len(call.result.output_logprobs) == len(call.result.output_ids) > 0
    assert all(lp <= 0.0 for lp in call.result.output_logprobs)
    assert reply.usage.completion_tokens == len(call.result.output_ids)


def test_continue_ids_equals_the_templates_rendering_at_the_turn_boundary(tok):
    m1 = [("system", "Be brief."), ("user", "Who built the Varo bridge?")]
    prompt = render_ids(tok, m1)
    out = tok.encode("search Varo", add_special_tokens=False) + [end_of_turn_ids(tok)[0]]
    reply = tok.decode(out, skip_special_tokens=True)
    m2 = m1 + [("assistant", reply), ("user", "Result: the city did.")]
    assert continue_ids(tok, m1, prompt, out, reply, m2) == render_ids(tok, m2)
    assert continue_ids(tok, m1, prompt, out, "edited", m2[:2] + [("assistant", "edited"),
                                                                   m2[3]]) is None


def test_trajectory_from_calls_reasons():
    assert trajectory_from_calls([]) == "no_model_call"


def test_load_entrypoint_errors_name_the_spec():
    for spec, says in (("nomodule", "package.module:function"), ("no/file.py:agent", "no file"),
                       ("training.nope:agent", "No module"),
                       ("training.user_agent:missing", "missing"),
                       ("training.user_agent:load_entrypoint", "not an async function")):
        with pytest.raises(ValueError, match=says):
            load_entrypoint(spec)
    assert load_entrypoint("tests.training.test_proxy:_two_turns") is _two_turns


def test_the_example_agent_plays_the_in_process_agents_recipe():
    """examples/search_agent_openai.py loads by file path and keeps the search environment's
    prompt and tags, so the two can be compared step for step."""
    from training.search_env import env
    fn = load_entrypoint("examples/search_agent_openai.py:agent")
    example = __import__("sys").modules[fn.__module__]
    assert example.SYSTEM == env.SYSTEM_PROMPT
    assert example.TAG.pattern == env._TAG.pattern


def test_the_example_agent_reads_what_the_recipes_agent_reads():
    """The example's search and open results are the in-process agent's text under the recipe's
    agent settings (examples/search_agent_cpu.yaml), so the two runs see the same pages."""
    import yaml

    from training.config import AgentConfig
    from training.search_env import SearchEnv, parse_action
    fn = load_entrypoint("examples/search_agent_openai.py:agent")
    example = __import__("sys").modules[fn.__module__]
    config = yaml.safe_load(open("examples/search_agent_cpu.yaml"))
    recipe = config["agent"]
    assert (example.MAX_TURNS, example.SEARCH_K, example.SNIPPET_CHARS, example.MAX_TOKENS) == (
        recipe["max_turns"], recipe["search_k"], recipe["snippet_chars"],
        config["rollout"]["max_new_tokens"])
    pages = {**PAGES, "http://w/leith": ("Leith", "Leith is a port. Its bridge opened in 1901.")}
    tools = PageTools.from_pages(pages)
    env = SearchEnv(AgentConfig(**recipe), tools)
    for text in ["<search>when was the bridge built</search>", "<open>http://w/varo</open>",
                 "<open>http://w/nowhere</open>"]:
        action = parse_action(text)
        mine = env.call(action) if "nowhere" not in text else None
        theirs = example.observe(example.TAG.search(text), CountedTools(tools))
        assert mine is None and theirs.startswith("error: not_found") or theirs == mine


async def _talks_until_refused(question, client, tools):
    msgs = [{"role": "user", "content": question}]
    while True:
        reply = await client.chat.completions.create(model="policy", messages=msgs)
        msgs += [{"role": "assistant", "content": reply.choices[0].message.content},
                 {"role": "user", "content": "go on " * 10}]


def test_an_agent_past_the_context_ends_as_an_overflow_with_its_tokens_kept(tok):
    engine = ScriptedEngine(tok, ["more words"] * 50)

    async def play(proxy, engine):
        wf = UserAgentWorkflow(proxy, _talks_until_refused, PageTools.from_pages(PAGES))
        return await wf.run_episode(engine, ITEM)
    traj = _run(play, tok, engine, context_tokens=120)
    assert traj.info.agent.overflow and traj.reward == 0.0 and traj.n_turns >= 2
    assert len(traj.prompt_ids) + len(traj.output_ids) <= 120 and sum(traj.loss_mask) > 0


async def _three_free_turns(question, client, tools):
    msgs = [{"role": "user", "content": question}]
    for _ in range(3):
        reply = await client.chat.completions.create(model="policy", messages=msgs)
        msgs += [{"role": "assistant", "content": reply.choices[0].message.content},
                 {"role": "user", "content": "and then?"}]
    return "none"


def test_a_weight_update_mid_episode_through_the_endpoint(tok, hf_engine, tiny_model_dir):
    """The real engine behind the endpoint: a weight update while the user's agent runs
    gives later tokens the new version, and the recorded logprobs of the generated tokens
    equal a fresh forward pass over the trajectory the calls became."""
    import torch

    from training.models import load_causal_lm

    async def play(proxy, engine):
        wf = UserAgentWorkflow(proxy, _three_free_turns, PageTools.from_pages(PAGES))
        task = asyncio.create_task(wf.run_episode(engine, ITEM))
        while engine.tokens_generated < 30 and not task.done():
            await asyncio.sleep(0.01)
        await engine.update_weights(1, str(tiny_model_dir))   # same weights, new version
        return await task
    traj = _run(play, tok, hf_engine, max_new_tokens=24)
    assert traj.n_turns == 3 and {0, 1} <= set(traj.output_versions)
    ids = torch.tensor([traj.prompt_ids + traj.output_ids])
    with torch.no_grad():
        logp = torch.log_softmax(load_causal_lm(tiny_model_dir)(ids).logits[0, :-1].float(), -1)
    ref = logp.gather(-1, ids[0, 1:, None])[:, 0][len(traj.prompt_ids) - 1:]
    mask = torch.tensor(traj.loss_mask).bool()
    assert torch.allclose(torch.tensor(traj.output_logprobs)[mask], ref[mask], atol=1e-3)
