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
# A full stop that ends an initial or a title, not a sentence: "Hugh S. Johnson", "Dr. Carver".
_NOT_AN_END = re.compile(r"(?:^|\W)(?:[A-Z]|Dr|Mr|Mrs|Ms|Mt|St|Ft|Jr|Sr|Gen|Col|Lt|Capt|Sgt|Prof|Rev|"
                         r"Hon|Gov|Sen|Rep|Pres|Gen|No|Nos|vs|Vol|Ch|Fig|Inc|Co|Corp|Ltd|U\.S|"
                         r"U\.K|D\.C|a\.m|p\.m|e\.g|i\.e|etc)\.$")
# A list that closes the response ("- A\n- B", "1. A\n2. B"): the whole list is the answer.
_LIST_LINE = re.compile(r"^\s*(?:[-*•·‣▪]|\(?\d{1,2}[.)])\s+\S")


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
    return final_list(text) or last_sentence(text)


def final_list(text: str) -> str:
    """The bulleted or numbered list the text ends with (two items or more), else "".

    >>> final_list("Candidates:\\n1. Lyon\\n2. Paris")
    '1. Lyon\\n2. Paris'
    """
    lines = [x for x in text.strip().splitlines() if x.strip()]
    k = len(lines)
    while k > 0 and _LIST_LINE.match(lines[k - 1]):
        k -= 1
    return "\n".join(x.strip() for x in lines[k:]) if len(lines) - k >= 2 else ""


def last_sentence(text: str) -> str:
    """The last sentence; a full stop after an initial or a title ends none.

    >>> last_sentence("It was found in 1848. It was James W. Marshall.")
    'It was James W. Marshall.'
    """
    parts: list[str] = []
    for part in (p.strip() for p in _SENTENCE_END.split(text.strip()) if p.strip()):
        if parts and (_NOT_AN_END.search(parts[-1])
                      or re.search(r"(?<![\d.])\d{1,3}\.$", parts[-1]) and part[:1].isdigit()):
            parts[-1] += " " + part
        else:
            parts.append(part)
    return parts[-1] if parts else ""
