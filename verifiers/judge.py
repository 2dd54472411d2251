"""Optional LLM judge over the project's one model client.

Off by default: nothing here runs unless a caller builds an :class:`LLMJudge`. It settles
equivalence cases the rules cannot (no rule fired either way) and proposes alternative
answers for the unique-answer check. ``verifiers`` does not import ``datagen``: the judge
receives the model client (``datagen.llm.ChatClient``, or anything with the same
``complete`` method) from the CLI or a flow, so it shares that client's retries, circuit
breaker, cache and ``llm_calls`` accounting. Replies are asked for as JSON against a schema
and validated by the client; an unusable reply or a failed call raises :class:`JudgeError`,
so callers record an ``error`` instead of guessing.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

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

EQUIVALENCE_SCHEMA = {"type": "object", "properties": {"equivalent": {"type": "boolean"}},
                      "required": ["equivalent"]}
ALTERNATIVES_SCHEMA = {"type": "object",
                       "properties": {"alternatives": {"type": "array", "items": {"type": "string"}}},
                       "required": ["alternatives"]}


class JudgeError(RuntimeError):
    """The judge's model call failed or replied with something we cannot use."""


class ChatModel(Protocol):
    """What the judge needs from a model client (``datagen.llm.ChatClient`` has it).

    ``complete(messages, *, temperature, max_tokens, schema, purpose, item_id)`` returns a
    result with ``ok`` (bool), ``error`` ("code: detail") and ``good`` (usable samples, each
    with the parsed JSON in ``data``).
    """

    def complete(self, messages: Sequence[dict[str, str]], **params: Any) -> Any: ...


@dataclass
class LLMJudge:
    """A chat model, reached through the client it is given, that grades and lists answers."""

    client: ChatModel
    max_tokens: int = 256

    def _ask(self, prompt: str, schema: dict[str, Any], purpose: str) -> dict:
        result = self.client.complete(
            [{"role": "user", "content": prompt}], temperature=0.0, max_tokens=self.max_tokens,
            schema=schema, purpose=purpose,
            item_id=hashlib.sha256(prompt.encode()).hexdigest()[:16])
        if not result.ok or not result.good:
            raise JudgeError(f"judge call failed ({purpose}): {result.error}")
        return result.good[0].data

    def equivalent(self, question: str | None, gold: str, aliases: Sequence[str],
                   candidate: str) -> bool:
        data = self._ask(EQUIVALENCE_PROMPT.format(
            question=question or "(not given)", gold=gold, aliases=list(aliases) or "none",
            candidate=candidate), EQUIVALENCE_SCHEMA, "verify/judge_equivalence")
        return bool(data["equivalent"])

    def alternatives(self, question: str, answer: str) -> list[str]:
        data = self._ask(ALTERNATIVES_PROMPT.format(question=question, answer=answer),
                         ALTERNATIVES_SCHEMA, "verify/judge_alternatives")
        return [a for a in data["alternatives"] if a.strip()]
