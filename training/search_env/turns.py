"""An agent episode's turns, as the model's own chat template renders them.

Two ways to drive the loop of `SearchAgentWorkflow.play` (agent.py):

- `TokenTurns` (training, `datagen eval` of a checkpoint): one growing token sequence through
  an inference engine, token in / token out. The model's ids are kept as generated; only what
  the template adds after them (the end of the turn, the tool turn, the next assistant
  header) goes through the tokenizer, continued from the earlier ids by
  `chat.continuation`. So the ids at every turn boundary are the template's
  rendering of the episode's messages (`TokenEpisode.messages`), and earlier turns are never
  re-tokenised. Generation stops at the template's end-of-turn token.
- `ChatTurns` (`datagen eval --policy endpoint`): chat messages through an OpenAI-compatible
  client; tool results come back as user messages (the endpoint's template is not known).

Tool results are `tool` turns when the template renders a tool message (ChatML templates do:
SmolLM2, Qwen, the tiny models); a template without a tool role (one that refuses the role or
drops its text) gets them as `user` turns (`chat.tool_role`).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from training.api import GenerationResult, InferenceEngine, Message
from training.search_env.chat import continuation

if TYPE_CHECKING:
    from datagen.llm import ChatClient
    from training.search_env.agent import SearchAgentWorkflow

DEFAULT_CONTEXT = 1024      # a tokenizer outside a model folder: no model length to read


@dataclass
class TokenEpisode:
    """The growing sequence of one episode, its per-token bookkeeping and its messages."""

    prompt: list[int]
    messages: list[Message]
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turn_start: int = 0      # where the last model turn begins in `ids`
    turns: int = 0
    calls: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)   # urls of the pages whose text it was shown
    interruptions: int = 0

    def length(self) -> int:
        return len(self.prompt) + len(self.ids)

    def add_model(self, result: GenerationResult, reply: str) -> None:
        self.turn_start = len(self.ids)
        self.ids += result.output_ids
        self.logprobs += result.output_logprobs
        self.versions += result.output_versions
        self.mask += [1] * len(result.output_ids)
        self.interruptions += result.n_interruptions
        self.messages.append(("assistant", reply))

    def add_observation(self, ids: list[int], role: str, text: str) -> None:
        v = self.versions[-1] if self.versions else -1
        self.ids += ids
        self.logprobs += [0.0] * len(ids)
        self.versions += [v] * len(ids)
        self.mask += [0] * len(ids)
        self.messages.append((role, text))


@dataclass
class ChatEpisode:
    """An episode against a chat endpoint: its messages and the same counters."""

    messages: list[dict[str, str]]
    turns: int = 0
    calls: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)
    answer: str | None = None
    finished: bool = True


class Turns(Protocol):
    """What the agent loop (`SearchAgentWorkflow.play`) drives: one episode's turns."""

    episode: "TokenEpisode | ChatEpisode"

    def room(self) -> int: ...   # tokens the next turn may still generate

    async def generate(self, max_new: int) -> tuple[str, bool]: ...   # text, stopped

    def observe(self, text: str, closed: bool) -> bool: ...   # False: no room left


@dataclass
class TokenTurns:
    """Turns as one growing token sequence through an inference engine (training)."""

    agent: "SearchAgentWorkflow"
    engine: InferenceEngine
    episode: TokenEpisode

    def budget(self) -> int:
        """The agent's context, and never more than the engine serves (vLLM's max_model_len)."""
        served = self.engine.max_model_len
        return min(self.agent.context_tokens, served or self.agent.context_tokens)

    def room(self) -> int:
        return self.budget() - self.episode.length()

    async def generate(self, max_new: int) -> tuple[str, bool]:
        result = await self.engine.agenerate(self.agent.request(self.episode, max_new))
        tok = self.agent.tokenizer
        ids = result.output_ids
        body = ids[:-1] if ids[-1:] == [self.agent.eot_id] else ids   # the reply's own text
        self.episode.add_model(result, tok.decode(body, skip_special_tokens=False))
        return tok.decode(ids, skip_special_tokens=True), result.finish_reason == "stop"

    def observe(self, text: str, closed: bool) -> bool:
        """The tool turn and the next assistant header, its text cut to fit the budget."""
        ep, agent = self.episode, self.agent
        room = self.budget() - ep.length() - 4
        cut = agent.env.settings.max_observation_tokens
        body = agent.encode(text)[:max(0, min(cut, room))]
        while True:
            shown = agent.tokenizer.decode(body, skip_special_tokens=False)
            ids = self._continued(shown)
            if len(ids) <= room or not body:
                break
            body = body[:len(body) - max(1, len(ids) - room)]
        if len(ids) > room:
            return False
        ep.add_observation(ids, agent.tool_role, shown)
        return True

    def _continued(self, shown: str) -> list[int]:
        """The ids the template adds after the last model turn for a tool turn `shown`
        (`chat.continuation` past the earlier rendering and the reply), less the
        end-of-turn token the model already wrote."""
        ep, agent = self.episode, self.agent
        added = continuation(agent.tokenizer, ep.messages[:-1], ep.messages[-1][1],
                             [*ep.messages, (agent.tool_role, shown)])
        if added is None:
            raise ValueError("the model's chat template does not render an assistant turn "
                             "as generated (it strips or rewrites replies): the agent needs "
                             "a template that renders earlier turns unchanged")
        if ep.ids[ep.turn_start:][-1:] == [agent.eot_id]:   # the model closed its turn
            added = added.removeprefix(agent.eot_text)
        return agent.encode(added)


@dataclass
class ChatTurns:
    """Turns as chat messages through an OpenAI-compatible client (`datagen eval`)."""

    agent: "SearchAgentWorkflow"
    client: "ChatClient"
    episode: ChatEpisode
    item_id: str = ""
    sample: int = 0

    def room(self) -> int:
        return self.agent.max_new_tokens

    async def generate(self, max_new: int) -> tuple[str, bool]:
        from datagen.llm import ChatRequest

        res = await asyncio.to_thread(self.client.chat, ChatRequest(
            tuple(self.episode.messages), temperature=self.agent.temperature,
            max_tokens=max_new, purpose="eval", item_id=self.item_id, round=self.sample))
        sample = res.good[0] if res.ok and res.good else None
        text = sample.text if sample else ""
        self.episode.messages.append({"role": "assistant", "content": text})
        return text, not (sample and sample.finish_reason == "length")

    def observe(self, text: str, closed: bool) -> bool:
        self.episode.messages.append({"role": "user", "content": text})
        return True


def model_context(tokenizer) -> tuple[int, str] | None:
    """(the context length, where it comes from) of the model folder the tokenizer was loaded
    from (its config.json, as vLLM reads it); None for a tokenizer built in memory."""
    from pathlib import Path

    from training.engines.vllm_engine import model_max_len

    folder = tokenizer.name_or_path
    return model_max_len(folder) if folder and Path(folder).is_dir() else None


def resolve_context(tokenizer, requested: int | None) -> int:
    """`requested`, or the model's own context length when None; longer than the model's is
    a ValueError naming both (a sequence past the model's positions is garbage)."""
    limit = model_context(tokenizer)
    if requested is None:
        return limit[0] if limit else DEFAULT_CONTEXT
    if limit and requested > limit[0]:
        raise ValueError(f"agent.context_tokens {requested} is longer than the model's context "
                         f"length {limit[0]} ({limit[1]}): use {limit[0]} or less, or leave it "
                         "out to get the model's own")
    return requested
