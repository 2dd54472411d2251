"""The RL reward: extract the final answer, then judge it in one of three modes.

- ``"reward"`` (default): every equivalence of the judging mode (aliases, number,
  unit, date and name forms, math-verify), but a final answer that offers several
  candidates of any types (the lines after an "Answer:" line included), pads it, or
  answers more coarsely than a year or date gold earns 0 with its own rule (``refused_list``, ``refused_range``,
  ``refused_repeat``, ``refused_zero_padding``, ``refused_padding``,
  ``refused_coarse``; see candidates.py), so training metrics show what a policy tries.
- ``"strict"``: SQuAD-normalised exact match with the gold or an alias, nothing else.
- ``"judge"``: the lenient, human-rater behaviour of ``is_equivalent`` (a long answer
  that contains the gold pays).

``reward`` returns 1.0 or 0.0. It never turns a failure into a zero: a
math-verify timeout raises :class:`MathTimeout` and a judge failure raises
:class:`JudgeError`, so the trainer can drop the sample and count it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from verifiers.candidates import MAX_CHARS, MAX_EXTRA_WORDS, coarser, refusal
from verifiers.equivalence import score_answer
from verifiers.extract import boxed_contents, extract_final_answer, strip_reasoning
from verifiers.judge import LLMJudge
from verifiers.mathcheck import MATH_TIMEOUT_S, looks_mathematical, math_equivalent
from verifiers.normalize import squad_normalize

REWARD_MODES = ("reward", "strict", "judge")


@dataclass(frozen=True)
class RewardResult:
    reward: float
    answer: str  # the extracted final answer that was judged
    rule: str  # "math", a rule name from score_answer, "llm_judge", or "refused_*"


def score_response(response: str, gold: str, aliases: Sequence[str] = (),
                   question: str | None = None, *, mode: str = "reward",
                   judge: LLMJudge | None = None,
                   math_options: Mapping[str, Any] | None = None,
                   timeout_s: int = MATH_TIMEOUT_S, max_extra_words: int = MAX_EXTRA_WORDS,
                   max_chars: int = MAX_CHARS) -> RewardResult:
    """Judge a full generation against the gold answer; see :func:`reward`."""
    if mode not in REWARD_MODES:
        raise ValueError(f"mode must be one of {', '.join(REWARD_MODES)}, not {mode!r}")
    golds = [g for g in (gold, *aliases) if g and g.strip()]
    whole = squad_normalize(response) if response and len(response) <= 4 * max_chars else ""
    # A gold the extractor would cut ("Portugal. The Man") is judged whole.
    answer = (response.strip() if whole and any(whole == squad_normalize(g) for g in golds)
              else extract_final_answer(response))
    if mode == "reward":
        answer = _with_following_lines(response, answer)
    if not answer:
        return RewardResult(0.0, "", "no_answer")
    if mode == "strict":
        ok = any(squad_normalize(answer) == squad_normalize(g) for g in golds)
        return RewardResult(float(ok), answer, "exact" if ok else "no_match")
    latex_gold = any(_latex(g) for g in golds)
    if mode == "reward" and not latex_gold:
        # Before math-verify, which reads "7 7 7" or "1934 1935" as the gold number.
        refused = refusal(answer, gold, aliases, question, max_extra_words=max_extra_words,
                          max_chars=max_chars)
        if refused:
            return RewardResult(0.0, answer, refused)
    if latex_gold or (looks_mathematical(answer) and any(looks_mathematical(g) for g in golds)):
        ok = any(math_equivalent(answer, (boxed_contents(g) or [g])[-1], math_options, timeout_s)
                 for g in golds)
        if ok and mode == "reward" and not latex_gold and coarser(answer, gold, aliases):
            return RewardResult(0.0, answer, "refused_coarse")  # "2016" for "April 2016"
        if ok or latex_gold:
            # A LaTeX gold is settled by math-verify alone: word rules would find
            # "\\sqrt{n+1}" inside "\\frac{n+2}{\\sqrt{n+1}}".
            return RewardResult(float(ok), answer, "math")
    score = score_answer(answer, gold, aliases, question)
    if score.equivalent:
        if mode == "reward" and score.rule != "exact" and coarser(answer, gold, aliases):
            return RewardResult(0.0, answer, "refused_coarse")
        return RewardResult(1.0, answer, score.rule)
    if judge is not None and score.rule == "no_match":
        ok = judge.equivalent(question, gold, aliases, answer)
        return RewardResult(float(ok), answer, "llm_judge")
    return RewardResult(0.0, answer, score.rule)


def _with_following_lines(response: str, answer: str) -> str:
    """The answer and whatever follows it in the response: lines after an "Answer:" line
    ("Answer: Ravi Shastri\n- South Carolina\n- January 2017") are more candidates, not
    reasoning. The judging mode reads the "Answer:" line alone."""
    text = strip_reasoning(response or "").strip()
    i = text.rfind(answer) if answer else -1
    if i < 0 or boxed_contents(text):
        return answer
    tail = text[i + len(answer):].strip().strip("*_").strip()
    return f"{answer}\n{tail}" if tail else answer


def _latex(text: str) -> bool:
    """LaTeX markup; a lone "$" is a currency sign ("$2.18 billion"), not math mode."""
    return any(ch in text for ch in "\\^{}") or text.count("$") >= 2


def reward(response: str, gold: str, aliases: Sequence[str] = (), question: str | None = None,
           *, mode: str = "reward", judge: LLMJudge | None = None,
           math_options: Mapping[str, Any] | None = None,
           timeout_s: int = MATH_TIMEOUT_S, max_extra_words: int = MAX_EXTRA_WORDS,
           max_chars: int = MAX_CHARS) -> float:
    """1.0 when the final answer of ``response`` is the gold answer, else 0.0.

    >>> reward("Thinking... the capital is Paris.\\nAnswer: Paris", "Paris")
    1.0
    >>> reward("so the result is \\\\boxed{\\\\frac{1}{2}}", "0.5")
    1.0
    >>> reward("Answer: Paris, Lyon or Nice", "Paris")
    0.0
    >>> reward("Answer: Paris, Lyon or Nice", "Paris", mode="judge")
    1.0
    """
    return score_response(response, gold, aliases, question, mode=mode, judge=judge,
                          math_options=math_options, timeout_s=timeout_s,
                          max_extra_words=max_extra_words, max_chars=max_chars).reward
