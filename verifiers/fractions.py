"""Fractions and decimals across written forms: 3/4, \\frac{3}{4}, "three quarters", ¾, 0.75.

Every form is read as an exact value (:class:`fractions.Fraction`). Two exact forms
match when their values are equal. A decimal matches a fraction only as its rounding
to the digits it states (0.333 and 0.33 for 1/3, not 0.3), and not when the decimal is
itself a simple fraction (denominator up to :data:`SIMPLE`): "0.45" is 9/20, not 5/11
rounded, and "0.5" is 1/2, not 6/13. So no written form of a fraction with a
denominator up to 20 matches another such fraction (a decimal of three digits or
more keeps them apart: tests/verifiers/test_equivalence.py, property test).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction

from verifiers.numwords import ORDINALS, TENS, UNITS

SIMPLE = 20
_NUMERATORS = {**UNITS, **TENS, "a": 1, "an": 1}
_DENOMINATORS = {w: v for w, v in ORDINALS.items() if 3 <= v <= 100}
_DENOMINATORS.update({"half": 2, "halve": 2, "quarter": 4})
_VULGAR = "".join(ch for ch in "½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅐⅛⅜⅝⅞⅑⅒")

_LATEX = re.compile(r"\\[dt]?frac\s*(?:\{\s*(\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))")
_SLASH = re.compile(r"(?<![\d/.,])(?:(\d{1,3})\s+)?(\d{1,4})\s*[/⁄]\s*(\d{1,4})(?![\d/]|\.\d|,\d)")
# The whole part of a mixed number in words: "two and a half", "3 and three quarters".
_MIXED = re.compile(r"(?<![\w-])(\d+|" + "|".join(sorted(UNITS, key=len, reverse=True))
                    + r")\s+and\s+$", re.IGNORECASE)
_DECIMAL = re.compile(r"(?<![\d.,/])(-?\d*\.\d+)(?![\d.]|,\d|\s*(?:million|billion|trillion|"
                      r"thousand|hundred|mn|bn)\b)")
_WORDS = re.compile(r"\b(" + "|".join(sorted(_NUMERATORS, key=len, reverse=True)) + r")[\s-]+("
                    + "|".join(sorted(_DENOMINATORS, key=len, reverse=True)) + r")(?:s|es)?\b"
                    r"|(?<![\w-])(half)(?![\w-])", re.IGNORECASE)


# A cheap test before the full patterns: a digit next to "/" or ".", LaTeX, a vulgar
# fraction or a fraction word.
_ANY = re.compile(r"\d\s*[/⁄.]\s*\d|\.\d|frac|[" + _VULGAR + r"]|half|halves|quarter|th\b|ths\b"
                  r"|third", re.IGNORECASE)


_INTEGER = re.compile(r"^\s*-?\d{1,6}\s*$")


@dataclass(frozen=True)
class Value:
    value: Fraction
    digits: int | None  # decimals stated, for a decimal; None for an exact fraction form

    @property
    def is_decimal(self) -> bool:
        return self.digits is not None


@functools.lru_cache(maxsize=65536)
def values(text: str) -> tuple[Value, ...]:
    """Every fraction or decimal written in ``text``."""
    if not _ANY.search(text or ""):
        return ()
    out = [Value(Fraction(int(a or b), int(c or d)), None)
           for a, b, c, d in _LATEX.findall(text) if int(c or d)]
    plain = _LATEX.sub(" ", text)
    out += [Value(Fraction(int(w or 0)) + Fraction(int(a), int(b)), None)
            for w, a, b in _SLASH.findall(plain) if int(b)]
    for m in _WORDS.finditer(plain):
        if m.group(3):
            out.append(Value(Fraction(1, 2), None))
        else:
            den = _DENOMINATORS[m.group(2).lower()]
            whole = _MIXED.search(plain[:m.start()])
            base = Fraction(_whole(whole.group(1))) if whole else Fraction(0)
            out.append(Value(base + Fraction(_NUMERATORS[m.group(1).lower()], den), None))
    out += [Value(Fraction(unicodedata.numeric(ch)).limit_denominator(100), None)
            for ch in plain if ch in _VULGAR]
    out += [Value(Fraction(d), len(d.split(".")[1])) for d in _DECIMAL.findall(plain)]
    return tuple(out)


def _whole(word: str) -> int:
    return int(word) if word.isdigit() else UNITS[word.lower()]


def has_fraction_form(text: str) -> bool:
    return any(not v.is_decimal for v in values(text))


def same_value(a: Value, b: Value) -> bool:
    """Equal exact values, or a decimal that is the other's rounding (see module doc)."""
    if a.value == b.value:
        return True
    if a.is_decimal == b.is_decimal:
        return False  # two exact forms, or two decimals (other rules judge those)
    dec, exact = (a, b) if a.is_decimal else (b, a)
    if dec.value.limit_denominator(SIMPLE) == dec.value:
        return False  # "0.45" is 9/20 itself, not 5/11 rounded
    return abs(exact.value - dec.value) <= Fraction(1, 2 * 10 ** dec.digits)


def fraction_verdict(prediction: str, gold: str) -> bool | None:
    """True/False when the gold is a fraction or decimal and the prediction writes a
    fraction (or the gold a fraction and the prediction a decimal); None otherwise."""
    golds = values(gold)
    if not golds:
        if not _INTEGER.match(gold) or len(prediction.split()) > 3:
            return None
        preds = values(prediction)
        if any(not p.is_decimal for p in preds):
            return any(p.value == int(gold) for p in preds)  # "one half" is not 1, "2/2" is
        return None
    preds = values(prediction)
    if len(golds) != 1 or len(re.findall(r"[^\W\d_]+", _LATEX.sub(" ", gold))) > 4:
        return None
    gold_v = golds[0]
    if not preds and _INTEGER.match(prediction or ""):
        return gold_v.value == int(prediction)  # "1" is not 1/2 (nor a range 1–2)
    if not preds or all(p.is_decimal for p in preds) and gold_v.is_decimal:
        return None  # decimals on both sides: the number rules judge them
    return any(same_value(p, gold_v) for p in preds)
