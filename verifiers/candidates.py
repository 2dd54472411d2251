"""What the reward mode refuses: several candidates, padding, and coarse answers.

Human raters accept a long answer that contains the gold, and ``is_equivalent``
(the judging mode) follows them. An RL policy would learn to exploit that: list
guesses ("Paris, Lyon, Nice"), runs or ranges of numbers ("1934 1935 1936",
"1934-36"), repeats ("7 7 7"), zero padding ("0008"), filler around the answer,
a coarser answer than asked ("the 1930s" for 1934), or a number run into letters
("ne7ka", "a7" for 7: a tiny policy's syllables glued to the digit, which the word
splitting of the judging mode reads as "ne 7 ka"). :func:`refusal` names the form, or
returns "" when the answer offers one candidate.

A candidate is a part of the answer, cut at list separators (``; / | &``, "and",
"or", "nor", "either", newlines, bullets, JSON arrays) and, within those, at
apposition (a comma, brackets, a spaced dash), that has a word neither the
question's, an answer frame's, a hedge nor a function word, whatever its type
(issue 29: "Iran & a breaded chicken patty" is two). Occurrences of the gold and
its aliases are cut out first, so "Simon & Garfunkel" or "10–12 years" stay one
candidate. Several candidates are refused only when they are different answers:
"330 m (1,083 ft)" is one, and so is a right part with its qualifiers in
apposition (:func:`_qualifies`: "Paris, France", "Monday, April 7, 2016",
"Geoffrey Palmer, OBE"). The gold's type (:func:`answer_type`) still decides
runs, ranges, zero padding and gluing.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from verifiers.dates import as_date, find_dates
from verifiers.names import TITLES
from verifiers.normalize import (
    CURRENCY, STOPWORDS, canonical_tokens, repair_mojibake, squad_normalize,
)
from verifiers.periods import as_year, find_spans, find_years
from verifiers.phrases import list_items, number
from verifiers.quantities import LINEAR_UNITS, TEMPERATURE

GOLD_ANSWER_TYPES = ("year", "number", "date", "name", "other")  # answer_type(gold)'s values
MAX_EXTRA_WORDS = 8
MAX_CHARS = 200
# Words of the usual answer frames ("the answer is", "it was", "I think it is"): they
# cost nothing; any other word not in the question or the gold counts as padding.
FRAME_WORDS = frozenset("""
answer answers final correct correctly think believe guess say said would will can
called named known name located situated born died held took place happened released
because since therefore thus hence so well ok okay sure certainly definitely
""".split())
HEDGES = frozenset({"maybe", "perhaps", "possibly", "probably", "likely", "either", "neither",
                    "both", "also", "or", "and", "nor", "between", "from"})

_MASK = "\ue000"  # a masked gold occurrence: one private-use character, neither word nor digit
_BULLET = re.compile(r"(?m)^\s*(?:[-*•·‣▪–]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+")
_SEPARATORS = re.compile(
    r"[;|/&\n\[\]{}]|(?<![\w-])(?:and|or|nor|either|neither|versus|vs\.?|plus)(?![\w-])",
    re.IGNORECASE)
_APPOSITION = re.compile(r"[()]|,(?!\d{3}(?!\d))|\s[-–—]\s")
_TRIM = " \t.:\"'`*"
_NUM = r"\d[\d,.]*\d|\d"
_RANGE = re.compile(
    rf"(?<![\w.])(?:{_NUM})\s*(?:[-–—]|to|through|till|until|thru)\s*(?:{_NUM})(?![\w])"
    rf"|between\s+(?:{_NUM})\s+and\s+(?:{_NUM})", re.IGNORECASE)
_RUN = re.compile(rf"(?<![\w.,])(?:{_NUM})(?:\s+(?:{_NUM}))+(?![\w.,]*\d)")
_ZERO_PADDED = re.compile(r"(?<![\w.,/:'’–—-])0\d+(?![.,:]?\d)")  # not "2001–02", "10:05"
# A parenthesised abbreviation glosses what precedes it ("Krypton (Kr)", "carbon dioxide (CO2)").
_GLOSS = re.compile(r"\s*\(\s*[A-Z][A-Za-z0-9]{0,4}\s*\)")
# After a number, letters that keep it the same answer: units and multipliers ("7km",
# "7kg", "5bn"), ordinals and plurals ("7th", "1930s"), clock times ("7pm").
# Any other letters run into a gold number ("ne7ka", "a7", "x1934") make it no answer.
NUMBER_SUFFIXES = frozenset("""
st nd rd th s k m b bn mn mln t tn x am pm h hr hrs min mins sec secs ms yr yrs y d
mm cm km mi ft in yd sq g kg mg lb lbs oz l ml gal w kw mw gw kwh v kv hz khz mhz ghz
kb mb gb tb kbps mbps gbps mph kph kmh c f bc bce ad ce
""".split())
# Parts that may stand beside the answer in a list without being a second candidate.
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# Units as canonical_tokens writes them ("7 (km)", "$2.18 billion, USD").
UNIT_WORDS = NUMBER_SUFFIXES | {*(u for t in LINEAR_UNITS.values() for u in t), *CURRENCY.values(),
                                *TEMPERATURE} | frozenset("""
