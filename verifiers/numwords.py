"""Numbers written in words or digits, with separators, magnitudes and ordinals."""

from __future__ import annotations

import re

UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
TENS = {w: 10 * (i + 2) for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
MAGNITUDES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9,
              "trillion": 10**12, "lakh": 10**5, "crore": 10**7, "mn": 10**6, "bn": 10**9}
ORDINALS = {w: i + 1 for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth".split())}
ORDINALS.update({w[:-1] + "ieth": v for w, v in TENS.items()})
ORDINALS.update({"hundredth": 100, "thousandth": 1000, "millionth": 10**6})
FRACTIONS = {"half": 0.5, "quarter": 0.25, "third": 1 / 3}
_DIGITS = re.compile(r"^\d+(?:[.,]\d+)*$")


def digits_value(token: str) -> float | None:
    """Value of a digit token: "1,234" → 1234, "2.5" → 2.5, "1,5" (decimal comma) → 1.5."""
    if not _DIGITS.match(token):
        return None
    groups = re.split(r"[.,]", token)
    seps = re.findall(r"[.,]", token)
    if not seps:
        return float(token)
    if all(len(g) == 3 for g in groups[1:]) and len(set(seps)) == 1 and (
            seps[0] == "," or len(seps) > 1):
        return float("".join(groups))  # thousands separators
    if len(seps) == 1:
        return float(token.replace(",", "."))
    last = token.rfind(seps[-1])
    return float(re.sub(r"[.,]", "", token[:last]) + "." + token[last + 1:])


def format_number(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return str(int(value))
    if abs(value) >= 1 and abs(value - round(value)) < 1e-9 * abs(value):
        return str(round(value))  # 4.1 * 10**6 is 4099999.9999999995 in binary floating point
    return f"{value:.6g}"


def parse_number_words(tokens: list[str], start: int) -> tuple[float | str, int]:
    """Parse a number (or ordinal) starting at ``tokens[start]``.

    Returns ``(value, n_tokens_used)``; ``n_tokens_used == 0`` when there is
    none. Ordinals come back as strings like ``"21st"``. Handles "twenty five",
    "one hundred and five", "2.5 million", "a million", "two and a half".

    >>> parse_number_words("two and a half million".split(), 0)
    (2500000.0, 5)
    """
    state = _NumberState()
    i, n = start, len(tokens)
    if i + 1 < n and tokens[i] in ("a", "an") and tokens[i + 1] in MAGNITUDES:
        state.current, state.last, i = 1.0, "unit", i + 1
    while i < n:
        tok, nxt = tokens[i], tokens[i + 1:i + 3]
        if tok in ORDINALS:
            return state.ordinal(tok, i + 1 - start)
        step = state.feed(tok, nxt)
        if step == 0:
            break
        i += step
    if state.last is None:
        return 0.0, 0
    while i > start and tokens[i - 1] == "and":
        i -= 1
    return state.total + state.current, i - start


class _NumberState:
    """Accumulator for a spelled-out number; ``last`` is the kind of the previous word."""

    def __init__(self) -> None:
        self.total, self.current, self.last = 0.0, 0.0, None

    def ordinal(self, tok: str, used: int) -> tuple[float | str, int]:
        value = ORDINALS[tok]
        if self.last is None:
            return f"{value}st", used
        if value >= 100:
            return f"{int((self.total + (self.current or 1)) * value)}st", used
        if self.last in ("tens", "hundred", "and", "magnitude") and value < 20:
            return f"{int(self.total + self.current + value)}st", used
        return self.total + self.current, used - 1

    def feed(self, tok: str, nxt: list[str]) -> int:
        """Consume ``tok``; return how many tokens were used (0: the number ended)."""
        last, digits = self.last, digits_value(tok)
        if digits is not None and last is None:
            self.current, self.last = digits, "digits"
        elif tok in TENS and last in (None, "hundred", "and", "magnitude"):
            self.current, self.last = self.current + TENS[tok], "tens"
        elif tok in UNITS and (last in (None, "hundred", "and", "magnitude") or
                               last == "tens" and UNITS[tok] < 10):
            self.current, self.last = self.current + UNITS[tok], "unit"
        elif tok in MAGNITUDES and last in ("unit", "tens", "digits", "hundred"):
            mag = MAGNITUDES[tok]
            if mag == 100:
                self.current, self.last = (self.current or 1) * 100, "hundred"
            else:
                self.total, self.current, self.last = self.total + self.current * mag, 0.0, "magnitude"
        elif tok == "and" and last in ("unit", "tens", "digits") and nxt[:1] in (["a"], ["one"]) \
                and nxt[1:] and nxt[1] in ("half", "quarter"):
            self.current, self.last = self.current + FRACTIONS[nxt[1]], "unit"
            return 3
        elif tok == "and" and last in ("hundred", "magnitude") and nxt and (
                nxt[0] in UNITS or nxt[0] in TENS):
            self.last = "and"
        else:
            return 0
        return 1
