"""Parts of a gold answer that are themselves acceptable answers, and small helpers.

A gold is often a description around the answer: "Camping World Stadium in
Orlando", "the drama series Gunsmoke", "FedExField in Landover, Maryland".
:func:`reduced_golds` yields the parts a prediction may name instead, each
with the rule name that accepts it.
"""

from __future__ import annotations

import re
from typing import Iterator

from verifiers.normalize import Tokens, canonical_tokens, content_words


def reduced_golds(ref: Tokens, ref_text: str, where_question: bool
                  ) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(rule, canonical words) for each acceptable part of the gold."""
    head = head_before_modifier(ref)
    if head:
        yield "gold_head", head
    name = proper_name_in(ref_text)
    if name:
        yield "proper_name", canonical_tokens(name).words
    if where_question:
        for part in locative_parts(ref_text):
            yield "location", part
        for part in place_qualifiers(ref_text):
            yield "coarser_place", part


_LOCATIVE = (re.compile(r"\b(?:in|at|near)\s+(.+)$"), re.compile(r"^([^,]+)(?:,\s*[^,]+)+$"))


def locative_parts(ref_text: str) -> list[tuple[str, ...]]:
    """For a "where" question a coarser or finer place is the same answer: the object of a
    locative phrase ("FedExField in Landover, Maryland" → "Landover, Maryland") or the
    place before its qualifiers ("Madison, Wisconsin" → "Madison", "Toronto, Ontario,
    Canada" → "Toronto")."""
    parts = []
    for pattern in _LOCATIVE:
        m = pattern.search(ref_text)
        parts.append(canonical_tokens(m.group(1)).words if m else ())
    return [p for p in parts if content_words(p)]


def place_qualifiers(ref_text: str) -> list[tuple[str, ...]]:
    """The qualifiers of a place alone, the coarser place: "Baltimore, Maryland" →
    "Maryland"; "Toronto, Ontario, Canada" → "Ontario, Canada" and "Canada"."""
    pieces = ref_text.split(",")
    parts = [canonical_tokens(",".join(pieces[k:])).words for k in range(1, len(pieces))]
    return [p for p in parts if content_words(p)]


_CAP_RUN = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:of|the|de|del|von|van|da)?\s*[A-Z][\w'’.-]*)*")


def proper_name_in(ref_text: str) -> str | None:
    """The one proper name inside a descriptive gold ("the drama series Gunsmoke" →
    "Gunsmoke", "the ARPANET project" → "ARPANET"): the name is the answer, the
    common nouns around it only describe it. None when there are several names or none,
    or when the only capital is sentence case on the first word."""
    text = ref_text.strip()
    runs = [m for m in _CAP_RUN.finditer(text)
            if not _date_part(m.group()) and not _UNIT_BEFORE.search(text[:m.start()])]
    if len(runs) != 1:
        return None
    m = runs[0]
    rest = (text[:m.start()] + " " + text[m.end():]).strip()
    if not content_words(canonical_tokens(rest)):
        return None  # the gold is the name itself
    if m.start() == 0 and " " not in m.group().strip():
        return None  # "Profit maximization": sentence case, not a name
    return m.group()


_UNIT_BEFORE = re.compile(r"°\s*$")  # "−128.6 °F": a unit symbol, not a name
_ERAS = frozenset({"bc", "ad"})  # canonical forms of BC/BCE, AD/CE


def _date_part(run: str) -> bool:
    """Capitalised, but an era marker, not a name: "BCE" in "the late 6th century BCE"."""
    words = canonical_tokens(run).words
    return bool(words) and all(w in _ERAS for w in words)


_POSTMODIFIER = frozenset({"in", "at", "of", "on", "near", "from"})


def head_before_modifier(ref: Tokens) -> tuple[str, ...] | None:
    """The gold without a trailing prepositional modifier: "Camping World Stadium in Orlando"
    → "Camping World Stadium". Only when the head keeps at least two content words, so
    "the Gospel of Luke" does not shrink to "Gospel"."""
    words = ref.words
    for k, w in enumerate(words):
        if w in _POSTMODIFIER and k > 0:
            head = words[:k]
            return head if len(content_words(head)) >= 2 else None
    return None


_ACRONYM_SKIP = frozenset({"of", "and", "the", "for", "in", "on", "&"})


def acronym_match(prediction: str, gold: str) -> bool:
    """"DMV" ~ "Department of Motor Vehicles", either way round."""
    for short, long_ in ((gold, prediction), (prediction, gold)):
        acr = short.strip().strip(".").replace(".", "")
        if not (2 <= len(acr) <= 6 and acr.isupper() and acr.isalpha()):
            continue
        words = [w for w in re.findall(r"[A-Za-z]+", long_) if w.lower() not in _ACRONYM_SKIP]
        initials = "".join(w[0] for w in words).upper()
        caps = "".join(w[0] for w in words if w[0].isupper())
        if acr in caps or (acr in initials and len(words) <= len(acr) + 2):
            return True
    return False


def _clipping_of(token: str, words: tuple[str, ...]) -> bool:
    """``token`` is the start of each of ``words`` run together, two letters or more of
    each: "forex" = fo(reign) + ex(change), "sitcom", "hazmat"."""
    if not words:
        return not token
    head = words[0]
    return any(token[:k] == head[:k] and _clipping_of(token[k:], words[1:])
               for k in range(2, min(len(head), len(token)) + 1))


def expand_clippings(pred: Tokens, gold: tuple[str, ...]) -> Tokens | None:
    """The prediction with a clipped compound of consecutive gold words written out in
    full ("forex market" → "foreign exchange market"), or None when it has none."""
    if len(gold) < 2:
        return None
    starts: dict[str, list[int]] = {}
    for i, g in enumerate(gold[:-1]):
        starts.setdefault(g[:2], []).append(i)
    words, clauses, changed = [], [], False
    for word, clause in zip(pred.words, pred.clauses):
        span = None
        if len(word) >= 4 and word[:2] in starts and word not in gold and word.isalpha():
            span = next((gold[i:j] for i in starts[word[:2]] for j in range(i + 2, len(gold) + 1)
                         if _clipping_of(word, gold[i:j])), None)
        words += span or [word]
        clauses += [clause] * len(span or [word])
        changed = changed or bool(span)
    return Tokens(tuple(words), tuple(clauses)) if changed else None


def number(word: str) -> float | None:
    try:
        return float(word)
    except ValueError:
        return None


def list_items(ref_text: str) -> list[str]:
    return [x for x in re.split(r",|;|\band\b|&", ref_text) if x.strip()]


ORDINAL = re.compile(r"^(\d+)st$")  # canonical ordinals: "2nd", "second" -> "2st"
_NOT_COUNTED = frozenset({"century", "millennium", "of"})


def ordinal_variants(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The gold with "second season" said as "season 2" and back: an ordinal before a noun
    and the noun with a number after it name the same item (season, episode, week, book)."""
    out = []
    for i, w in enumerate(words[:-1]):
        m, nxt = ORDINAL.match(w), words[i + 1]
        if m and nxt.isalpha() and nxt not in _NOT_COUNTED:
            out.append(words[:i] + (nxt, m.group(1)) + words[i + 2:])
        if w.isalpha() and w not in _NOT_COUNTED and nxt.isdigit() and 0 < int(nxt) <= 100:
            out.append(words[:i] + (f"{int(nxt)}st", w) + words[i + 2:])
    return out
