"""The multi-turn search agent: `SearchAgentWorkflow.run_episode(engine, item) -> Trajectory`.

One episode is one growing token sequence, rendered by the model's own chat template
(training/agent_turns.py): system and user turns, then the model's turns as generated, each
tool result as a `tool` turn (a `user` turn when the template has no tool role) followed by
the next assistant header. Earlier turns are never re-tokenised, so the behaviour logprobs
stay aligned with the ids the trainer sees, and at every turn boundary the ids are the
template's rendering of the episode's messages. With ChatML (SmolLM2, Qwen, the tiny models)::

    <|im_start|>system\\n{SYSTEM_PROMPT}<|im_end|>\\n
    <|im_start|>user\\n{question}<|im_end|>\\n
    <|im_start|>assistant\\n  {model turn 1} <|im_end|>           <- loss mask 1
    \\n<|im_start|>tool\\n{observation}<|im_end|>\\n<|im_start|>assistant\\n  <- loss mask 0
    {model turn 2} <|im_end|> ...

A turn ends at the template's end-of-turn token (`<|im_end|>` here), a stop token of every
request.

Tag format: a turn holds one action, the first complete tag in it counts:
`<search>query</search>`, `<open>url</open>` (or `<open>url#offset</open>` to page on),
`<answer>text</answer>` (ends the episode). A turn without a tag, an unknown or empty tag, a
tool that raises or runs past `tool_timeout_s`: each becomes an observation
`error: <reason>: <detail>` for the model, counted in `info.agent.tool_errors`, never a crash.

Budgets: at most `max_turns` generations; the whole sequence stays within `context_tokens`
(default: the model's context length, never more than it nor than the engine serves; a turn
gets `min(max_new_tokens, room left)`; an observation is cut to fit; no room left ends the
episode as a context overflow, reward 0). Tool output (observation tokens) carries
`loss_mask = 0`, logprob 0.0 and the version of the model token before it; model tokens keep
the logprob and policy version the engine reported, so a weight update that interrupts a
turn leaves two versions inside one turn.

Reward: `verifiers.score_response(answer, mode=reward_mode)` on the answer tag's text, plus
`format_reward` (<= 0.1, default 0) when an answer is given; both are in `info`.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from training.search_env.turns import (ChatEpisode, ChatTurns, TokenEpisode, TokenTurns, Turns,
                                  end_of_turn_id, resolve_context)
from training.search_env.turns import tool_role as template_tool_role
from training.api import (AgentInfo, EpisodeInfo, EpisodeItem, GenerationRequest,
                          InferenceEngine, Trajectory)
from training.models import chat_prompt_ids
from training.search_env.observations import best_sentences, format_page, format_search
from training.workflow import answer_reward

if TYPE_CHECKING:
    from training.config import TrainConfig

SYSTEM_PROMPT = (
    "Answer the question. You may search the pages: write <search>words</search> or "
    "<open>url</open>, and read the result. End with <answer>short answer</answer>.")
NO_TOOL_PROMPT = "Answer the question with <answer>short answer</answer>."
_TAG = re.compile(r"<(search|open|answer)>(.*?)</\1>", re.S)
_ANY_TAG = re.compile(r"<([a-z_]+)>")


@dataclass(frozen=True)
class Action:
    """A parsed turn: kind is search | open | answer | malformed; arg its text or the reason."""

    kind: str
    arg: str


def parse_action(text: str) -> Action:
    """The first complete tag of a turn, or why there is none.

    >>> parse_action("I look. <search>river city</search>")
    Action(kind='search', arg='river city')
    >>> parse_action("<answer> 1934 </answer>"), parse_action("<find>x</find>").kind
    (Action(kind='answer', arg='1934'), 'malformed')
    """
    m = _TAG.search(text)
    if m is None:
        other = _ANY_TAG.search(text)
        why = f"unknown tag <{other.group(1)}>" if other else "no <search>, <open> or <answer> tag"
        return Action("malformed", why)
    arg = " ".join(m.group(2).split())
    if not arg and m.group(1) != "answer":
        return Action("malformed", f"empty <{m.group(1)}>")
    return Action(m.group(1), arg)


@dataclass
class SearchAgentWorkflow:
    """Multi-turn episodes with `search` / `open` over `tools` (a datagen.tools.PageTools)."""

    tokenizer: Any
    tools: Any
    max_turns: int = 4
    context_tokens: int | None = None   # None: the model's own context length
    max_new_tokens: int = 32
    tool_timeout_s: float = 10.0
    max_observation_tokens: int = 160
    search_k: int = 3
    snippet_chars: int = 160
    snippet: str = "window"    # window: the index's snippet; sentence: best-matching sentence first
    temperature: float = 1.0
    top_p: float = 1.0
    reward_mode: str = "reward"
    format_reward: float = 0.0
    use_tools: bool = True
    system_prompt: str | None = None
    seeded: bool = True
    tool_latency: Callable[[], float] | None = None   # a sampled wait before each tool call
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def __post_init__(self):
        if not 0.0 <= self.format_reward <= 0.1:
            raise ValueError(f"agent.format_reward must be within [0, 0.1] (got {self.format_reward})")
        if self.tokenizer is None:   # an endpoint's chat episodes (run_chat): no token ids
            return
        self.context_tokens = resolve_context(self.tokenizer, self.context_tokens)
        self.eot_id = end_of_turn_id(self.tokenizer)
        self.eot_text = self.tokenizer.decode([self.eot_id], skip_special_tokens=False)
        self.tool_role = template_tool_role(self.tokenizer)

    def system(self) -> str:
        return self.system_prompt or (SYSTEM_PROMPT if self.use_tools else NO_TOOL_PROMPT)

    def prompt_ids(self, question: str) -> list[int]:
        """The system + user turns and the assistant header, through the chat template."""
        return chat_prompt_ids(self.tokenizer, question, self.system())

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    async def run_episode(self, engine: InferenceEngine,
                          item: EpisodeItem) -> Trajectory | None:
        """A training (or held-out) episode: token ids through `engine`."""
        return (await self.play_tokens(engine, item))[1]

    async def play_tokens(self, engine: InferenceEngine,
                          item: EpisodeItem) -> tuple[TokenEpisode, Trajectory]:
        """The episode (its ids and the messages they render) and its trajectory."""
        ep = TokenEpisode(self.prompt_ids(item.question),
                          [("system", self.system()), ("user", item.question)])
        t0 = time.monotonic()
        answer, finished, overflow = await self.play(TokenTurns(self, engine, ep))
        return ep, self._trajectory(item, ep, answer, finished, overflow,
                                    time.monotonic() - t0)

    async def run_chat(self, client: Any, question: str, item_id: str = "",
                       sample: int = 0) -> ChatEpisode:
        """The same episode against an OpenAI-compatible `client` (datagen.llm.ChatClient):
        the model's turns as assistant messages, tool results as user messages. The endpoint
        holds its own context, so only the turn budget applies; observations are not cut."""
        ep = ChatEpisode([{"role": "system", "content": self.system()},
                          {"role": "user", "content": question}])
        ep.answer, ep.finished, _ = await self.play(
            ChatTurns(self, client, ep, item_id, sample))
        return ep

    async def play(self, turns: Turns) -> tuple[str | None, bool, bool]:
        """The agent loop, one for training and evaluation: (answer, finished, overflow)."""
        for turn in range(self.max_turns):
            room = turns.room()
            if room < 4:
                return None, True, True
            text, stopped = await turns.generate(min(self.max_new_tokens, room))
            turns.episode.turns += 1
            action = parse_action(text)
            if action.kind == "answer":
                return action.arg, stopped, False
            if turn + 1 == self.max_turns or not self.use_tools:
                break
            observation = await self._observe(action, turns.episode)
            if not turns.observe(observation, stopped):
                return None, True, True
        return None, True, False

    def request(self, ep: TokenEpisode, max_new: int) -> GenerationRequest:
        """The next turn: the whole sequence so far, stopping at the end-of-turn token."""
        return GenerationRequest(
            prompt_ids=ep.prompt + ep.ids, max_new_tokens=max_new, temperature=self.temperature,
            top_p=self.top_p, stop_token_ids=(self.eot_id,),
            seed=self.rng.randrange(2**31) if self.seeded else None)

    async def _observe(self, action: Action, ep: "TokenEpisode | ChatEpisode") -> str:
        """The tool's result as text, or `error: reason: detail` (counted by reason)."""
        if action.kind == "malformed":
            ep.errors["malformed"] += 1
            return f"error: malformed: {action.arg}"
        ep.calls[action.kind] += 1
        if self.tool_latency is not None:   # a remote search API's latency, per call
            await asyncio.sleep(self.tool_latency())
        try:
            return await asyncio.wait_for(asyncio.to_thread(self._call, action),
                                          self.tool_timeout_s)
        except (asyncio.TimeoutError, TimeoutError):
            ep.errors["timeout"] += 1
            return f"error: timeout: {action.kind} took over {self.tool_timeout_s:g} s"
        except KeyError as exc:
            ep.errors["not_found"] += 1
            return f"error: not_found: {str(exc).strip(chr(39))}"
        except Exception as exc:  # a failing tool is an observation, never a crash
            ep.errors[f"tool_{type(exc).__name__}"] += 1
            return f"error: tool_failed: {type(exc).__name__}: {exc}"

    def search_hits(self, query: str) -> list:
        """The hits a search shows, their snippets in this agent's form (not yet cut)."""
        hits = self.tools.search(query, self.search_k)
        if self.snippet == "sentence":
            hits = [replace(h, snippet=best_sentences(self.tools.page(h.url)[1], query))
                    for h in hits]
        return hits

    def _call(self, action: Action) -> str:
        if action.kind == "search":
            return format_search(self.search_hits(action.arg), self.snippet_chars,
                                 url_last=self.snippet == "sentence")
        url, _, offset = action.arg.partition("#")
        return format_page(self.tools.open(url.strip(), int(offset) if offset.strip() else 0))

    def _trajectory(self, item: EpisodeItem, ep: TokenEpisode, answer: str | None, finished: bool,
                    overflow: bool, seconds: float) -> Trajectory:
        task, rule = 0.0, "no_answer"
        if answer is not None:
            task, rule = answer_reward(answer, item.answer, tuple(item.answer_aliases or ()),
                                       item.question, self.reward_mode, finished=finished)
        fmt = self.format_reward if answer is not None else 0.0
        info = EpisodeInfo(
            reward_rule=rule, finish_reason="stop" if finished else "length", episode_s=seconds,
            n_interruptions=ep.interruptions, agent=AgentInfo(
                answer=answer, overflow=overflow, n_search=ep.calls["search"],
                n_open=ep.calls["open"], tool_errors=dict(ep.errors), reward_task=task,
                reward_format=fmt))
        return Trajectory(
            question_id=item.question_id, prompt_ids=ep.prompt, output_ids=ep.ids,
            output_logprobs=ep.logprobs, output_versions=ep.versions, reward=task + fmt,
            n_turns=ep.turns, loss_mask=ep.mask, info=info,
            text=self.tokenizer.decode(ep.ids, skip_special_tokens=False))


