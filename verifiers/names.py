"""Person names: the same person written with or without middle names or initials.

"Wilhelm Röntgen", "W. C. Röntgen" and "Röntgen" name the gold person
"Wilhelm Conrad Röntgen"; "Daniel Röntgen" is a different person who shares
the surname, and "Wilhelm Wien" one who shares the given name.
"""

from __future__ import annotations

import re

from verifiers.normalize import HONORIFICS, roman_to_int, strip_accents, unglue
from verifiers.numwords import ORDINALS

PARTICLES = frozenset({"de", "da", "di", "del", "della", "der", "van", "von", "la", "le", "du",
                       "bin", "ibn", "al", "el", "dos", "das", "y", "ben", "mac"})
TITLES = HONORIFICS | frozenset({
    "judge", "justice", "president", "senator", "governor", "general", "captain", "colonel",
    "king", "queen", "prince", "princess", "pope", "emperor", "chancellor", "minister", "chief",
    "father", "fr", "bishop", "cardinal", "rabbi", "imam", "sheikh", "brother", "sister",
})
# Common English hypocorisms whose short form is not a prefix of the full name.
NICKNAMES = {
    "dave": "david", "bill": "william", "billy": "william", "will": "william", "bob": "robert",
    "bobby": "robert", "rob": "robert", "jim": "james", "jimmy": "james", "mike": "michael",
    "dick": "richard", "rick": "richard", "jack": "john", "johnny": "john", "peggy": "margaret",
    "liz": "elizabeth", "beth": "elizabeth", "betty": "elizabeth", "kate": "katherine",
    "tony": "anthony", "ted": "edward", "ned": "edward", "harry": "henry", "hank": "henry",
    "chuck": "charles", "andy": "andrew", "larry": "lawrence", "jerry": "gerald",
    "sally": "sarah", "molly": "mary", "polly": "mary", "bert": "albert", "sandy": "alexander",
    "jenny": "jennifer", "sue": "susan", "tom": "thomas", "tommy": "thomas", "joe": "joseph",
    "steve": "stephen", "nick": "nicholas", "pat": "patrick", "greg": "gregory", "ben": "benjamin",
}
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*\.?")
_NEGATORS = {"not", "never", "no", "neither", "nor", "isn't", "wasn't", "unlike"}


def _words(text: str) -> list[str]:
    return _WORD.findall(unglue(strip_accents(text)))


def looks_like_name(text: str) -> bool:
    """2–5 capitalised words (particles allowed), no digits: a plausible personal name;
    or a title and a surname ("Justice Harlan")."""
    if any(ch.isdigit() for ch in text) or _NOT_A_PERSON.search(text.strip()):
        return False
    words = [w for w in _words(text) if w.lower().rstrip(".") not in TITLES]
    caps = [w for w in words if w[0].isupper()]
    rest = [w for w in words if not w[0].isupper()]
    enough = 2 <= len(caps) <= 5 or (len(caps) == 1 and _titled_surname(text))
    return enough and all(w.lower() in PARTICLES for w in rest)


# "The Senate", "The New World": a personal name takes no article.
_NOT_A_PERSON = re.compile(r"^(?:the|a|an)\s", re.IGNORECASE)
_SUFFIX = re.compile(r"^(?:II|III|IV|VI?|Jr|Sr)\.?$")


def _name_words(name: str) -> list[str]:
    """The name without titles and without a generational suffix ("Robert Adamson IV")."""
    words = [w for w in _words(name) if w.lower().rstrip(".") not in TITLES]
    while len(words) > 2 and _SUFFIX.match(words[-1]):
        words.pop()
    return words


def _titled_surname(text: str) -> bool:
    """A non-royal title before one capitalised name: "Justice Harlan", "Dr. Watson". (After
    a royal title the one name is a given name: see :func:`regnal_match`.)"""
    words = [w.lower().rstrip(".") for w in _words(text)]
    return len(words) == 2 and words[0] in TITLES and words[0] not in ROYAL_TITLES


