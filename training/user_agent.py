"""The agent a user already wrote, as an RL workflow.

`rollout.workflow: "package.module:function"` (or `"path/to/file.py:function"`) names an
async function

    async def agent(question: str, client: openai.AsyncOpenAI, tools) -> str | tuple[str, float]

that answers one question with an OpenAI client (pointed at the trainer's `ChatProxy`, its
episode id already in the client's headers) and the page tools (`tools.search(query, k)`,
`tools.open(url, offset)`: `datagen.tools.PageTools`). It returns the answer, or the answer
and its own reward; otherwise the reward is the verifiers' reward of the answer
(`rollout.reward`). The episode's recorded calls become one multi-turn trajectory: the tokens
the policy generated get loss, the rest (system, user and tool text) none. If a call does not
continue the one before it (the agent edited or dropped a turn), the episode is rejected and
counted by reason in `UserAgentWorkflow.rejected`: it is never trained on tokens the policy
did not produce.
"""

from __future__ import annotations

import importlib
import inspect
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from training.api import AgentInfo, EpisodeInfo, EpisodeItem, InferenceEngine, Trajectory
from training.proxy import ChatCall, ChatProxy, RecordedEpisode

__all__ = ["CountedTools", "UserAgentWorkflow", "load_entrypoint", "trajectory_from_calls"]

AgentFn = Callable[..., Awaitable["str | tuple[str, float]"]]


def load_entrypoint(spec: str) -> AgentFn:
    """The async function `package.module:function` or `path/to/file.py:function` names
    (a module is looked up from the working directory too, as uvicorn does); ValueError
    saying what is wrong (checked when the config is read, not at the first episode)."""
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise ValueError(f"rollout.workflow {spec!r}: write 'package.module:function' or "
                         "'path/to/file.py:function'")
    try:
        fn = getattr(_module(where), attr)
    # probe: a user's module may lack the named function; that is their mistake, one line
    except (ImportError, AttributeError, OSError) as exc:
        raise ValueError(f"rollout.workflow {spec!r}: {exc}") from None
    if not inspect.iscoroutinefunction(fn):
        raise ValueError(f"rollout.workflow {spec!r} is not an async function "
                         "(async def agent(question, client, tools))")
    return fn


def _module(where: str):
    import importlib.util
    import os
    import sys
    if where.endswith(".py"):
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise OSError(f"no file {path}")
        name = "user_agent_" + os.path.splitext(os.path.basename(path))[0]
        loaded = sys.modules.get(name)   # only this function loads user_agent_* modules
        if loaded is not None and loaded.__file__ == path:
            return loaded    # loaded once: the config check, then the run
        spec = importlib.util.spec_from_file_location(name, path)
        module = sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return importlib.import_module(where)


@dataclass
class _Tokens:
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)

    def add(self, ids, logprobs, versions, mask: int) -> None:
        self.ids += ids
        self.logprobs += logprobs
        self.versions += versions
        self.mask += [mask] * len(ids)


def trajectory_from_calls(calls: list[ChatCall]) -> tuple[list[int], _Tokens] | str:
    """(prompt ids, output tokens with their loss mask) of one episode's calls, or the reason
    they are not one conversation (`no_model_call`, `history_edited`)."""
    if not calls:
        return "no_model_call"
    prompt, out = list(calls[0].prompt_ids), _Tokens()
    for call in calls:
        seen = prompt + out.ids
        if call.prompt_ids[:len(seen)] != seen:
            return "history_edited"
        added = call.prompt_ids[len(seen):]
        version = out.versions[-1] if out.versions else -1
        out.add(added, [0.0] * len(added), [version] * len(added), 0)
        r = call.result
        out.add(r.output_ids, r.output_logprobs, r.output_versions, 1)
    return prompt, out


