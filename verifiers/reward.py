"""The RL reward: extract the final answer, then judge it (math-verify, the rules, optionally an LLM).

``reward`` returns 1.0 or 0.0. It never turns a failure into a zero: a
math-verify timeout raises :class:`MathTimeout` and a judge failure raises
:class:`JudgeError`, so the trainer can drop the sample and count it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from verifiers.equivalence import score_answer
from verifiers.extract import boxed_contents, extract_final_answer
from verifiers.judge import LLMJudge
from verifiers.mathcheck import DEFAULT_TIMEOUT_S, looks_mathematical, math_equivalent


@dataclass(frozen=True)
class RewardResult:
    reward: float
    answer: str  # the extracted final answer that was judged
    rule: str  # "math", a rule name from score_answer, or "llm_judge"


def score_response(response: str, gold: str, aliases: Sequence[str] = (),
                   question: str | None = None, *, judge: LLMJudge | None = None,
                   math_options: Mapping[str, Any] | None = None,
                   timeout_s: int = DEFAULT_TIMEOUT_S) -> RewardResult:
    """Judge a full generation against the gold answer; see :func:`reward`."""
    answer = extract_final_answer(response)
    golds = [g for g in (gold, *aliases) if g and g.strip()]
    if not answer:
        return RewardResult(0.0, "", "no_answer")
    latex_gold = any(_latex(g) for g in golds)
    if latex_gold or (looks_mathematical(answer) and any(looks_mathematical(g) for g in golds)):
        ok = any(math_equivalent(answer, (boxed_contents(g) or [g])[-1], math_options, timeout_s)
                 for g in golds)
        if ok or latex_gold:
            # A LaTeX gold is settled by math-verify alone: word rules would find
            # "\\sqrt{n+1}" inside "\\frac{n+2}{\\sqrt{n+1}}".
            return RewardResult(float(ok), answer, "math")
    score = score_answer(answer, gold, aliases, question)
    if score.equivalent:
        return RewardResult(1.0, answer, score.rule)
    if judge is not None and score.rule == "no_match":
        ok = judge.equivalent(question, gold, aliases, answer)
        return RewardResult(float(ok), answer, "llm_judge")
    return RewardResult(0.0, answer, score.rule)


def _latex(text: str) -> bool:
    return any(ch in text for ch in "\\^{}$")


def reward(response: str, gold: str, aliases: Sequence[str] = (), question: str | None = None,
           *, judge: LLMJudge | None = None, math_options: Mapping[str, Any] | None = None,
           timeout_s: int = DEFAULT_TIMEOUT_S) -> float:
    """1.0 when the final answer of ``response`` is the gold answer, else 0.0.

    >>> reward("Thinking... the capital is Paris.\\nAnswer: Paris", "Paris")
    1.0
    >>> reward("so the result is \\\\boxed{\\\\frac{1}{2}}", "0.5")
    1.0
    """
    return score_response(response, gold, aliases, question, judge=judge,
                          math_options=math_options, timeout_s=timeout_s).reward