percent degree dollar euro yen rupee yuan us usd eur gbp kilometre metre centimetre millimetre
mile litre square cubic per year month week day hour minute second
""".split())
# Rules of the judging mode that accept a place at another grain ("France" for Paris).
PLACE_RULES = frozenset({"place", "location", "coarser_place"})
# A title or post-nominal beside a name ("Geoffrey Palmer, OBE"; "Tim Cook, CEO").
TITLE_WORDS = frozenset(TITLES) | frozenset("""
obe mbe cbe kbe gbe dbe frs qc kc mp phd ph.d md esq jr sr former late current
ceo cfo coo chairman chairwoman founder prime vice deputy sir dame lord lady saint st
""".split())
_ALNUM = re.compile(r"[^\W_]+")
_RUNS = re.compile(r"\d+|[^\W\d_]+")
_MONTH = (r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?")
_DATE = re.compile(rf"\b(?:{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{3,4}}"
                   rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{3,4}}"
                   rf"|\d{{4}}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}})\b",
                   re.IGNORECASE)


def answer_type(gold: str) -> str:
    """year | number | date | name | other, from the gold's written form."""
    words = canonical_tokens(gold).words
    if not words:
        return "other"
    if as_year(words) is not None:
        return "year"
    date = as_date(words)
    if date is not None and (date.month or date.day):
        return "date"
    nums = [w for w in words if number(w) is not None]
    if nums and len(words) <= len(nums) + 2:
        return "number"
    if _title_case(gold):
        return "name"
    return "other"


def short_single_answer(text: str, max_words: int = 10) -> bool:
    """At most ``max_words`` words and no list separator: the subset of labelled pairs on
    which the reward mode is held to the judging mode (benchmarks/bench_verifiers.py)."""
    return len(text.split()) <= max_words and not _LIST_SEPARATOR.search(text)


_LIST_SEPARATOR = re.compile(r"[,;/|&\n]|\b(?:and|or|nor)\b", re.IGNORECASE)


def _title_case(text: str) -> bool:
    letters = [w for w in re.findall(r"[^\W\d_][\w'’.-]*", text) if w.lower() not in STOPWORDS]
    return bool(letters) and all(w[0].isupper() for w in letters)


def refusal(answer: str, gold: str, aliases: Sequence[str] = (), question: str | None = None,
            *, max_extra_words: int = MAX_EXTRA_WORDS, max_chars: int = MAX_CHARS) -> str:
    """The refusal rule for ``answer`` ("refused_list", "refused_padding", …) or ""."""
    refs = [repair_mojibake(r) for r in (gold, *aliases) if r and r.strip()]
    kind = answer_type(gold)
    masked = _mask(answer, refs)
    if kind in ("year", "number", "date") and _ZERO_PADDED.search(_DATE.sub(" ", masked)):
        return "refused_zero_padding"
    if kind in ("year", "number", "date") and _glued(masked, refs):
        return "refused_glued"
    words = canonical_tokens(answer).words
    if any(words == canonical_tokens(r).words for r in refs):
        return ""  # the gold itself, however it is written ("10-12 years" for "10–12 years")
    if len(answer) > max_chars:
        return "refused_padding"
    if _extra_words(answer, refs, question) > max_extra_words:
        return "refused_padding"
    if _repeated(answer, refs):
        return "refused_repeat"
    if kind in ("year", "number", "date"):
        numeric = _mask(_DATE.sub(" date ", answer), refs).replace(_MASK, "1")  # gold: a number
        if _RANGE.search(numeric) and not any(_RANGE.search(r) for r in refs):
            return "refused_range"
        if _RUN.search(numeric):
            return "refused_list"
    if _several(masked, refs, question, kind):
        return "refused_list"
    return ""


