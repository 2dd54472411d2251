"""Answer equivalence: is a predicted answer the same answer as the gold one?

The decision is a short cascade of linguistic rules over canonical tokens
(see normalize.py); the first rule that settles the case names itself in
``EquivalenceScore.rule``. Nothing here is fitted to a labelled set.

1. ``exact``: same canonical tokens (articles, accents, number words, Roman
   numerals, unit spellings, honorifics already folded).
2. ``yes_no``: a yes/no gold is matched by the polarity the prediction opens with.
3. ``date``: a date gold is matched by a date in the prediction that states
   every part the gold states (the prediction may be more precise).
4. ``contained``: the gold occurs in the prediction (an answer embedded in a
   sentence), unless that occurrence is negated ("not Paris") or hedged
   ("Paris or Lyon").
5. ``name``: person names agree on surname and, where both give one, on the
   given name (initials match), middle names optional.
6. ``list``: a list gold is matched when every item occurs.
7. ``gold_words``: a strict majority of the gold's informative content words
   (not those repeating the question; every number; every word of a list)
   in one clause of the prediction, none negated or hedged.
8. ``gold_head`` / ``proper_name`` / ``location``: the prediction names a part
   of a descriptive gold that is itself the answer (see phrases.py).
9. ``number_range``: a number inside a gold range ("11" for "10–12 years").
10. ``acronym``: "DMV" for "Department of Motor Vehicles" and back.

Vetoes: a negated or hedged gold occurrence stops the cascade, and a
day-precise date contradicting every day-precise gold date (``date_conflict``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from verifiers.dates import as_date, find_dates
from verifiers.names import looks_like_name, names_match, regnal_match
from verifiers.periods import as_span, as_year, find_spans, find_years
from verifiers.normalize import (
    STOPWORDS, Tokens, canonical_tokens, content_words, same_stem, squad_normalize,
)
from verifiers.phrases import (
    acronym_match, list_items, number, ordinal_variants, reduced_golds,
)

NEGATORS = frozenset({"not", "no", "never", "neither", "nor", "none", "nobody", "cannot",
                      "incorrect", "wrong", "false", "unlike", "instead", "rather"})
# "instead of X" / "rather than X" deny X, but "Instead, X ..." asserts it.
_NEGATOR_NEEDS = {"instead": "of", "rather": "than"}
YES = frozenset({"yes", "yeah", "yep", "correct", "true", "indeed", "right", "affirmative"})
NO = frozenset({"no", "nope", "not", "false", "incorrect", "never", "negative"})
_NEG_WINDOW = 4


@dataclass(frozen=True)
class EquivalenceScore:
    """The decision, the classic SQuAD scores (best over references) and the deciding rule."""

    equivalent: bool
    em: float
    f1: float
    rule: str
    reference: str = ""


_ORDINAL = re.compile(r"^\d+st$")  # canonical ordinals: "6th", "sixth" -> "6st"
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
    q_words = _question_context(question)
    ref_tokens = [canonical_tokens(r) for r in refs]
    if _date_conflict(pred, ref_tokens):
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
    gold_polarity = _gold_polarity(ref)
    if gold_polarity:
        return (_polarity(pred) == gold_polarity), "yes_no"
    gold_date = as_date(ref.words)
    if gold_date is not None and (gold_date.month or gold_date.day):
        return _date_match(pred, gold_date)
    if _period_match(pred, ref):
        return True, "period"
    found, blocked = _find_clean(pred, ref.words, q_words)
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
    if _gold_words_in_clause(pred, ref, q_words, is_list=len(list_items(ref_text)) > 1):
        return True, "gold_words"
    for variant in ordinal_variants(ref.words):
        if _find_clean(pred, variant, q_words)[0] or _gold_words_in_clause(
                pred, Tokens(variant, (0,) * len(variant)), q_words, is_list=False):
            return True, "ordinal_form"
    for rule, part in reduced_golds(ref, ref_text, where_question="where" in q_words):
        if rule == "coarser_place":
            if _coarser_place(pred, part, q_words):
                return True, rule
        elif _find_clean(pred, part, q_words)[0]:
            return True, rule
    if _in_range(pred, ref):
        return True, "number_range"
    if _approximately(pred, ref):
        return True, "approximate"
    if acronym_match(pred_text, ref_text):
        return True, "acronym"
    return False, blocked or "no_match"


def _coarser_place(pred: Tokens, part: tuple[str, ...], q_words: set[str]) -> bool:
    """"in Maryland" answers "where" for "Baltimore, Maryland", but "Shawnee, Oklahoma" is
    another town for "Woodward, Oklahoma": the coarser place must stand on its own, not
    qualify a place the prediction names before it."""
    for i in _occurrences(pred.words, part):
        if i > 0 and pred.clauses[i - 1] == pred.clauses[i] and pred.words[i - 1] not in STOPWORDS:
            continue
        if not _negated(pred, i) and not _hedged(pred, i, i + len(part), q_words) \
                and not _restates_question(pred, i, i + len(part), q_words):
            return True
    return False


def _in_range(pred: Tokens, ref: Tokens) -> bool:
    """A gold range "10–12 years" is answered by any number inside it ("11.3 years").

    Not for years: "1780–1830" for "when did it start and end" names two dates, and a
    year inside them answers neither."""
    w = [x for x in ref.words if x not in ("between", "from")]
    if len(w) < 2 or number(w[0]) is None:
        return False
    k = 2 if w[1] == "to" else 1
    if k >= len(w) or number(w[k]) is None:
        return False
    low, high, unit = number(w[0]), number(w[k]), w[k + 1:k + 2]
    if all(x.isdigit() and len(x) == 4 for x in (w[0], w[k])):
        return False
    for i, word in enumerate(pred.words):
        value = number(word)
        if value is None or not low <= value <= high or _negated(pred, i):
            continue
        # The unit may go unsaid when nothing follows the number ("11.3" for "10–12 years").
        if not unit or pred.words[i + 1:i + 2] in (tuple(unit), ()):
            return True
    return False


APPROXIMATE = frozenset({"about", "around", "approximately", "roughly", "nearly", "almost",
                         "circa", "c", "some", "approx", "estimated"})


def _approximately(pred: Tokens, ref: Tokens) -> bool:
    """An approximate quantity ("around 2.45 billion years ago", "c. 3000 BC") is matched
    by a number that agrees with it to the precision of the less precise of the two
    (2.4 billion, 3150 BC), with the same unit. The approximation must be stated, in the
    gold or next to the predicted number; a bare "83" is not matched by "80"."""
    w = ref.words
    k = next((i for i, x in enumerate(w) if number(x) is not None), None)
    if k is None or any(number(x) is not None for x in w[k + 1:]):
        return False
    if any(x not in APPROXIMATE and x != "at" for x in w[:k]):
        return False  # the number is the answer, not a bound ("more than 200") or a detail
    gold_approx, unit = any(x in APPROXIMATE for x in w[:k]), w[k + 1:]
    for i, x in enumerate(pred.words):
        if number(x) is None or _year_like(x) and not unit or _next_to_number(pred, i):
            continue  # a bound of a range ("5.5 to 10 metres") is no estimate of the answer
        stated = gold_approx or (i > 0 and pred.words[i - 1] in APPROXIMATE)
        same_unit = pred.words[i + 1:i + 1 + len(unit)] == unit or i + 1 == len(pred.words)
        if stated and same_unit and _agree_at_precision(x, w[k]) and not _negated(pred, i):
            return True
    return False


def _next_to_number(pred: Tokens, i: int) -> bool:
    w = pred.words
    def num(k: int) -> bool:
        return 0 <= k < len(w) and number(w[k]) is not None
    links = ("to", "and", "or")
    return (num(i - 1) or num(i + 1) or (i >= 2 and w[i - 1] in links and num(i - 2))
            or (i + 2 < len(w) and w[i + 1] in links and num(i + 2)))


def _agree_at_precision(a: str, b: str) -> bool:
    """Equal once rounded to the coarser precision: 2.4 ~ 2.45, 3150 ~ 3000, 80 ~ 83."""
    unit = max(_last_digit_unit(a), _last_digit_unit(b))
    return abs(number(a) - number(b)) <= unit / 2 * (1 + 1e-9)


def _last_digit_unit(token: str) -> float:
    if "." in token:
        return 10.0 ** -len(token.split(".")[1])
    return 10.0 ** (len(token) - len(token.rstrip("0"))) if token.strip("0") else 1.0


def _question_context(question: str | None) -> set[str]:
    """The question's canonical words plus its bigrams (as "w1 w2" strings)."""
    if not question:
        return set()
    words = canonical_tokens(question).words
    return set(words) | {f"{a} {b}" for a, b in zip(words, words[1:])}


