"""Where in a prediction a match counts: negation, hedging and restating the question.

A gold answer found inside a longer prediction is only given when that occurrence
is asserted: not denied ("not Paris"), not one of several guesses ("Paris or
Lyon", "3 2"), and not merely part of a phrase copied from the question.
"""

from __future__ import annotations

from verifiers.normalize import Tokens, canonical_tokens
from verifiers.phrases import number


NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "none", "nobody", "cannot",
                      "incorrect", "wrong", "false", "unlike", "instead", "rather"})
# "instead of X" / "rather than X" deny X, but "Instead, X ..." asserts it.
_NEGATOR_NEEDS = {"instead": "of", "rather": "than"}
_NEG_WINDOW = 4


def question_context(question: str | None) -> set[str]:
    """The question's canonical words plus its bigrams (as "w1 w2" strings)."""
    if not question:
        return set()
    words = canonical_tokens(question).words
    return set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])}


def restates_question(pred: Tokens, start: int, end: int, q_words: set[str]) -> bool:
    """The occurrence is part of a phrase copied from the question ("east of the Jordan
    River" when the gold is "Jordan"), so it does not give the answer."""
    w = pred.words
    if not all(x in q_words for x in w[start:end]):
        return False
    before = f"{w[start - 1]} {w[start]}" if start > 0 else ""
    after = f"{w[end - 1]} {w[end]}" if end < len(w) else ""
    return before in q_words or after in q_words


def occurrences(hay: tuple[str, ...], needle: tuple[str, ...]) -> list[int]:
    n = len(needle)
    return [i for i in range(len(hay) - n + 1) if hay[i:i + n] == needle]


def find_clean(pred: Tokens, needle: tuple[str, ...], q_words: set[str]) -> tuple[bool, str]:
    """Is there an occurrence of ``needle`` that is neither negated nor hedged?"""
    blocked = ""
    for i in occurrences(pred.words, needle):
        if restates_question(pred, i, i + len(needle), q_words):
            blocked = blocked or "restates_question"
        elif negated(pred, i, q_words):
            blocked = "negated"
        elif hedged(pred, i, i + len(needle), q_words):
            blocked = "hedged"
        else:
            return True, ""
    return False, blocked


def negated(pred: Tokens, start: int, q_words: set[str] = frozenset()) -> bool:
    """A negator shortly before ``start`` in the same clause denies the match; one that is
    part of a phrase copied from the question ("I Write Sins Not Tragedies", "did the US
    not go") belongs to a title or to the question's own wording."""
    clause = pred.clauses[start]
    for k in range(max(0, start - _NEG_WINDOW), start):
        if pred.clauses[k] == clause and pred.words[k] in NEGATORS:
            if restates_question(pred, k, k + 1, q_words):
                continue
            after = pred.words[k + 1] if k + 1 < len(pred.words) else ""
            if pred.words[k] == "not" and after == "only":
                continue
            if pred.words[k] in _NEGATOR_NEEDS and after != _NEGATOR_NEEDS[pred.words[k]]:
                continue
            return True
    return False


UNCERTAIN = frozenset({"may", "might", "could", "possibly", "perhaps", "probably", "likely",
                       "maybe", "unsure", "uncertain", "unclear", "either", "guess"})


BOUNDS = frozenset({"older", "younger", "more", "less", "fewer", "above", "over", "under",
                    "higher", "lower", "later", "earlier", "greater", "larger", "smaller"})


def hedged(pred: Tokens, start: int, end: int, q_words: set[str]) -> bool:
    """The match is one of several candidates: "either X or Y", "it could be X or Y", "7 or 8".

    A bare "X or Y" between names is usually a second name for the same thing ("the
    book or libretto", "naos or cella"), so "or" hedges only next to a marker of
    uncertainty in the same clause, or between numbers, which cannot be synonyms.
    """
    if "or" in q_words:
        return False  # the question itself offers a choice
    if among_numbers(pred, start, end):
        return True
    w, c = pred.words, pred.clauses
    around = [k for k in (start - 1, end) if 0 <= k < len(w) and c[k] == c[start]]
    if not any(w[k] == "or" for k in around):
        return False
    if end + 1 < len(w) and w[end] == "or" and w[end + 1] in BOUNDS:
        return False  # "18 or older" states a bound, not a second candidate
    clause = {w[k] for k in range(len(w)) if c[k] == c[start]}
    numbers = all(number(w[k]) is not None for k in range(start, end))
    return bool(clause & UNCERTAIN) or numbers


def among_numbers(pred: Tokens, start: int, end: int) -> bool:
    """A number listed right next to other numbers ("3 2", "3, 2") is one of several
    candidates. Years are left out: a year next to another number is a range
    ("1881–1885"), a date ("January 26, 1788") or a citation mark run into it."""
    w, c = pred.words, pred.clauses
    if end - start != 1 or number(w[start]) is None or year_like(w[start]):
        return False
    return any(0 <= k < len(w) and c[k] == c[start] and number(w[k]) is not None
               and not year_like(w[k]) for k in (start - 1, end))


def year_like(word: str) -> bool:
    return word.isdigit() and len(word) in (3, 4)
