"""Centuries and decades as spans of years, and the years a text states.

"the mid-10th century BCE" is the years 967–934 BC, "the 1990s" is 1990–1999;
"957 BCE" is the year -957. Years before the common era are negative, so a
span is always ``low <= high``. Works on canonical token streams (normalize.py),
where "10th" is already "10st", "BCE" is "bc" and "CE" is "ad".
"""

from __future__ import annotations

from dataclasses import dataclass

ERAS = frozenset({"bc", "ad"})
# Where in a century or decade a qualifier points: the first, middle or last part,
# overlapping so that a year near a border belongs to both neighbours.
_PARTS = {"early": (0.0, 0.4), "beginning": (0.0, 0.4), "start": (0.0, 0.4), "mid": (0.3, 0.7),
          "middle": (0.3, 0.7), "late": (0.6, 1.0), "end": (0.6, 1.0)}
_LEAD = frozenset({"in", "during", "the", "around", "about", "circa", "c", "approximately"})


@dataclass(frozen=True)
class Span:
    low: int
    high: int
    start: int  # token span in the stream
    end: int

    def contains(self, year: int) -> bool:
        return self.low <= year <= self.high

    def within(self, other: "Span") -> bool:
        return other.low <= self.low and self.high <= other.high


def _ordinal(tok: str) -> int | None:
    return int(tok[:-2]) if tok.endswith("st") and tok[:-2].isdigit() else None


def _decade(tok: str) -> int | None:
    return int(tok[:-1]) if tok.endswith("0s") and tok[:-1].isdigit() and len(tok) in (4, 5) else None


def find_spans(words: tuple[str, ...]) -> list[Span]:
    """Every century ("16st century", "2st century bc") and decade ("1990s") in ``words``."""
    out = []
    for i, w in enumerate(words):
        n, decade = _ordinal(w), _decade(w)
        if n and 0 < n <= 30 and words[i + 1:i + 2] == ("century",):
            end = i + 2
            bc = words[end:end + 1] == ("bc",)
            end += words[end:end + 1] in (("bc",), ("ad",))
            # The Nth century AD is the years (N-1)*100+1 .. N*100; BC counts backwards.
            low, high = ((-n * 100, -(n - 1) * 100 - 1) if bc else ((n - 1) * 100 + 1, n * 100))
        elif decade is not None:
            # "the 1800s" is usually the century; it also covers the decade 1800–1809.
            end, low, high = i + 1, decade, decade + (99 if decade % 100 == 0 else 9)
        else:
            continue
        start = i
        k = i - 1 - (i > 1 and words[i - 1] == "of")  # "the middle of the 1970s"
        part = _PARTS.get(words[k]) if k >= 0 else None
        if part:  # chronological order, so "early" is the low end also before the era
            start, size = k, high - low + 1
            low, high = low + round(part[0] * size), low + round(part[1] * size) - 1
        out.append(Span(low, high, start, end))
    return out


def find_years(words: tuple[str, ...]) -> list[tuple[int, int]]:
    """(year, token index) for each year stated: a 3–4 digit number up to 2200, or any
    whole number marked with an era ("957 bc" → -957, "ad 79" → 79)."""
    out = []
    for i, w in enumerate(words):
        if not w.isdigit():
            continue
        era = words[i + 1] if i + 1 < len(words) and words[i + 1] in ERAS else None
        era = era or ("ad" if i > 0 and words[i - 1] == "ad" else None)
        if era or (len(w) in (3, 4) and int(w) <= 2200):
            out.append((-int(w) if era == "bc" else int(w), i))
    return out


def as_span(words: tuple[str, ...]) -> Span | None:
    """The span ``words`` consist of (leading "in", "during", "around" … allowed), else None."""
    k = 0
    while k < len(words) and words[k] in _LEAD:
        k += 1
    spans = [s for s in find_spans(words) if s.start == k and s.end == len(words)]
    return spans[0] if spans else None


def as_year(words: tuple[str, ...]) -> int | None:
    """The year ``words`` consist of ("1524", "in 1524", "957 bc"), else None."""
    k = 0
    while k < len(words) and words[k] in _LEAD:
        k += 1
    rest = words[k:]
    years = find_years(rest)
    if len(years) == 1 and len(rest) <= 2 and all(w.isdigit() or w in ERAS for w in rest):
        return years[0][0]
    return None
