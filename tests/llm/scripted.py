"""A competent scripted model for the LLM composer's prompts (datagen/compose/llm_backend.py).

It plays a careful model: every reply is built from what the prompt shows (the options, the
facts quoted from the pages, the draft, the words to keep) and follows the prompt's JSON
shape. It is not perfect: the first of its n wordings sometimes gives the answer away, so
the backend's choice among samples matters; a composer that rejects everything cannot pass.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any


def _field(prompt: str, label: str) -> str:
    m = re.search(rf"^{re.escape(label)}\s*(.*)$", prompt, re.M)
    return m.group(1).strip() if m else ""


def step(prompt: str) -> dict[str, Any]:
    """INJECT towards the target (a description from another page: a hop), then FUZZ a value
    still exact in the question, then EXIT."""
    hops, target = map(int, re.search(r"Hops now: (\d+); target: (\d+)", prompt).groups())
    question = _field(prompt, "Question now:")
    options = re.findall(r"^(\d+)\. (INJECT|FUZZ): (.*)$", prompt, re.M)
    injects = [(int(i), rest) for i, a, rest in options if a == "INJECT"]
    hops_on = [i for i, rest in injects if rest.endswith("(another page: one more hop)")]
    if hops < target and hops_on:
        return {"action": "INJECT", "option": hops_on[0]}
    for i, action, rest in options:
        value = rest.split(" -> ")[0]
        if action == "FUZZ" and value and value in question:
            return {"action": "FUZZ", "option": int(i)}
    return {"action": "EXIT", "option": -1}


def wordings(prompt: str, n: int) -> list[str]:
    """The draft rewritten as a question; the first sample of some prompts leaks the answer."""
    draft = _field(prompt, "Draft:").rstrip(" ?.") + "?"
    answer = _field(prompt, "Answer (must not appear in the question):")
    never = re.findall(r'"([^"]+)"', _field(prompt, "Never write:"))
    leak = answer or (never[0] if never else "")
    careful = draft[0].upper() + draft[1:]
    sloppy = f"{careful[:-1]} (it is {leak})?" if leak else careful
    leaky_first = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3 == 0
    out = [sloppy if (i == 0 and leaky_first) else careful for i in range(n)]
    return [json.dumps({"question": q}) for q in out]


def check(prompt: str) -> dict[str, bool]:
    question, answer = _field(prompt, "Question:"), _field(prompt, "Intended answer:")
    return {"names_answer": answer.lower() in question.lower(), "states_all_facts": True,
            "one_answer": True}


def respond(body: dict[str, Any]) -> list[str] | str:
    """The loopback responder: dispatch on the prompt's kind."""
    prompt = body["messages"][-1]["content"]
    if "Your reply could not be used" in prompt:  # a re-ask: answer the original prompt
        prompt = body["messages"][0]["content"]
    n = int(body.get("n") or 1)
    if '{"action"' in prompt:
        return json.dumps(step(prompt))
    if '"names_answer"' in prompt:
        return json.dumps(check(prompt))
    if '{"question"' in prompt:
        return wordings(prompt, n)
    return "I do not understand."
