"""Answer equivalence: is a predicted answer the same answer as the gold one?

The decision is a short cascade of linguistic rules over canonical tokens
(see normalize.py); the first rule that settles the case names itself in
``EquivalenceScore.rule``. Nothing here is fitted to a labelled set.

1. ``exact``: same canonical tokens (articles, accents, number words, Roman
   numerals, unit spellings, honorifics already folded).
   ``fraction``: the same value as a fraction or decimal in another written form
   (1/2, 0.5, "one half", \\frac{1}{2}); ``fraction_mismatch`` settles other values
   ("1/20" is not "1/2"; fractions.py).
2. ``yes_no``: a yes/no gold (also "Typically, no") is matched by the polarity the
   prediction opens with.
3. ``date``: a date gold is matched by a date in the prediction that states
   every part the gold states (the prediction may be more precise), or by the
   decade or century containing it.
4. ``period``: a year or period inside a gold century or decade, or the century
   or decade containing a gold year (quantities.py).
5. ``contained``: the gold occurs in the prediction (an answer embedded in a
   sentence), unless that occurrence is negated ("not Paris"), hedged ("Paris or
   Lyon", "3 2") or part of a phrase copied from the question (scope.py).
6. ``name`` / ``regnal_name``: person names agree on surname and, where both give
   one, on the given name (initials match), middle names optional; monarchs by
   given name and regnal number, title and designation optional (names.py).
7. ``list``: a list gold is matched when every item occurs.
8. ``gold_words``: a strict majority of the gold's informative content words
   (not those repeating the question at its head; every number and ordinal;
   every word of a list) in one clause of the prediction, none negated or hedged,
   and a title-case name not written with its last word swapped ("San Francisco
   49ers" is not "San Francisco Giants").
9. ``ordinal_form``: "season 2" for "the second season" and back.
10. ``gold_head`` / ``proper_name`` / ``location`` / ``coarser_place``: the
    prediction names a part of a descriptive gold that is itself the answer, or
    for a *where* question the place at another granularity (phrases.py).
    ``place``: for a *where* question, a place that contains the gold place or lies
    inside it, with no rival place at that grain ("the United States" for "the Chicago
    metropolitan area"; GeoNames and UN M49, places.py).
11. ``number_range`` / ``approximate``: a number inside a gold range ("11" for
    "10–12 years"); an approximate quantity to the coarser precision ("2.4
    billion" for "around 2.45 billion").
12. ``unit_conversion``: the quantity in other units ("373.15 K" for "100 °C",
    "1,083 ft" for "330 m"), to the precision either side states.
13. ``acronym`` / ``clipped_compound``: "DMV" for "Department of Motor Vehicles"
    and back; "forex" for "foreign exchange" (the starts of the words run together).

Vetoes: a negated or hedged gold occurrence stops the cascade, and a date
contradicting every gold date of the same precision in its year, or naming another
day in the month of a day-precise gold (``date_conflict``; a bare-year alias lifts
both).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from verifiers.dates import as_date
from verifiers.fractions import fraction_verdict
from verifiers.names import looks_like_name, names_match, regnal_match
from verifiers.normalize import (
    STOPWORDS, Tokens, canonical_tokens, content_words, same_stem, squad_normalize,
)
from verifiers.phrases import (
    ORDINAL, acronym_match, expand_clippings, list_items, number, ordinal_variants,
    reduced_golds,
)
from verifiers.places import place_answers
from verifiers.quantities import (
    approximately, converted, date_conflict, date_match, in_range, period_match,
)
from verifiers.scope import (
    find_clean, hedged, negated, occurrences, question_context, restates_question,
)

YES = frozenset({"yes", "yeah", "yep", "correct", "true", "indeed", "right", "affirmative"})
NO = frozenset({"no", "nope", "not", "false", "incorrect", "never", "negative"})


@dataclass(frozen=True)
class EquivalenceScore:
    """The decision, the classic SQuAD scores (best over references) and the deciding rule."""

    equivalent: bool
    em: float
    f1: float
    rule: str
    reference: str = ""


_PAREN = re.compile(r"\s*\(([^()]*)\)\s*")


def references(gold: str, aliases: Iterable[str] = ()) -> list[str]:
    """Gold and aliases, deduplicated; a parenthetical is an alternative name or a gloss,
    so "adenosine diphosphate (ADP)" also yields "adenosine diphosphate" and "ADP"."""
    seen, out = set(), []
    expanded = []
    for ref in (gold, *aliases):
        expanded.append(ref)
        if ref and _PAREN.search(ref):
            expanded.append(_PAREN.sub(" ", ref).strip())
            expanded += [m for m in _PAREN.findall(ref) if len(m.strip()) > 1]
    for ref in expanded:
        key = squad_normalize(ref or "")
        if ref and ref.strip() and key not in seen:
            seen.add(key)
            out.append(ref)
    return out


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 after SQuAD normalisation."""
    return _f1(squad_normalize(prediction).split(), squad_normalize(reference).split())