def _given_matches(pred_given: list[str], gold_given: list[str]) -> bool:
    """The first given names agree (a name or its initial); middle names are optional.

    A prediction with no given name (surname only) is accepted.
    """
    if not pred_given or not gold_given:
        return True
    p = pred_given[0].rstrip(".").lower()
    p = NICKNAMES.get(p, p)
    # People often go by a middle name ("Greg Wise" for Matthew Gregory Wise), so the
    # prediction's first given name may match any gold given name: exactly, as an
    # initial, or as a short form that is a prefix (Pat / Patrick, Johnny / John).
    for g in (NICKNAMES.get(x.rstrip(".").lower(), x.rstrip(".").lower()) for x in gold_given):
        if p == g or (len(p) == 1 and g.startswith(p)) or (len(g) == 1 and p.startswith(g)) \
                or (min(len(p), len(g)) >= 3 and (g.startswith(p) or p.startswith(g))) \
                or _one_letter_inserted(p, g) or _pet_form(p, g):
            return True
    return False


def _pet_form(pet: str, full: str) -> bool:
    """A pet form made of the name's first four letters or more plus -y/-ie/-ey ("Dolly"
    for "Dollree", "Freddie" for "Frederick", "Kathy" for "Katherine"); shorter stems
    make other names ("Mary" / "Marion")."""
    for suffix in ("ie", "ey", "y"):
        if pet.endswith(suffix) and len(full) > len(pet) - len(suffix) + 1:
            stem = pet[:-len(suffix)]
            stems = {stem, stem[:-1]} if len(stem) > 1 and stem[-1] == stem[-2] else {stem}
            if any(len(x) >= 4 and full.startswith(x) and full != pet for x in stems):
                return True
    return False


def _one_letter_inserted(a: str, b: str) -> bool:
    """Transliteration and spelling variants of a given name: "Yevgenia" / "Evgenia",
    "Smiriti" / "Smriti", "Philip" / "Phillip". Not in the last two letters, where a
    letter makes another name ("Julian" / "Juliana"), and only for names of five
    letters or more."""
    short, long_ = sorted((a, b), key=len)
    if len(short) < 5 or len(long_) != len(short) + 1 or short[-2:] != long_[-2:]:
        return False
    return any(long_[:k] + long_[k + 1:] == short for k in range(len(long_) - 2))


def names_match(prediction: str, gold_name: str) -> bool:
    """Does ``prediction`` name the person ``gold_name`` (see module docstring)?"""
    gold = _name_words(gold_name)
    if len(gold) < 2 and not (gold and _titled_surname(gold_name)):
        return False
    surname, gold_given = gold[-1].lower(), [w for w in gold[:-1] if w.lower() not in PARTICLES]
    text = unglue(strip_accents(prediction))
    if not any(ch.isupper() for ch in text):
        text = text.title()  # an all-lower-case answer carries no case information
    spans = list(_WORD.finditer(text))
    words = [m.group() for m in spans]
    for j, w in enumerate(words):
        if not w[0].isupper() or not _surname_matches(w.lower().rstrip("."), surname):
            continue
        k = j
        while k > 0 and words[k - 1][0].isupper() and words[k - 1].lower().rstrip(".") not in TITLES:
            k -= 1
        pred_given = [x for x in words[k:j] if x.lower() not in PARTICLES]
        if k > 0 and words[k - 1].lower() in _NEGATORS:
            continue
        after = words[j + 1] if j + 1 < len(words) else ""
        joined = (j + 1 < len(words) and not w.endswith(".")
                  and not text[spans[j].end():spans[j + 1].start()].strip())
        if joined and after[:1].isupper() and after.lower().rstrip(".") not in PARTICLES | TITLES:
            continue  # "Röntgen Smith": the surname is someone's given name here
        if w.lower().rstrip(".") != surname and not (pred_given and gold_given):
            continue  # a transliterated surname needs the given name to confirm it
        if _given_matches(pred_given, gold_given):
            return True
    return False


