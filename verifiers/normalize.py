"""Text normalisation for answer comparison.

Two levels:
- :func:`squad_normalize` is the SQuAD v1.1 normalisation (lower case, no
  punctuation, no articles, single spaces), used for the reported EM and F1.
- :func:`canonical_tokens` goes further, so that surface variants of the same
  answer become the same token sequence: accents folded (Röntgen → rontgen),
  number words and magnitudes as values ("two and a half million" →
  2500000), ordinals (first, 1st → 1st), upper-case Roman numerals
  (XLIX → 49), unit and honorific spellings, plural -s. Each token keeps the
  index of its clause so callers can reason about negation and hedging near a
  match.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from dataclasses import dataclass

from verifiers.numwords import TENS, UNITS, format_number, parse_number_words

ARTICLES = frozenset({"a", "an", "the"})
HONORIFICS = frozenset({
    "mr", "mrs", "ms", "miss", "dr", "prof", "professor", "sir", "dame", "lord", "lady",
    "rev", "reverend", "hon", "jr", "sr", "junior", "senior", "mx", "madam", "madame",
})
# Spelling variants that are the same word (British/American, abbreviations).
SYNONYMS = {
    "st": "saint", "mt": "mount", "ft": "fort", "km": "kilometre", "kilometer": "kilometre",
    "kms": "kilometre", "mi": "mile", "m": "metre", "meter": "metre", "cm": "centimetre",
    "centimeter": "centimetre", "mm": "millimetre", "millimeter": "millimetre", "kg": "kilogram",
    "kgs": "kilogram", "g": "gram", "lb": "pound", "lbs": "pound", "oz": "ounce", "sq": "square",
    "percent": "percent", "pct": "percent", "%": "percent", "usd": "dollar",
    "colour": "color", "centre": "center", "theatre": "theater", "favourite": "favorite",
    "honour": "honor", "labour": "labor", "defence": "defense", "organisation": "organization",
    "yr": "year", "yrs": "year", "hr": "hour", "hrs": "hour", "min": "minute", "mins": "minute",
    "bce": "bc", "ce": "ad", "sec": "second", "secs": "second", "liter": "litre",
    "liters": "litre", "vs": "versus", "v": "versus",
    "kbps": "kbit", "mbps": "mbit", "gbps": "gbit", "tbps": "tbit",  # per second: "/s" drops
    "ltd": "limited", "inc": "incorporated", "corp": "corporation", "co": "company",
    "celsius": "c", "centigrade": "c", "fahrenheit": "f", "kelvin": "k",  # as "°C" reads
}
_SCALES = frozenset({"c", "f", "k", "celsius", "centigrade", "fahrenheit", "kelvin"})
_ROMAN = re.compile(r"^M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_ORDINAL_SUFFIX = re.compile(r"^(\d+)(st|nd|rd|th)$")
# A minus sign counts only where it cannot be a hyphen or a range dash: "-40", "(−4)",
# but not "737-800" or "COVID-19".
_TOKEN = re.compile(r"\d+(?:st|nd|rd|th)\b|\d{3}0'?s\b|(?:(?<![\w.,])-)?\d+(?:[.,]\d+)*"
                    r"|[^\W\d_]+|[.;:!?]|[%$€£]|,")
CLAUSE_BREAK = frozenset({".", ";", ":", "!", "?", "but", "however", "although", "though",
                          "whereas", "while"})
CURRENCY = {"$": "dollar", "€": "euro", "£": "pound"}


_MOJIBAKE = re.compile("[ÃÂâ][\x80-\xbf\u0152-\u2122]")


def repair_mojibake(text: str) -> str:
    """Undo UTF-8 read as cp1252/latin-1 ("DÃ¡in" → "Dáin", "10â€“12" → "10–12")."""
    if not _MOJIBAKE.search(text):
        return text
    for codec in ("cp1252", "latin-1"):
        try:
            return text.encode(codec).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    return text


def strip_accents(text: str) -> str:
    """Fold accents and compatibility forms (ß → ss, ﬁ → fi): a stdlib unidecode for Latin text."""
    if text.isascii():
        return text
    text = repair_mojibake(text)
    text = unicodedata.normalize("NFKD", text.replace("ß", "ss").replace("ø", "o").replace("Ø", "O")
                                 .replace("æ", "ae").replace("Æ", "AE").replace("đ", "d")
                                 .replace("ł", "l").replace("Ł", "L"))
    return "".join(ch for ch in text if not unicodedata.combining(ch))


_NO_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLE = re.compile(r"\b(a|an|the)\b")


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 answer normalisation (plus accent folding)."""
    text = strip_accents(text or "").lower().translate(_NO_PUNCT)
    return " ".join(_ARTICLE.sub(" ", text).split())


