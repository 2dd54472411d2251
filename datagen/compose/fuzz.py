"""Blurred forms of a literal (FUZZ): a year into a decade or part of one, a date into its
month, season or year, a number into a range or a rounded figure. Each form carries the
bounds it allows, so the fact store can tell whether the answer stays unique."""

from __future__ import annotations

import calendar
import datetime as dt

from datagen.seeds.chain import Literal
from datagen.seeds.patterns import MONTH_NAMES

_SEASONS = (("spring", 3, 5), ("summer", 6, 8), ("autumn", 9, 11))


def forms(lit: Literal) -> list[tuple[str, str, object, object]]:
    """(fuzzed text, kind, lo, hi) for a literal; [] when it cannot be blurred."""
    if lit.fuzzed or lit.typed is None:
        return []
    if lit.value_type == "year":
        return year_forms(int(lit.typed))
    if lit.value_type == "date":
        return date_forms(str(lit.typed))
    if lit.value_type == "number":
        return number_forms(int(lit.typed))
    return []


def year_forms(y: int) -> list[tuple[str, str, object, object]]:
    decade = y - y % 10
    part, lo, hi = (("early", 0, 3) if y % 10 <= 3 else ("mid", 4, 6) if y % 10 <= 6
                    else ("late", 7, 9))
    return [(f"the {decade}s", "decade", decade, decade + 9),
            (f"the {part}-{decade}s" if part == "mid" else f"the {part} {decade}s",
             "part_of_decade", decade + lo, decade + hi)]


def date_forms(iso: str) -> list[tuple[str, str, object, object]]:
    d = dt.date.fromisoformat(iso)
    last = calendar.monthrange(d.year, d.month)[1]
    month = MONTH_NAMES[d.month - 1]
    out = [(f"{month} {d.year}", "month", dt.date(d.year, d.month, 1).isoformat(),
            dt.date(d.year, d.month, last).isoformat())]
    for name, first, end in _SEASONS:
        if first <= d.month <= end:
            out.append((f"the {name} of {d.year}", "season",
                        dt.date(d.year, first, 1).isoformat(),
                        dt.date(d.year, end, calendar.monthrange(d.year, end)[1]).isoformat()))
    out.append((str(d.year), "year", f"{d.year}-01-01", f"{d.year}-12-31"))
    return out


def number_forms(n: int) -> list[tuple[str, str, object, object]]:
    if n < 20:
        return []
    step = 10 ** (len(str(n)) - 1)
    lo = n - n % step
    out = [(f"between {lo:,} and {lo + step:,}", "range", lo, lo + step)]
    unit = step // 10 if step >= 100 else step
    if unit > 1:
        rounded = round(n / unit) * unit
        out.append((f"about {rounded:,}", "about", rounded - unit // 2, rounded + unit // 2))
    return out