def _surname_matches(pred: str, gold: str) -> bool:
    """Exact, one part of a double-barrelled surname (Somerville / Agnew-Somerville), or a
    transliteration variant (Dutt / Dutta): one letter added or changed at the end."""
    if pred == gold or ("-" in gold and pred in gold.split("-")):
        return True
    short, long_ = sorted((pred, gold), key=len)
    return len(short) >= 4 and len(long_) - len(short) <= 1 and long_.startswith(short[:-1])


ROYAL_TITLES = frozenset({
    "king", "queen", "prince", "princess", "emperor", "empress", "tsar", "czar", "tsarina",
    "sultan", "pope", "pharaoh", "duke", "duchess", "archduke", "saint", "st", "shah", "kaiser",
})
_ROMAN_NUMERAL = re.compile(r"^[IVXLC]+$")


def regnal_name(gold: str) -> tuple[str, str | None, bool] | None:
    """(name, numeral, needs_title) for a gold that names a monarch or saint by one given
    name with a title, a regnal number or a territorial designation: "Prince Henry",
    "Afonso IV of Portugal", "Charlotte of Mecklenburg-Strelitz". A bare "X of Y" may be
    no person at all ("Bank of America"), so then the prediction must give the title
    ("Queen Charlotte"). None for other golds."""
    words = [w.strip(",.") for w in _words(gold)]
    titled = bool(words) and words[0].lower() in ROYAL_TITLES
    rest = words[1:] if titled else words
    of = next((k for k, w in enumerate(rest) if w.lower() == "of"), len(rest))
    numeral = next((w for w in rest[:of] if _ROMAN_NUMERAL.match(w)), None)
    head = [w for w in rest[:of] if w.lower() != "the" and w != numeral]
    if len(head) != 1 or not head[0][0].isupper() or not (titled or numeral or of < len(rest)):
        return None
    return head[0].lower(), numeral, not (titled or numeral)


def regnal_match(prediction: str, gold: str) -> bool:
    """The prediction names the gold's monarch: the same given name with the same regnal
    number (none if the gold has none), with or without the title and designation
    ("Queen Charlotte" for "Charlotte of Mecklenburg-Strelitz", "Henry the Navigator"
    for "Prince Henry"); "Henry VIII" and "Henry Ford" are other people."""
    key = regnal_name(gold)
    if key is None:
        return False
    name, numeral, needs_title = key
    text = unglue(strip_accents(prediction))
    lower = not any(ch.isupper() for ch in text)
    tokens = re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*|\d+", text)
    for j, tok in enumerate(tokens):
        if tok.lower() != name or not (lower or tok[0].isupper()):
            continue
        before = tokens[j - 1].lower() if j > 0 else ""
        after = tokens[j + 1] if j + 1 < len(tokens) else ""
        if before in _NEGATORS or (needs_title and before not in ROYAL_TITLES):
            continue
        if j > 0 and tokens[j - 1][0].isupper() and not lower and before not in ROYAL_TITLES | TITLES:
            continue  # "Emily Charlotte": a middle name
        if after.lower() == "the" and j + 2 < len(tokens) and tokens[j + 2].lower() in ORDINALS:
            after = str(ORDINALS[tokens[j + 2].lower()])  # "Henry the Eighth"
        stated = after if _ROMAN_NUMERAL.match(after) or after.isdigit() else None
        if (stated or numeral) and _roman_value(stated or "") != _roman_value(numeral or ""):
            continue
        if stated is None and after[:1].isupper() and not lower and after.lower() not in ("of", "the"):
            continue  # "Henry Ford": a surname follows
        return True
    return False


def _roman_value(token: str) -> int | None:
    return int(token) if token.isdigit() else roman_to_int(token) if len(token) > 1 else (
        {"I": 1, "V": 5, "X": 10}.get(token))