def _f1(p: list[str], r: list[str]) -> float:
    common = sum(min(p.count(w), r.count(w)) for w in set(p) & set(r))
    if not p or not r or common == 0:
        return float(p == r)
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def score_answer(prediction: str, gold: str, aliases: Sequence[str] = (),
                 question: str | None = None) -> EquivalenceScore:
    """Score ``prediction`` against ``gold`` and its ``aliases``.

    >>> score_answer("It was Wilhelm Röntgen in 1901.", "Wilhelm Conrad Rontgen").rule
    'name'
    >>> is_equivalent("Not Paris, but Lyon", "Paris")
    False
    """
    refs = references(gold, aliases)
    if not refs:
        raise ValueError("score_answer needs a non-empty gold answer")
    norm = squad_normalize(prediction or "")
    em = max(float(norm == squad_normalize(r)) for r in refs)
    f1 = max(_f1(norm.split(), squad_normalize(r).split()) for r in refs)
    pred = canonical_tokens(prediction or "")
    q_words = question_context(question)
    ref_tokens = [canonical_tokens(r) for r in refs]
    if date_conflict(pred, ref_tokens):
        return EquivalenceScore(False, em, f1, "date_conflict", "")
    verdicts = [_decide(pred, prediction or "", t, r, q_words) for t, r in zip(ref_tokens, refs)]
    for ok, rule, ref in ((v[0], v[1], r) for v, r in zip(verdicts, refs)):
        if ok:
            return EquivalenceScore(True, em, f1, rule, ref)
    reason = next((v[1] for v in verdicts if v[1] != "no_match"), "no_match")
    return EquivalenceScore(False, em, f1, reason, "")


def is_equivalent(prediction: str, gold: str, aliases: Sequence[str] = (),
                  question: str | None = None) -> bool:
    """True when ``prediction`` gives the same answer as ``gold`` (or one of ``aliases``)."""
    return score_answer(prediction, gold, aliases, question).equivalent


def _decide(pred: Tokens, pred_text: str, ref: Tokens, ref_text: str,
            q_words: set[str]) -> tuple[bool, str]:
    """(equivalent, rule) for one reference; a False rule names why it failed."""
    if not ref.words:
        return False, "empty_reference"
    if pred.words == ref.words:
        return True, "exact"
    by_value = fraction_verdict(pred_text, ref_text)
    if by_value is not None:  # "0.75" / "three quarters" / \frac{3}{4}; "1/20" is not "1/2"
        return by_value, "fraction" if by_value else "fraction_mismatch"
    gold_polarity = _gold_polarity(ref)
    if gold_polarity:
        return (_polarity(pred) == gold_polarity), "yes_no"
    gold_date = as_date(ref.words)
    if gold_date is not None and (gold_date.month or gold_date.day):
        return date_match(pred, gold_date)
    if period_match(pred, ref):
        return True, "period"
    found, blocked = find_clean(pred, ref.words, q_words)
    if found:
        return True, "contained"
    if blocked in ("negated", "hedged"):
        return False, blocked  # the gold is there but denied or one of several guesses
    if looks_like_name(ref_text) and names_match(pred_text, ref_text):
        return True, "name"
    if regnal_match(pred_text, ref_text):
        return True, "regnal_name"
    if _list_match(pred, ref_text, q_words):
        return True, "list"
    if _gold_words_in_clause(pred, ref, q_words, is_list=len(list_items(ref_text)) > 1,
                             titled=_title_case(ref_text)):
        return True, "gold_words"
    for variant in ordinal_variants(ref.words):
        if find_clean(pred, variant, q_words)[0] or _gold_words_in_clause(
                pred, Tokens(variant, (0,) * len(variant)), q_words, is_list=False):
            return True, "ordinal_form"
    for rule, part in reduced_golds(ref, ref_text, where_question="where" in q_words):
        if not part:
            continue  # an empty part would be found anywhere
        if rule == "coarser_place":
            if _coarser_place(pred, part, q_words):
                return True, rule
        elif find_clean(pred, part, q_words)[0]:
            return True, rule
    if "where" in q_words and place_answers(pred, pred_text, ref, q_words):
        return True, "place"
    if in_range(pred, ref):
        return True, "number_range"
    if approximately(pred, ref):
        return True, "approximate"
    if converted(pred, ref):
        return True, "unit_conversion"
    if acronym_match(pred_text, ref_text):
        return True, "acronym"
    expanded = expand_clippings(pred, ref.words)
    if expanded is not None and find_clean(expanded, ref.words, q_words)[0]:
        return True, "clipped_compound"
    return False, blocked or "no_match"