def coarser(answer: str, gold: str, aliases: Sequence[str] = ()) -> bool:
    """The answer names a decade or century, no year, for a gold that is a year or a
    date ("the 1930s" or "the 20th century" for 1934). A year for a full date is not
    refused: human raters accept it ("1965" for "1 August 1965")."""
    words = canonical_tokens(answer).words
    if find_years(words) or not find_spans(words):
        return False
    for ref in (gold, *aliases):
        w = canonical_tokens(ref).words
        d = as_date(w)
        if as_year(w) is not None or (d is not None and d.year is not None):
            return True
    return False


def _extra_words(answer: str, refs: list[str], question: str | None) -> int:
    """Words in neither the question, the golds, the answer frames nor STOPWORDS."""
    known = set(canonical_tokens(question or "").words)
    for ref in refs:
        known |= set(canonical_tokens(ref).words)
    return sum(1 for w in canonical_tokens(answer).words
               if w not in known and w not in STOPWORDS and w not in FRAME_WORDS
               and w not in HEDGES)


def _glued(masked: str, refs: list[str]) -> bool:
    """A gold number run into letters that are no unit, ordinal or plural ("ne7ka", "a7",
    "7ka" for 7). Clean occurrences of the gold are masked already; a gold written with
    letters ("A7", "B-52") is its own form and stays.

    >>> _glued("ne7ka", ["7"]), _glued("a7", ["7"]), _glued("7km", ["7"]), _glued("mp3", ["7"])
    (True, True, False, False)
    """
    numbers = {n for r in refs for n in re.findall(r"\d+", r.replace(",", ""))}
    for word in _ALNUM.findall(masked):
        runs = _RUNS.findall(word)
        for i, run in enumerate(runs):
            if len(runs) < 2 or not run.isdigit() or run not in numbers:
                continue
            after = runs[i + 1].lower() if i + 1 < len(runs) else ""
            if i > 0 or (after and after not in NUMBER_SUFFIXES):
                return True
    return False


def _repeated(answer: str, refs: list[str]) -> bool:
    """The gold written twice or more and nothing else ("7 7 7", "Paris, Paris")."""
    words = [w for w in canonical_tokens(answer).words if w not in HEDGES]
    for ref in refs:
        gold = tuple(w for w in canonical_tokens(ref).words if w not in HEDGES)
        n = len(gold)
        if n and len(words) >= 2 * n and len(words) % n == 0 and all(
                tuple(words[i:i + n]) == gold for i in range(0, len(words), n)):
            return True
    return False


def _mask(answer: str, refs: list[str]) -> str:
    """The answer with each written occurrence of a gold or alias as one mask character."""
    for ref in sorted(refs, key=len, reverse=True):
        pattern = r"\s+".join(re.escape(p) for p in ref.split())
        pattern = re.sub(r"\\?[-–—]", r"\\s*[-–—]\\s*", pattern)
        answer = re.sub(rf"(?<!\w){pattern}(?!\w)", _MASK, answer, flags=re.IGNORECASE)
    return answer