class CountedTools:
    """The page tools as the agent sees them, counting its searches and opens."""

    def __init__(self, tools):
        self._tools, self.calls = tools, Counter()

    def search(self, query: str, k: int = 5):
        self.calls["search"] += 1
        return self._tools.search(query, k)

    def open(self, url: str, offset: int = 0):
        self.calls["open"] += 1
        return self._tools.open(url, offset)

    def page(self, url: str) -> tuple[str, str]:
        """A result's (title, text), to cut its snippet from, as the in-process agent's
        search does (not counted: it opens nothing the agent is shown)."""
        return self._tools.page(url)


@dataclass
class UserAgentWorkflow:
    """Episodes played by the user's agent function through the trainer's endpoint."""

    proxy: ChatProxy
    entrypoint: AgentFn
    tools: object
    reward_mode: str = "reward"
    temperature: float | None = None     # None: the proxy's (the rollouts')
    rejected: Counter = field(default_factory=Counter)

    async def aclose(self) -> None:
        await self.proxy.close()

    def prompt_ids(self, question: str) -> list[int]:
        from training.search_env.chat import render_ids
        return render_ids(self.proxy.tokenizer, [("user", question)])

    async def run_episode(self, engine: InferenceEngine,
                          item: EpisodeItem) -> Trajectory | None:
        t0 = time.monotonic()
        tools = CountedTools(self.tools)
        answer, own_reward, episode = await self._play(engine, item.question, tools)
        tokens = trajectory_from_calls(episode.calls)
        if isinstance(tokens, str):
            self.rejected[tokens] += 1
            return None
        return self._trajectory(item, tokens, episode, answer, own_reward, tools,
                                time.monotonic() - t0)

    async def _play(self, engine: InferenceEngine, question: str, tools: CountedTools):
        """Run the user's function once: (answer, its reward or None, what was recorded).

        A function that fails because its conversation outgrew the model's context ends the
        episode as the in-process agent's overflow does: no answer, reward 0, its tokens kept.
        Any other exception propagates (the controller fails the episode and counts it)."""
        import openai
        url = await self.proxy.ensure_started()
        episode = self.proxy.open_episode(engine, self.temperature)
        client = openai.AsyncOpenAI(base_url=url, api_key="local", max_retries=0,
                                    default_headers={"X-Episode-Id": episode})
        try:
            result = await self.entrypoint(question, client, tools)
        except openai.BadRequestError:
            if not self.proxy.recorded(episode).overflow:
                raise
            result = None
        finally:
            recorded = self.proxy.close_episode(episode)
            await client.close()
        if isinstance(result, tuple):
            return str(result[0]), float(result[1]), recorded
        return (None if result is None else str(result)), None, recorded

    def _trajectory(self, item: EpisodeItem, tokens, episode: RecordedEpisode,
                    answer: str | None, own_reward: float | None, tools: CountedTools,
                    seconds: float) -> Trajectory:
        from training.workflow import answer_reward
        prompt, out = tokens
        calls = episode.calls
        finished = calls[-1].result.finish_reason == "stop"
        if own_reward is not None:
            reward, rule = own_reward, "agent_reward"
        elif answer is None:
            reward, rule = 0.0, "no_answer"
        else:
            reward, rule = answer_reward(answer, item.answer, tuple(item.answer_aliases or ()),
                                         item.question, self.reward_mode, finished=finished)
        info = EpisodeInfo(
            reward_rule=rule, finish_reason="stop" if finished else "length", episode_s=seconds,
            n_interruptions=sum(c.result.n_interruptions for c in calls),
            agent=AgentInfo(answer=answer, overflow=episode.overflow, n_search=tools.calls["search"],
                            n_open=tools.calls["open"], reward_task=reward))
        return Trajectory(
            question_id=item.question_id, prompt_ids=prompt, output_ids=out.ids,
            output_logprobs=out.logprobs, output_versions=out.versions, reward=reward,
            n_turns=len(calls), loss_mask=out.mask, info=info,
            text=self.proxy.tokenizer.decode(out.ids, skip_special_tokens=False))
