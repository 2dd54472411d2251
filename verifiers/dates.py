"""Dates in common formats, full or partial, found in canonical token streams.

A date is (year, month, day) with any part missing: "May 2018" is
(2018, 5, None), "18 May" is (None, 5, 18). Numeric forms such as 05/06/2018
are ambiguous between month-first and day-first; both readings are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

MONTH_NUMBERS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december"
    .split())}
MONTH_NUMBERS.update({m[:3]: v for m, v in list(MONTH_NUMBERS.items())})
MONTH_NUMBERS.update({"sept": 9})
MONTH_NUMBERS.pop("may", None)
MONTH_NUMBERS["may"] = 5
_AMBIGUOUS_MONTHS = {"mar", "may", "jun", "jan", "dec", "aug", "sep", "oct", "nov", "feb", "apr",
                     "jul"}


@dataclass(frozen=True)
class Date:
    year: int | None
    month: int | None
    day: int | None
    start: int  # token span in the stream
    end: int

    def agrees_with(self, gold: "Date") -> bool:
        """Consistent partial dates: parts both state are equal, and they share the year
        (or, when either lacks a year, the month and day). "2010" agrees with
        "25 December 2010"; "December 2011" does not."""
        pairs = ((gold.year, self.year), (gold.month, self.month), (gold.day, self.day))
        if any(g is not None and p is not None and g != p for g, p in pairs):
            return False
        if gold.year is not None and self.year is not None:
            return True
        return None not in (gold.month, self.month, gold.day, self.day)


def _day(tok: str) -> int | None:
    t = tok[:-2] if tok.endswith("st") and tok[:-2].isdigit() else tok
    return int(t) if t.isdigit() and 1 <= int(t) <= 31 else None


def _year(tok: str) -> int | None:
    return int(tok) if tok.isdigit() and len(tok) in (3, 4) and int(tok) <= 2200 else None


def _month(tok: str, allow_ambiguous: bool) -> int | None:
    if tok in MONTH_NUMBERS and (allow_ambiguous or tok not in _AMBIGUOUS_MONTHS or len(tok) > 3):
        return MONTH_NUMBERS[tok]
    return None


def find_dates(words: tuple[str, ...]) -> list[Date]:
    """Every date expression in a canonical token stream, longest reading first."""
    found: list[Date] = []
    i = 0
    while i < len(words):
        for reading in _readings(words, i):
            found.append(reading)
        longest = max((d.end for d in found if d.start == i), default=i + 1)
        i = max(longest, i + 1)
    return found


def _readings(w: tuple[str, ...], i: int) -> list[Date]:
    def at(k: int) -> str:
        return w[k] if 0 <= k < len(w) else ""

    out = []
    m = _month(at(i), True) if at(i) != "may" or _day(at(i + 1)) or _year(at(i + 1)) else None
    if m:  # May 18 2018 | May 2018 | May 18
        d, y = _day(at(i + 1)), _year(at(i + 2))
        if d and y:
            out.append(Date(y, m, d, i, i + 3))
        elif _year(at(i + 1)):
            out.append(Date(_year(at(i + 1)), m, None, i, i + 2))
        elif d:
            out.append(Date(None, m, d, i, i + 2))
    d = _day(at(i))
    if d:  # 18 May 2018 | 18 of May 2018 | 18 May
        k = i + 2 if at(i + 1) == "of" else i + 1
        m = _month(at(k), True)
        if m:
            y = _year(at(k + 1))
            out.append(Date(y, m, d, i, k + 2) if y else Date(None, m, d, i, k + 1))
    y = _year(at(i))
    if y and _numeric_month_day(at(i + 1), at(i + 2)):  # 2018 05 18 (ISO)
        out.append(Date(y, int(at(i + 1)), int(at(i + 2)), i, i + 3))
    if _year(at(i + 2)) and at(i).isdigit() and at(i + 1).isdigit():  # 5/18/2018, 18/5/2018
        a, b, yy = int(at(i)), int(at(i + 1)), int(at(i + 2))
        for mo, da in ((a, b), (b, a)):
            if 1 <= mo <= 12 and 1 <= da <= 31:
                out.append(Date(yy, mo, da, i, i + 3))
    if y and not out:
        out.append(Date(y, None, None, i, i + 1))
    return out


def _numeric_month_day(a: str, b: str) -> bool:
    return a.isdigit() and b.isdigit() and 1 <= int(a) <= 12 and 1 <= int(b) <= 31


def as_date(words: tuple[str, ...]) -> Date | None:
    """The date that ``words`` consist of entirely (an answer that is just a date), else None."""
    dates = [d for d in find_dates(words) if d.start == 0 and d.end == len(words)]
    return dates[0] if dates else None