def _restates_question(pred: Tokens, start: int, end: int, q_words: set[str]) -> bool:
    """The occurrence is part of a phrase copied from the question ("east of the Jordan
    River" when the gold is "Jordan"), so it does not give the answer."""
    w = pred.words
    if not all(x in q_words for x in w[start:end]):
        return False
    before = f"{w[start - 1]} {w[start]}" if start > 0 else ""
    after = f"{w[end - 1]} {w[end]}" if end < len(w) else ""
    return before in q_words or after in q_words


def _occurrences(hay: tuple[str, ...], needle: tuple[str, ...]) -> list[int]:
    n = len(needle)
    return [i for i in range(len(hay) - n + 1) if hay[i:i + n] == needle]


def _find_clean(pred: Tokens, needle: tuple[str, ...], q_words: set[str]) -> tuple[bool, str]:
    """Is there an occurrence of ``needle`` that is neither negated nor hedged?"""
    blocked = ""
    for i in _occurrences(pred.words, needle):
        if _restates_question(pred, i, i + len(needle), q_words):
            blocked = blocked or "restates_question"
        elif _negated(pred, i):
            blocked = "negated"
        elif _hedged(pred, i, i + len(needle), q_words):
            blocked = "hedged"
        else:
            return True, ""
    return False, blocked


