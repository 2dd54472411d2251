"""Optional LLM judge through any OpenAI-compatible chat-completions endpoint.

Off by default: nothing here runs unless a caller builds an :class:`LLMJudge`.
It settles equivalence cases the rules cannot (no rule fired either way) and
proposes alternative answers for the unique-answer check. Replies are asked
for as JSON and validated; a reply that is not valid JSON raises
:class:`JudgeError`, so callers record an ``error`` instead of guessing.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Sequence

log = logging.getLogger(__name__)

EQUIVALENCE_PROMPT = """You grade answers to questions.
Question: {question}
Gold answer: {gold}
Also accepted: {aliases}
Candidate answer: {candidate}
Does the candidate give the same answer as the gold answer (not a different, hedged or negated one)?
Reply with JSON only: {{"equivalent": true}} or {{"equivalent": false}}."""

ALTERNATIVES_PROMPT = """Question: {question}
Intended answer: {answer}
List every OTHER answer that would also be fully correct for this question as asked.
Reply with JSON only: {{"alternatives": ["...", ...]}} (an empty list if the answer is unique)."""


class JudgeError(RuntimeError):
    """The judge endpoint failed or replied with something we cannot use."""


@dataclass
class LLMJudge:
    """A chat model behind an OpenAI-compatible endpoint (vLLM, SGLang, a hosted API)."""

    base_url: str
    model: str
    api_key: str = "EMPTY"
    timeout_s: float = 30.0
    max_retries: int = 2
    max_tokens: int = 256

    def __post_init__(self) -> None:
        from openai import OpenAI
        self._client = OpenAI(base_url=self.base_url, api_key=self.api_key,
                              timeout=self.timeout_s, max_retries=self.max_retries)

    def _ask(self, prompt: str) -> dict:
        import openai
        try:
            reply = self._client.chat.completions.create(
                model=self.model, messages=[{"role": "user", "content": prompt}],
                temperature=0.0, max_tokens=self.max_tokens)
        except openai.OpenAIError as exc:
            raise JudgeError(f"judge endpoint {self.base_url} failed: {exc}") from exc
        text = (reply.choices[0].message.content or "").strip()
        return parse_json_reply(text)

    def equivalent(self, question: str | None, gold: str, aliases: Sequence[str],
                   candidate: str) -> bool:
        data = self._ask(EQUIVALENCE_PROMPT.format(
            question=question or "(not given)", gold=gold, aliases=list(aliases) or "none",
            candidate=candidate))
        if not isinstance(data.get("equivalent"), bool):
            raise JudgeError(f"judge reply lacks a boolean 'equivalent': {data!r}")
        return data["equivalent"]

    def alternatives(self, question: str, answer: str) -> list[str]:
        data = self._ask(ALTERNATIVES_PROMPT.format(question=question, answer=answer))
        alts = data.get("alternatives")
        if not isinstance(alts, list) or not all(isinstance(a, str) for a in alts):
            raise JudgeError(f"judge reply lacks a list of strings 'alternatives': {data!r}")
        return [a for a in alts if a.strip()]


def parse_json_reply(text: str) -> dict:
    """The first JSON object in a reply (models often wrap it in prose or code fences)."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        raise JudgeError(f"judge reply is not JSON: {text[:200]!r}")
    try:
        data = json.loads(match.group())
    except json.JSONDecodeError as exc:
        raise JudgeError(f"judge reply is not valid JSON: {text[:200]!r}") from exc
    if not isinstance(data, dict):
        raise JudgeError(f"judge reply is not a JSON object: {text[:200]!r}")
    return data
