"""Rules for numbers, dates and periods: ranges, approximate quantities, partial dates,
centuries and decades, and the date-conflict veto (see equivalence.py for the cascade)."""

from __future__ import annotations

from verifiers.dates import Date, as_date, find_dates
from verifiers.normalize import Tokens
from verifiers.periods import as_span, as_year, find_spans, find_years
from verifiers.phrases import number
from verifiers.scope import hedged, negated, year_like


def in_range(pred: Tokens, ref: Tokens) -> bool:
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
        if value is None or not low <= value <= high or negated(pred, i):
            continue
        # The unit may go unsaid when nothing follows the number ("11.3" for "10–12 years").
        if not unit or pred.words[i + 1:i + 2] in (tuple(unit), ()):
            return True
    return False


APPROXIMATE = frozenset({"about", "around", "approximately", "roughly", "nearly", "almost",
                         "circa", "c", "some", "approx", "estimated"})


def approximately(pred: Tokens, ref: Tokens) -> bool:
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
        if number(x) is None or year_like(x) and not unit or next_to_number(pred, i):
            continue  # a bound of a range ("5.5 to 10 metres") is no estimate of the answer
        stated = gold_approx or (i > 0 and pred.words[i - 1] in APPROXIMATE)
        same_unit = pred.words[i + 1:i + 1 + len(unit)] == unit or i + 1 == len(pred.words)
        if stated and same_unit and agree_at_precision(x, w[k], loose=gold_approx) \
                and not negated(pred, i):
            return True
    return False


# Units by dimension, as a factor to the SI unit (canonical spellings, see normalize.py).
LINEAR_UNITS = {
    "length": {"metre": 1.0, "kilometre": 1000.0, "centimetre": 0.01, "millimetre": 0.001,
               "mile": 1609.344, "foot": 0.3048, "feet": 0.3048,
               "fort": 0.3048,  # "ft" reads as "fort" (Ft. Worth); after a number it is feet
               "inch": 0.0254, "inche": 0.0254, "yard": 0.9144},
    "mass": {"kilogram": 1.0, "gram": 0.001, "tonne": 1000.0, "pound": 0.45359237,
             "ounce": 0.028349523125},
}
# Temperature scales as (scale, offset) to kelvin; "100 °C" reads "100 c".
TEMPERATURE = {"k": (1.0, 0.0), "c": (1.0, 273.15), "f": (5 / 9, 273.15 - 32 * 5 / 9)}


def _unit_at(words: tuple[str, ...], i: int) -> tuple[str, str] | None:
    """(dimension, unit) of the unit word after the number at ``i``."""
    unit = words[i + 1] if i + 1 < len(words) else ""
    if unit in TEMPERATURE:
        return "temperature", unit
    return next(((dim, unit) for dim, table in LINEAR_UNITS.items() if unit in table), None)


def _to_si(value: float, dim: str, unit: str) -> tuple[float, float]:
    """The value in SI units and the factor that one unit of ``unit`` is worth there."""
    if dim == "temperature":
        scale, offset = TEMPERATURE[unit]
        return value * scale + offset, scale
    return value * LINEAR_UNITS[dim][unit], LINEAR_UNITS[dim][unit]


def converted(pred: Tokens, ref: Tokens) -> bool:
    """A quantity in other units: "373.15 K" for "100 °C", "1,083 ft" for "330 m". They
    agree to the last digit stated on either side, carried over to the same units (a
    whole number counts as exact to the unit: "100 °C" is not "350 K"). A prediction
    that also states the quantity in the gold's own unit is judged on that figure, and
    the bounds of a range are no estimate."""
    w = list(ref.words)
    while w and w[0] in APPROXIMATE and len(w) > 2:
        w.pop(0)
    gold = _unit_at(tuple(w), 0) if len(w) == 2 and number(w[0]) is not None else None
    if gold is None:
        return False
    dim, gold_unit = gold
    gold_si, gold_factor = _to_si(number(w[0]), dim, gold_unit)
    stated = [(i, _unit_at(pred.words, i)) for i, x in enumerate(pred.words)
              if number(x) is not None and not next_to_number(pred, i)]
    if any(unit == (dim, gold_unit) for _, unit in stated):
        return False
    for i, unit in stated:
        if not unit or unit[0] != dim or negated(pred, i) or hedged(pred, i, i + 1, set()):
            continue
        pred_si, pred_factor = _to_si(number(pred.words[i]), dim, unit[1])
        tolerance = max(_step(pred.words[i]) * pred_factor, _step(w[0]) * gold_factor) / 2
        if abs(pred_si - gold_si) <= tolerance * (1 + 1e-9):
            return True
    return False