def _negated(pred: Tokens, start: int) -> bool:
    clause = pred.clauses[start]
    for k in range(max(0, start - _NEG_WINDOW), start):
        if pred.clauses[k] == clause and pred.words[k] in NEGATORS:
            after = pred.words[k + 1] if k + 1 < len(pred.words) else ""
            if pred.words[k] == "not" and after == "only":
                continue
            if pred.words[k] in _NEGATOR_NEEDS and after != _NEGATOR_NEEDS[pred.words[k]]:
                continue
            return True
    return False


UNCERTAIN = frozenset({"may", "might", "could", "possibly", "perhaps", "probably", "likely",
                       "maybe", "unsure", "uncertain", "unclear", "either", "guess"})


def _hedged(pred: Tokens, start: int, end: int, q_words: set[str]) -> bool:
    """The match is one of several candidates: "either X or Y", "it could be X or Y", "7 or 8".

    A bare "X or Y" between names is usually a second name for the same thing ("the
    book or libretto", "naos or cella"), so "or" hedges only next to a marker of
    uncertainty in the same clause, or between numbers, which cannot be synonyms.
    """
    if "or" in q_words:
        return False  # the question itself offers a choice
    if _among_numbers(pred, start, end):
        return True
    w, c = pred.words, pred.clauses
    around = [k for k in (start - 1, end) if 0 <= k < len(w) and c[k] == c[start]]
    if not any(w[k] == "or" for k in around):
        return False
    clause = {w[k] for k in range(len(w)) if c[k] == c[start]}
    numbers = all(number(w[k]) is not None for k in range(start, end))
    return bool(clause & UNCERTAIN) or numbers


def _gold_polarity(ref: Tokens) -> str | None:
    """"yes"/"no" for a yes/no gold, also one qualified by adverbs ("Typically, no",
    "generally yes"): the adverb softens the answer, the polarity is the answer."""
    polar = [w for w in ref.words if w in ("yes", "no")]
    rest = [w for w in ref.words if w not in ("yes", "no")]
    if len(polar) == 1 and all(len(w) > 4 and w.endswith("ly") for w in rest):
        return polar[0]
    return None


