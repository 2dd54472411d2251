"""Local checks of a model's wording of a composed chain, before the self-check call (the
loop's validator has the last word): what the question must and must not contain, and
whether a rewording still asks what the engine's draft asked."""

from __future__ import annotations

import re

from datagen.seeds.chain import Chain, Literal

MIN_KEPT = 0.6  # of the draft's content words a wording must keep
_NAMES = re.compile(r"(?<=\s)[A-Z][\w'-]+|\d[\d,.:/-]*\d|\d")
_ASKS = {"date": re.compile(r"\b(when|date|day)\b", re.I),
         "year": re.compile(r"\b(when|year)\b", re.I),
         "number": re.compile(r"\bhow (many|much|large|big)\b|\b(attendance|population|number|"
                              r"crowd|size)\b", re.I)}
_NOT_ENTITY = re.compile(r"\bhow (many|much|large|big)\b|\bwhen\b|\b(what|which) (date|year|day)\b",
                         re.I)
_PLAIN = {"what", "which", "who", "whom", "whose", "when", "where", "how", "in", "the", "a",
          "an", "on", "of", "at", "by", "for", "from", "to", "and", "is", "was", "did"}


def required(chain: Chain) -> list[str]:
    """What the question must contain: each named entity, each literal as shown."""
    out = [n.name for n in chain.named_nodes()]
    for _, c in chain.clauses():
        if isinstance(c.value, Literal):
            out.append(c.value.fuzzed or c.value.text)
    return list(dict.fromkeys(x for x in out if x))


def forbidden(chain: Chain) -> list[str]:
    """What it must not contain: the answer, its aliases, and fuzzed literals' exact values."""
    out = [chain.ask.answer, *chain.ask.aliases, *fuzzed_values(chain)]
    return list(dict.fromkeys(x for x in out if x))


def fuzzed_values(chain: Chain) -> list[str]:
    """The exact values of fuzzed literals (the facts block shows them; the question may not)."""
    return [c.value.text for _, c in chain.clauses()
            if isinstance(c.value, Literal) and c.value.fuzzed]


def wording_problem(text: str, chain: Chain, known: str = "", draft: str = "") -> str:
    """A quick local check before the self-check call (the loop's validator has the last
    word): nothing forbidden, every constraint, a question, no name or number that is in
    neither `known` (the draft, the quotes) nor the chain's required words, and most of the
    draft's content words kept (the validator checks constraints, not the meaning)."""
    low = text.lower()
    if any(x.lower() in low for x in forbidden(chain)):
        return "names_forbidden"
    if any(x not in text for x in required(chain)):
        return "drops_constraint"
    if not text.rstrip().endswith("?"):
        return "not_a_question"
    known = (known + " " + " ".join(required(chain))).lower()
    if any(t.lower() not in known for t in _NAMES.findall(text) if t.lower() not in _PLAIN):
        return "adds_unknown_names"
    if draft and kept_share(text, draft) < MIN_KEPT:
        return "drifts_from_draft"
    kind = chain.ask.answer_type
    if draft and asks_another_kind(text, kind) and not asks_another_kind(draft, kind):
        return "asks_another_kind"
    return ""


def asks_another_kind(question: str, answer_type: str) -> bool:
    """Does the question ask for another kind of answer than `answer_type`? SmolLM2 kept the
    draft's words and turned 'on which date' into 'which company' (answer: a date).

    >>> asks_another_kind("Which company did she found?", "date")
    True
    >>> asks_another_kind("On what date did it begin?", "date")
    False
    """
    if answer_type in _ASKS:
        return not _ASKS[answer_type].search(question)
    return answer_type == "entity" and bool(_NOT_ENTITY.search(question))


def long_words(text: str) -> set[str]:
    """The words of four letters or more in `text`, less question words and articles."""
    return {w for w in re.findall(r"[a-z][a-z'-]{3,}", text.lower()) if w not in _PLAIN}


def kept_share(text: str, draft: str) -> float:
    """The share of the draft's content words the wording kept: a rewording keeps most, a
    small model's new question about something else keeps few.

    >>> kept_share("In which city was the author of Lost Roads born?",
    ...            "Which city is the birthplace of the author of Lost Roads?")
    0.8
    >>> kept_share("What was the first king of Lost Roads?", "Which city published Lost Roads?")
    0.5
    """
    words = long_words(draft)
    return len(words & long_words(text)) / len(words) if words else 1.0