def _step(token: str) -> float:
    """One unit of the last digit written: 0.01 for "373.15", 1 for "1083" and "330"."""
    return 10.0 ** -len(token.split(".")[1]) if "." in token else 1.0


def next_to_number(pred: Tokens, i: int) -> bool:
    w = pred.words
    def num(k: int) -> bool:
        return 0 <= k < len(w) and number(w[k]) is not None
    links = ("to", "and", "or")
    return (num(i - 1) or num(i + 1) or (i >= 2 and w[i - 1] in links and num(i - 2))
            or (i + 2 < len(w) and w[i + 1] in links and num(i + 2)))


def agree_at_precision(a: str, b: str, loose: bool = False) -> bool:
    """Equal once rounded to the coarser precision: 2.4 ~ 2.45, 3150 ~ 3000, 80 ~ 83.

    ``loose`` (the gold itself says "about"): a figure given to three significant digits
    or more is only good to one digit less, so "about 3.99 degrees" accepts 3.97."""
    unit = max(last_digit_unit(a), last_digit_unit(b))
    if loose and min(significant_digits(a), significant_digits(b)) >= 3:
        unit = max(unit, 10 * min(last_digit_unit(a), last_digit_unit(b)))
    return abs(number(a) - number(b)) <= unit / 2 * (1 + 1e-9)


def significant_digits(token: str) -> int:
    digits = token.lstrip("-").replace(".", "").replace(",", "").lstrip("0")
    return len(digits if "." in token else digits.rstrip("0")) or 1


def last_digit_unit(token: str) -> float:
    if "." in token:
        return 10.0 ** -len(token.split(".")[1])
    return 10.0 ** (len(token) - len(token.rstrip("0"))) if token.strip("0") else 1.0


def date_match(pred: Tokens, gold: Date) -> tuple[bool, str]:
    for d in find_dates(pred.words):
        if d.agrees_with(gold) and not negated(pred, d.start) and not hedged(pred, d.start, d.end, set()):
            return True, "date"
    if gold.year is not None and any(s.contains(gold.year) and not negated(pred, s.start)
                                     for s in find_spans(pred.words)):
        return True, "period"  # "the 1890s" for "July 1, 1890": coarser, as a year would be
    return False, "date_mismatch"


def period_match(pred: Tokens, ref: Tokens) -> bool:
    """A year inside a gold century or decade ("957 BCE" for "the mid-10th century BCE",
    1994 for "the 1990s"), or a period inside it; or the century or decade that contains
    a gold year: a coarser date, as a year is for a full date. (A gold that is itself a
    period already says how precise the answer must be: no coarser period.)"""
    gold_span, gold_year = as_span(ref.words), as_year(ref.words)
    if gold_span is None and gold_year is None:
        return False
    def clean(start: int, end: int) -> bool:
        return not negated(pred, start) and not hedged(pred, start, end, set())
    if gold_span is not None:
        if any(gold_span.contains(y) and clean(i, i + 1) for y, i in find_years(pred.words)):
            return True
        return any(s.within(gold_span) and clean(s.start, s.end) for s in find_spans(pred.words))
    return any(s.contains(gold_year) and clean(s.start, s.end) for s in find_spans(pred.words))


def date_conflict(pred: Tokens, refs: list[Tokens]) -> bool:
    """The prediction states a date in a gold date's year, to the month, that agrees with
    no gold date: "December 1968" is wrong for "November 8, 1968" even when another
    alias, "late 1968", shares its year. Only when every date alias gives the month: a
    bare-year alias ("1788") accepts any day in its year."""
    dates = [d for d in (as_date(t.words) for t in refs) if d]
    if not dates:
        return False
    found = find_dates(pred.words)
    if _wrong_day(found, dates):
        return True
    golds = [d for d in dates if d.year and d.month]
    if not golds or len(golds) < len(dates):
        return False
    years = {g.year for g in golds}
    stated = [d for d in found if d.year in years and d.month]
    return bool(stated) and not any(d.agrees_with(g) for d in stated for g in golds)


def _wrong_day(found: list[Date], golds: list[Date]) -> bool:
    """A full date in the month of a full gold date, on another day: "January 16, 2017" is
    wrong for "January 12, 2017", even when a coarser alias ("January 2017") would accept
    it. As for months, a bare-year alias ("2017") accepts any day in its year. (Both
    readings of "05/06/2017" are tried.)"""
    days = [g for g in golds if g.year and g.month and g.day]
    if not days or any(g.month is None for g in golds):
        return False
    stated = [d for d in found if d.year and d.month and d.day]
    in_month = [d for d in stated if any((g.year, g.month) == (d.year, d.month) for g in days)]
    return bool(in_month) and not any(d.agrees_with(g) for d in stated for g in days)