def _among_numbers(pred: Tokens, start: int, end: int) -> bool:
    """A number listed right next to other numbers ("3 2", "3, 2") is one of several
    candidates. Years are left out: a year next to another number is a range
    ("1881–1885"), a date ("January 26, 1788") or a citation mark run into it."""
    w, c = pred.words, pred.clauses
    if end - start != 1 or number(w[start]) is None or _year_like(w[start]):
        return False
    return any(0 <= k < len(w) and c[k] == c[start] and number(w[k]) is not None
               and not _year_like(w[k]) for k in (start - 1, end))


def _year_like(word: str) -> bool:
    return word.isdigit() and len(word) in (3, 4)


def _polarity(pred: Tokens) -> str | None:
    for word in pred.words[:3]:
        if word in YES:
            return "yes"
        if word in NO:
            return "no"
    return None


def _date_match(pred: Tokens, gold) -> tuple[bool, str]:
    for d in find_dates(pred.words):
        if d.agrees_with(gold) and not _negated(pred, d.start) and not _hedged(pred, d.start, d.end, set()):
            return True, "date"
    if gold.year is not None and any(s.contains(gold.year) and not _negated(pred, s.start)
                                     for s in find_spans(pred.words)):
        return True, "period"  # "the 1890s" for "July 1, 1890": coarser, as a year would be
    return False, "date_mismatch"


def _period_match(pred: Tokens, ref: Tokens) -> bool:
    """A year inside a gold century or decade ("957 BCE" for "the mid-10th century BCE",
    1994 for "the 1990s"), or a period inside it; or the century or decade that contains
    a gold year: a coarser date, as a year is for a full date. (A gold that is itself a
    period already says how precise the answer must be: no coarser period.)"""
    gold_span, gold_year = as_span(ref.words), as_year(ref.words)
    if gold_span is None and gold_year is None:
        return False
    def clean(start: int, end: int) -> bool:
        return not _negated(pred, start) and not _hedged(pred, start, end, set())
    if gold_span is not None:
        if any(gold_span.contains(y) and clean(i, i + 1) for y, i in find_years(pred.words)):
            return True
        return any(s.within(gold_span) and clean(s.start, s.end) for s in find_spans(pred.words))
    return any(s.contains(gold_year) and clean(s.start, s.end) for s in find_spans(pred.words))


def _date_conflict(pred: Tokens, refs: list[Tokens]) -> bool:
    """The prediction states a date in a gold date's year, to the month, that agrees with
    no gold date: "December 1968" is wrong for "November 8, 1968" even when another
    alias, "late 1968", shares its year. Only when every date alias gives the month: a
    bare-year alias ("1788") accepts any day in its year."""
    dates = [d for d in (as_date(t.words) for t in refs) if d]
    golds = [d for d in dates if d.year and d.month]
    if not golds or len(golds) < len(dates):
        return False
    years = {g.year for g in golds}
    stated = [d for d in find_dates(pred.words) if d.year in years and d.month]
    return bool(stated) and not any(d.agrees_with(g) for d in stated for g in golds)


def _list_match(pred: Tokens, ref_text: str, q_words: set[str]) -> bool:
    items = list_items(ref_text)
    if len(items) < 2:
        return False
    return all(_find_clean(pred, canonical_tokens(x).words, q_words)[0]
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


def _gold_words_in_clause(pred: Tokens, ref: Tokens, q_words: set[str], is_list: bool) -> bool:
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
    required = {w for w in gold if number(w) is not None or _ORDINAL.match(w)}
    by_clause: dict[int, list[int]] = {}
    for i, c in enumerate(pred.clauses):
        by_clause.setdefault(c, []).append(i)
    for positions in by_clause.values():
        hits = [i for i in positions if any(same_stem(g, pred.words[i]) for g in gold)]
        found = {g for g in gold for i in hits if same_stem(g, pred.words[i])}
        if len(found) >= need and required <= found and not any(
                _negated(pred, i) or _hedged(pred, i, i + 1, q_words) for i in hits):
            return True
    return False


__all__ = ["EquivalenceScore", "score_answer", "is_equivalent", "token_f1", "references"]