def agent_metrics(trajectories: list[Trajectory], prefix: str = "agent/") -> dict[str, float]:
    """Per-step means over finished agent episodes: turns, tool calls, answer rate, overflows,
    search rate, reward with and without the format term, tool errors by reason (counts)."""
    eps = [(t, t.info.agent) for t in trajectories if t.info.agent is not None]
    if not eps:
        return {}
    n = len(eps)
    mean: Callable[[Callable], float] = lambda f: sum(f(t, a) for t, a in eps) / n  # noqa: E731
    errors: Counter = Counter()
    for _, a in eps:
        errors.update(a.tool_errors)
    return {f"{prefix}turns": mean(lambda t, a: t.n_turns),
            f"{prefix}tool_calls": mean(lambda t, a: a.n_tool_calls),
            f"{prefix}search_rate": mean(lambda t, a: a.n_search > 0),
            f"{prefix}answer_rate": mean(lambda t, a: a.answered),
            f"{prefix}context_overflows": sum(a.overflow for _, a in eps),
            f"{prefix}reward_task": mean(lambda t, a: a.reward_task),
            f"{prefix}reward_with_format": mean(lambda t, a: t.reward),
            **{f"{prefix}tool_errors/{k}": v for k, v in sorted(errors.items())}}


class AgentSettings(TypedDict, total=False):
    """The SearchAgentWorkflow keywords a run's config fixes (`agent_settings`)."""

    max_turns: int
    context_tokens: int | None
    max_new_tokens: int
    max_observation_tokens: int
    search_k: int
    snippet_chars: int
    snippet: str
    reward_mode: str


def agent_settings(cfg: "TrainConfig") -> AgentSettings:
    """The environment a TrainConfig gives the agent (turns, budgets, search results shown,
    snippet form, reward mode): the SearchAgentWorkflow keywords that training, its held-out
    evaluation and `datagen eval` of its checkpoints share."""
    r, a = cfg.rollout, cfg.agent
    return AgentSettings(max_turns=a.max_turns, context_tokens=a.context_tokens,
                         max_new_tokens=r.max_new_tokens,
                         max_observation_tokens=a.max_observation_tokens, search_k=a.search_k,
                         snippet_chars=a.snippet_chars, snippet=a.snippet, reward_mode=r.reward)
