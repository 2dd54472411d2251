"""Pull the final answer out of a long generation before judging it.

Order of preference: the last ``\\boxed{...}`` (or ``\\fbox``) after any
reasoning block, then the last ``Answer:`` / ``Final answer:`` line, then the
last sentence. Reasoning inside ``<think>...</think>`` is never the answer
when text follows it.
"""

from __future__ import annotations

import re

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_LINE = re.compile(r"\b(?:final\s+answer|answer)(?:\s+is)?\s*\**\s*[:：]\s*(.+)",
                          re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def boxed_contents(text: str) -> list[str]:
    """Every ``\\boxed{...}`` body, with nested braces balanced."""
    found = []
    for m in _BOX.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            found.append(text[m.end():i - 1].strip())
    return found


def strip_reasoning(response: str) -> str:
    """The part after the last ``</think>`` when something follows it."""
    head, sep, tail = response.rpartition("</think>")
    return tail if sep and tail.strip() else response


def extract_final_answer(response: str) -> str:
    """The final answer of a (possibly long) response.

    >>> extract_final_answer("Let me think. 2+2 is 4. So \\\\boxed{4}.")
    '4'
    >>> extract_final_answer("Reasoning...\\nAnswer: Paris")
    'Paris'
    >>> extract_final_answer("It was built in 1889. The tower is in Paris.")
    'The tower is in Paris.'
    """
    text = strip_reasoning(response or "").strip()
    boxes = boxed_contents(text)
    if boxes:
        return boxes[-1]
    lines = _ANSWER_LINE.findall(text)
    if lines:
        return lines[-1].strip().strip("*_ ").strip()
    return last_sentence(text)


def last_sentence(text: str) -> str:
    parts = [p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    return parts[-1] if parts else ""