def roman_to_int(token: str) -> int | None:
    """XLIX → 49. Only tokens with an I, V or X: "DC", "CD", "MD", "MM" are abbreviations far
    more often than 600, 400, 1500 and 2000."""
    if len(token) < 2 or not _ROMAN.match(token) or not set(token) & {"I", "V", "X"}:
        return None
    total = 0
    for ch, nxt in zip(token, token[1:] + " "):
        v = _ROMAN_VALUES[ch]
        total += -v if nxt != " " and _ROMAN_VALUES[nxt] > v else v
    return total


@dataclass(frozen=True)
class Tokens:
    """Canonical tokens with the clause each came from (for negation/hedging scope)."""

    words: tuple[str, ...]
    clauses: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.words)


# A lower-case word run straight into a capitalised one ("byJordan"), but not a
# name's inner capital ("McNulty", "iPhone"); letters run into citation digits.
_GLUED = re.compile(r"(?<=\b[a-z][a-z])(?=[A-Z][a-z])|(?<=[a-z]{3})(?=[A-Z][a-z])|(?<=[a-z]{2})(?=\d)")


# A year run into a footnote marker, as text copied from web pages with superscript
# citations reads: "released in 19731." is "in 1973" + note 1.
_YEAR_FOOTNOTE = re.compile(
    r"(\b(?:in|on|of|since|until|by|from|to|and|year|,) )((?:1[0-9]|20)\d\d)(\d{1,2})(?=[.,;:!?]|\s*$|\s+[A-Z])")


def unglue(text: str) -> str:
    """Restore spaces lost around hyperlinks and citation marks:
    "byJordan Fisher1" → "by Jordan Fisher 1"."""
    return _GLUED.sub(" ", _YEAR_FOOTNOTE.sub(r"\1\2 \3", text))


_YEAR_RANGE = re.compile(r"\b(1\d|20)(\d\d)\s*[-–—]\s*(\d\d)\b(?![-–—/.,]?\d)")


# A decimal split by a detokenizer ("3. 97 degrees", as model outputs tokenized for
# BLEU-style scoring read): a short number, a full stop, one space, digits.
_SPLIT_DECIMAL = re.compile(r"(?<![\d.,])(\d{1,3})\. (\d{1,3})\b(?![.,]\d)")


def _expand_year_ranges(text: str) -> str:
    """"1648–51" → "1648–1651": the second year of an abbreviated range keeps the century."""
    return _YEAR_RANGE.sub(lambda m: f"{m[1]}{m[2]}–{m[1]}{m[3]}", text)


# A word spelled out letter by letter ("P-A-D-A-W-A-N", three letters or more) and an
# abbreviation with full stops ("U.S.A.", "D.C."), written as one word so that they
# meet "Padawan", "USA" and "DC". Initials with spaces ("J. R. R.") stay apart.
_SPELLED = re.compile(r"\b(?:[^\W\d_](?:-[^\W\d_]){2,}\b|[A-Z]\.(?:[A-Z]\.)+|[A-Z](?:\.[A-Z])+\b)")


def _join_spelled(m: re.Match) -> str:
    return re.sub(r"[-.]", "", m.group())


def _raw_tokens(text: str) -> list[str]:
    text = _expand_year_ranges(unglue(strip_accents(text or "")))
    text = _SPLIT_DECIMAL.sub(r"\1.\2", text)
    text = _SPELLED.sub(_join_spelled, text)
    text = text.replace("&", " and ").replace("’", "'").replace("n't", " not").replace("−", "-")
    out = []
    for tok in _TOKEN.findall(text):
        value = roman_to_int(tok) if tok.isupper() else None
        out.append(str(value) if value is not None else tok)
    return [t if t in CURRENCY else t.lower() for t in out]


def _stem(word: str) -> str:
    if word[:1].isdigit():
        return word.replace("'", "")  # a decade ("1990s") is not the plural of a year
    word = SYNONYMS.get(word, word)
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
        if word.endswith("ie") and len(word) > 4:
            word = word[:-2] + "y"
    return SYNONYMS.get(word, word)


def yes_or_no(text: str) -> bool:
    """Is `text` a bare yes or no (a comparison's judgement, never a span of a page)?"""
    return canonical_tokens(text).words in (("yes",), ("no",))