def _coarser_place(pred: Tokens, part: tuple[str, ...], q_words: set[str]) -> bool:
    """"in Maryland" answers "where" for "Baltimore, Maryland", but "Shawnee, Oklahoma" is
    another town for "Woodward, Oklahoma": the coarser place must stand on its own, not
    qualify a place the prediction names before it."""
    for i in occurrences(pred.words, part):
        if i > 0 and pred.clauses[i - 1] == pred.clauses[i] and pred.words[i - 1] not in STOPWORDS:
            continue
        if not negated(pred, i) and not hedged(pred, i, i + len(part), q_words) \
                and not restates_question(pred, i, i + len(part), q_words):
            return True
    return False


def _gold_polarity(ref: Tokens) -> str | None:
    """"yes"/"no" for a yes/no gold, also one qualified by adverbs ("Typically, no",
    "generally yes"): the adverb softens the answer, the polarity is the answer."""
    polar = [w for w in ref.words if w in ("yes", "no")]
    rest = [w for w in ref.words if w not in ("yes", "no")]
    if len(polar) == 1 and all(len(w) > 4 and w.endswith("ly") for w in rest):
        return polar[0]
    return None


def _polarity(pred: Tokens) -> str | None:
    for word in pred.words[:3]:
        if word in YES:
            return "yes"
        if word in NO:
            return "no"
    return None


def _list_match(pred: Tokens, ref_text: str, q_words: set[str]) -> bool:
    items = list_items(ref_text)
    if len(items) < 2:
        return False
    return all(find_clean(pred, canonical_tokens(x).words, q_words)[0]
               for x in items if canonical_tokens(x).words)


def _informative(words: tuple[str, ...], q_words: set[str]) -> set[str]:
    """The gold's content words less those that repeat the question at its head end: in
    "subdural hematoma" for "which type of hematoma", "hematoma" is the category asked
    for. A repeated modifier still restricts the head ("District Judge" for "… court in
    a district" is not any judge), so it stays."""
    keep = list(words)
    while len(keep) > 1 and keep[-1] in q_words:
        keep.pop()
    return set(keep)


def _gold_words_in_clause(pred: Tokens, ref: Tokens, q_words: set[str], is_list: bool,
                          titled: bool = False) -> bool:
    """Enough informative content words of the gold in one clause ("his brother" / "his late
    brother"), none of them negated or hedged. Gold words that repeat the question carry no
    answer ("subdural hematoma" asked as "which type of hematoma" is answered by "subdural")."""
    gold = _informative(content_words(ref), q_words)
    if not gold:
        return False
    # A strict majority of the gold's informative words; every word when the gold is a
    # list, since each item is part of the answer. Numbers are required: "541 million
    # years ago" shares "years ago" with "2.45 billion years ago" and is another answer.
    need = len(gold) if is_list else len(gold) // 2 + 1
    required = {w for w in gold if number(w) is not None or ORDINAL.match(w)}
    by_clause: dict[int, list[int]] = {}
    for i, c in enumerate(pred.clauses):
        by_clause.setdefault(c, []).append(i)
    for positions in by_clause.values():
        hits = [i for i in positions if any(same_stem(g, pred.words[i]) for g in gold)]
        found = {g for g in gold for i in hits if same_stem(g, pred.words[i])}
        if len(found) >= need and required <= found and not any(
                negated(pred, i) or hedged(pred, i, i + 1, q_words) for i in hits) \
                and not (found < gold and titled and _substituted(pred, ref.words)):
            return True
    return False


def _near_spelling(a: str, b: str) -> bool:
    """A letter lost or changed ("Bjrndalen" for "Bjørndalen"), not another word."""
    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.8


def _title_case(text: str) -> bool:
    words = [w for w in re.findall(r"[^\W\d_]+", text) if w.lower() not in STOPWORDS]
    return len(words) > 1 and all(w[0].isupper() for w in words)


def _substituted(pred: Tokens, gold: tuple[str, ...]) -> bool:
    """The prediction writes the gold name with its last word swapped for another: "San
    Francisco 49ers" for "San Francisco Giants" is another team, not most of this one."""
    n = len(gold)
    for i in range(len(pred.words) - n + 1):
        window = pred.words[i:i + n]
        diff = [k for k in range(n) if not same_stem(window[k], gold[k])]
        if diff == [n - 1] and n > 1 and len(set(pred.clauses[i:i + n])) == 1 \
                and window[-1] not in STOPWORDS and not _near_spelling(window[-1], gold[-1]):
            return True
    return False


__all__ = ["EquivalenceScore", "score_answer", "is_equivalent", "token_f1", "references"]