def split_candidates(text: str) -> list[list[str]]:
    """The answer's candidate groups: cut at list separators (a JSON array gives its
    items), then each group at apposition (a comma, brackets, a spaced dash: "Paris,
    France", "Tim Cook (CEO)"), where a part may qualify its neighbour."""
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        try:
            items = json.loads(stripped)
            if isinstance(items, list):
                return [[str(x).strip()] for x in items if str(x).strip()]
        except ValueError:
            pass
    text = _GLOSS.sub(" ", _BULLET.sub("\n", text))
    text = _DATE.sub(lambda m: m.group().replace(",", " "), text)
    groups = [[p.strip(_TRIM) for p in _APPOSITION.split(g) if p and p.strip(_TRIM)]
              for g in _SEPARATORS.split(text) if g]
    return [g for g in groups if g]


def _several(masked: str, refs: list[str], question: str | None, kind: str) -> bool:
    """Two or more candidates, of any types, at least one of them right and one neither
    right nor, in apposition to a right one, a qualifier of it (:func:`_qualifies`)."""
    groups = split_candidates(masked)
    q_words = set(canonical_tokens(question or "").words)
    groups = [[p for p in g if _MASK in p or _fresh(p, q_words)] for g in groups]
    if sum(len(g) for g in groups) < 2:
        return False
    from verifiers.equivalence import score_answer
    items = {squad_normalize(x) for r in refs for x in (r, *list_items(r))}
    gold, aliases = refs[0], tuple(refs[1:])

    def is_right(p: str) -> bool:  # a coarser place is right alone, not beside the gold
        score = score_answer(p, gold, aliases, question)
        return score.equivalent and score.rule not in PLACE_RULES

    right = {p for g in groups for p in g if _MASK in p or squad_normalize(p) in items
             or is_right(p)}
    if not right:
        return False
    for g in groups:
        inner = [*refs, *(p for p in g if p in right and _MASK not in p)]
        beside_right = any(p in right for p in g)
        if any(p not in right and not (beside_right and _qualifies(p, inner, kind, q_words)
                                       or _between_places(g, i, inner))
               for i, p in enumerate(g)):
            return True
    return False


def _between_places(group: list[str], i: int, inner: list[str]) -> bool:
    """A place between the answer and a place that contains it: "Ontario" in "Toronto,
    Ontario, Canada" (the gazetteer has no Canadian provinces)."""
    if i == 0 or not _contains_place(group[-1], inner) or i == len(group) - 1:
        return False
    from verifiers.places import gazetteer
    words = canonical_tokens(group[i]).words
    return any(e - s == len(words) for s, e, _ in gazetteer().find(words))


def _fresh(part: str, q_words: set[str]) -> list[str]:
    """The part's words that are neither the question's, an answer frame, a hedge nor a
    function word: a part without any offers no candidate ("the answer is", "well")."""
    return [w for w in canonical_tokens(part).words if w not in q_words and w not in FRAME_WORDS
            and w not in HEDGES and (w not in STOPWORDS or w in ("yes", "no"))]


def _qualifies(part: str, inner: list[str], kind: str, q_words: set[str]) -> bool:
    """A part that a single right answer carries: a weekday beside a date, a unit beside a
    number, a title or post-nominal beside a name, a place that contains the answer's
    place ("Paris, France"). ``inner`` holds the golds and the parts judged right."""
    words = [w for w in canonical_tokens(part).words if w not in STOPWORDS]
    if not words:
        return True
    if all(w in WEEKDAYS for w in words):
        return kind == "date" or any(find_dates(canonical_tokens(x).words) for x in inner)
    if all(w in UNIT_WORDS for w in words):
        return any(re.search(r"\d", x) for x in inner)
    raw = {w.lower().strip(".") for w in re.findall(r"[^\W\d_][\w.]*", part)}
    raw -= STOPWORDS | q_words
    if raw and raw <= TITLE_WORDS and not re.search(r"\d", part):
        return any(_title_case(x) for x in inner)
    return _contains_place(part, inner)


def _contains_place(part: str, inner: list[str]) -> bool:
    """The part is a place (gazetteer) that contains a place the answer names."""
    if not re.search(r"[A-Z]", part):
        return False
    from verifiers.places import as_place, related
    outer = as_place(canonical_tokens(part).words)
    if not outer:
        return False
    return any(related(a, b) == "coarser" for x in inner
               for a in as_place(canonical_tokens(x).words) for b in outer)