@functools.lru_cache(maxsize=65536)
def canonical_tokens(text: str) -> Tokens:
    """Canonical token sequence of ``text`` (see module docstring).

    >>> canonical_tokens("Two and a half million dollars").words
    ('2500000', 'dollar')
    >>> canonical_tokens("Super Bowl XLIX, the first").words
    ('super', 'bowl', '49', '1st')
    """
    raw = _raw_tokens(text)
    words: list[str] = []
    clauses: list[int] = []
    clause, i = 0, 0
    while i < len(raw):
        tok = raw[i]
        if tok in CLAUSE_BREAK or tok == ",":  # commas separate items, not clauses
            clause += tok != ","
            i += 1
            continue
        out, used = _word_at(raw, i)
        words += out
        clauses += [clause] * len(out)
        i += used
    return Tokens(tuple(words), tuple(clauses))


def _word_at(raw: list[str], i: int) -> tuple[list[str], int]:
    """The canonical word(s) starting at ``raw[i]`` and how many raw tokens they used."""
    tok = raw[i]
    if tok in CURRENCY:  # "$5 billion" → 5000000000 dollar
        value, used = parse_number_words(raw, i + 1)
        return ([format_number(value), CURRENCY[tok]], 1 + used) if used else ([], 1)
    decade = _decade_words(raw, i)
    if decade:
        return decade
    value, used = parse_number_words(raw, i)
    if used:
        return [format_number(value)], used
    if tok == "per" and raw[i + 1:i + 2] == ["cent"]:
        return ["percent"], 2  # "25 per cent" is "25 percent", "25%"
    m = _ORDINAL_SUFFIX.match(tok)
    if m:
        tok = f"{int(m.group(1))}st"
    if tok in ("degree", "degrees") and raw[i + 1:i + 2] and raw[i + 1] in _SCALES:
        return [], 1  # "100 degrees Celsius" reads as "100 °C"
    if tok in ARTICLES or tok in HONORIFICS or tok == "'" or (tok == "s" and i > 0):
        return [], 1  # articles, titles, possessive 's
    return [_stem(tok)], 1


_TENS_PLURAL = {w[:-1] + "ies": v for w, v in TENS.items()}  # "nineties" -> 90
_CENTURY_WORDS = {w: v for w, v in UNITS.items() if v >= 10} | {"twenty": 20}
_DECADE_STARTS = frozenset(_TENS_PLURAL) | frozenset(_CENTURY_WORDS)


def _decade_words(raw: list[str], i: int) -> tuple[list[str], int] | None:
    """A decade or century in words: "the nineties", "the '90s", "the 90s" (read in the
    20th century, as they mostly are), "nineteen-nineties", "the nineteen hundreds"."""
    tok = raw[i]
    if tok not in _DECADE_STARTS and not (len(tok) == 2 and tok[1] == "0" and tok[0] in "23456789"):
        return None
    nxt = raw[i + 1] if i + 1 < len(raw) else ""
    after = i > 0 and raw[i - 1] in ("the", "'", "mid", "early", "late", "-")
    if tok in _TENS_PLURAL:
        return ([f"19{_TENS_PLURAL[tok]}s"], 1) if after else None
    if tok[0].isdigit():
        return ([f"19{tok}s"], 2) if nxt == "s" and after else None
    if tok in UNITS or tok == "twenty":
        century = _CENTURY_WORDS[tok]
        if nxt in _TENS_PLURAL:
            return [f"{century}{_TENS_PLURAL[nxt]}s"], 2
        if nxt == "hundreds":
            return [f"{century}00s"], 2
    return None


def content_words(tokens: Tokens | tuple[str, ...]) -> tuple[str, ...]:
    words = tokens.words if isinstance(tokens, Tokens) else tokens
    return tuple(w for w in words if w not in STOPWORDS)


STOPWORDS = frozenset("""
a an the of in on at to for by with from and or as is are was were be been being it its this that
these those there their they he she his her him them we you your i me my our who whom which what
when where why how do does did has have had not no yes into than then so such about over after
before also only just very more most some any all each other same own up down out off
""".split())
APPROXIMATORS = frozenset("""
from until till through between approximately about around roughly nearly almost circa
early late mid
under beneath below above over inside within behind near outside across along toward towards
upon onto into
""".split())
STOPWORDS = STOPWORDS | APPROXIMATORS


def same_stem(a: str, b: str) -> bool:
    """Crude morphological match: "himalayan"/"himalayas", "sharecropper"/"sharecropping".

    Words agree when they share a prefix of at least five letters and each has at
    most three letters beyond it (five beyond a prefix of seven: "maximize" /
    "maximization"); digits must match exactly.
    """
    if a == b:
        return True
    if a[:1].isdigit() or b[:1].isdigit():
        return False
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    # Derivational suffixes are longer ("maximize"/"maximization"): allowed after a
    # longer shared prefix.
    limit = 5 if n >= 7 else 3
    return n >= 5 and len(a) - n <= limit and len(b) - n <= limit
