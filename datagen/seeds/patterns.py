"""Sentence splitting and the prose patterns seed mining reads (dates, years, lead sentences)."""

from __future__ import annotations

import datetime as dt
import functools
import re

MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
_MONTH = "(?:" + "|".join(MONTH_NAMES) + ")"
# "16 July 1966", "July 16, 1966"
DATE = rf"(?:\d{{1,2}} {_MONTH} \d{{3,4}}|{_MONTH} \d{{1,2}}, \d{{3,4}})"
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_LEAD = re.compile(r"^(?P<subj>[^(),]{1,100}?)(?:\s*\((?P<paren>[^)]*)\)){0,2}"
                   r"(?:,[^,]{1,80}){0,3},?\s+"
                   r"(?P<verb>is|was|are|were)\s+(?P<np>(?:a|an|the)\s+[^;]{3,400}?)\.?$")
MAX_NP_WORDS = 18
_NP_BREAK = re.compile(r",\s|\s(?:that|which|who|whose|where|although|but)\s")
_NOUN_CUT = re.compile(r"\s(?:in|of|from|for|that|which|who|whose|with|by|based|located|"
                       r"known|best|and|at|on|published|founded|directed|written|"
                       r"released|born)\s|,|\s\(")
_NOUN_CUT_NO_AND = re.compile(_NOUN_CUT.pattern.replace("best|and|at", "best|at"))
PAREN_DATES = re.compile(rf"\((?:born\s+)?(?P<a>{DATE})(?:\s*[–-]\s*(?P<b>{DATE}))?\)")
YEAR_VERBS = {"founded": "founded_year", "established": "founded_year",
              "formed": "founded_year", "incorporated": "founded_year",
              "released": "released_year", "premiered": "released_year",
              "published": "published_year", "opened": "opened_year",
              "built": "built_year", "completed": "completed_year",
              "launched": "launched_year", "born": "born_year", "died": "died_year"}
_YEAR_VERB = re.compile(r"\b(?:was|were|is|has been)\s+(?:first\s+)?(?P<verb>"
                        + "|".join(YEAR_VERBS) + r")\s+in\s+(?P<year>1\d{3}|20\d{2})\b")
PRONOUNS = ("He ", "She ", "It ", "They ", "The film ", "The band ", "The company ",
            "The magazine ", "The album ", "The book ", "The novel ", "The city ", "The town ")


def sentences(text: str) -> list[str]:
    """Sentences of a text, whitespace squashed (line breaks also end a sentence)."""
    out = []
    for line in text.splitlines():
        for s in _SPLIT.split(" ".join(line.split())):
            if s:
                out.append(s)
    return out


def parse_date(text: str) -> str | None:
    """ISO form of '16 July 1966' or 'July 16, 1966'; None when it is not a date."""
    for fmt in ("%d %B %Y", "%B %d, %Y"):
        try:
            return dt.datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    return None


def lead(sentence: str, title: str) -> tuple[str, str, str] | None:
    """(noun phrase without article, head noun, verb) of a lead 'X is a/an/the Y' sentence
    whose subject is the page's title ('' for a head noun a question cannot use); None
    otherwise."""
    m = _LEAD.match(sentence)
    if not m or not (_same_subject(m.group("subj"), title)
                     or _known_as(sentence[m.end("subj"):m.start("verb")], title)):
        return None
    np = _shorten(re.sub(r"^(?:a|an|the)\s+", "", m.group("np")).strip().rstrip("."))
    head = _NOUN_CUT.split(" " + np + " ", maxsplit=1)[0].strip()
    if " " not in head and head[:1].isupper():  # 'Hungarian' of 'Hungarian and Austrian
        head = _NOUN_CUT_NO_AND.split(" " + np + " ", maxsplit=1)[0].strip()  # director
    if not head or len(head.split()) > 8:
        return None
    return np, head_noun(head, np), m.group("verb")


_HEAD_CUT = re.compile(r"\s+(?:during|between|in|of|from|with|by|for|at|on|who|which|that|"
                       r"whose|known|best|based|located)\b")


def head_noun(head: str, np: str) -> str:
    """The noun a question calls the entity by: cut before a preposition or relative ('English
    fighter pilot' of '... during the First World War'), a modifier shared over 'and' kept with
    the last noun ('American director' of 'American television and film director'); '' when
    what is left does not end in a common noun ('628 ft', 'the First World War')."""
    head = _HEAD_CUT.split(head, maxsplit=1)[0].strip()
    if " and " not in head and f" {head} and " in f" {np} ":
        rest = np.split(f"{head} and ", 1)[1]
        tail = _NOUN_CUT.split(" " + rest + " ", maxsplit=1)[0].strip().split()
        head = " ".join([w for w in head.split() if w[:1].isupper()] + tail[-1:]) or head
    last = head.split()[-1] if head else ""
    verb = len(last) > 5 and last.endswith("ed")   # 'launched', 'founded': no noun here
    return head if last.isalpha() and last.islower() and len(last) > 2 and not verb else ""


def _shorten(np: str) -> str:
    """A long noun phrase cut at its first clause break after four words (a description
    of a dozen words identifies as well as one of forty, and reads better)."""
    if len(np.split()) <= MAX_NP_WORDS:
        return np
    for m in _NP_BREAK.finditer(np):
        if 4 <= len(np[:m.start()].split()) <= MAX_NP_WORDS:
            return np[:m.start()]
    return np  # no clean break: a cut mid-phrase would leave 'of the National' behind


def _same_subject(subj: str, title: str) -> bool:
    subj = re.sub(r"^the\s+", "", subj.strip(), flags=re.I)
    title = re.sub(r"^the\s+", "", title.strip(), flags=re.I)
    s, t = subj.strip().lower(), re.sub(r"\s*\(.*\)$", "", title).strip().lower()
    return bool(t) and (s == t or s.startswith(t) or t.startswith(s) and len(s) > 3
                        or _full_name(s, t))


_HONOURS = re.compile(r"(?:,?\s+(?:obe|cbe|kbe|mbe|qc|kc|jr\.?|sr\.?))+$")


def _full_name(subj: str, title: str) -> bool:
    """A person's full name for the title's short one ('Paul Thomas Mann' for 'Thomas Mann',
    'Christopher James "Chris" Weidman', 'Eric Clifford Ambler OBE'): same last name, the
    title's first name among the given ones or as a nickname."""
    s, t = _HONOURS.sub("", subj).replace('"', " ").split(), title.split()
    return len(t) >= 2 and len(s) <= 6 and s[-1:] == t[-1:] and t[0] in s[:-1]


_OPENING_NAME = re.compile(r"^(?:[A-Z][\w.'-]*|\"[A-Z][\w.'-]*\")(?:\s+(?:[A-Z][\w.'-]*|"
                           r"\"[A-Z][\w.'-]*\"|de|van|von|der|la|le)){1,5}")


def full_name_at(text: str, title: str) -> str:
    """The subject's full name where a sentence opens with it ('Stephan Douglas Jenkins' of
    'Stephan Douglas Jenkins is an American musician' for Stephan Jenkins); '' otherwise."""
    m = _OPENING_NAME.match(text)
    while m:
        if _full_name(m.group(0).lower(), title.lower()):
            return m.group(0)
        m = _OPENING_NAME.match(m.group(0).rsplit(" ", 1)[0]) if " " in m.group(0) else None
    return ""


def _known_as(between: str, title: str) -> bool:
    """'X, better known as TITLE (born ...), is ...' / 'X, known by his stage name, TITLE, is'."""
    bare = re.sub(r"\s*\(.*\)$", "", title).strip()
    return bool(re.search(rf"\b(?:as|name,)\s+{re.escape(bare)}\b", between))


def about_subject(sentence: str, title: str) -> bool:
    """Does the sentence speak about the page's subject (by name or a leading pronoun)?"""
    bare = re.sub(r"\s*\(.*\)$", "", title).strip()
    return sentence.startswith(bare) or sentence.startswith(PRONOUNS)


def year_verb(sentence: str) -> tuple[str, int, str] | None:
    """(relation, year, verb) of 'X was founded in 1923' and the like."""
    m = _YEAR_VERB.search(sentence)
    if not m:
        return None
    return YEAR_VERBS[m.group("verb")], int(m.group("year")), m.group("verb")


# nationalities that people's lead sentences use and the verifiers' place demonyms lack
_MORE_DEMONYMS = {"Armenian": "Armenia", "Bangladeshi": "Bangladesh", "Bulgarian": "Bulgaria",
                  "Croatian": "Croatia", "Estonian": "Estonia", "Georgian": "Georgia",
                  "Ghanaian": "Ghana", "Icelandic": "Iceland", "Jamaican": "Jamaica",
                  "Latvian": "Latvia", "Lebanese": "Lebanon", "Lithuanian": "Lithuania",
                  "Nepali": "Nepal", "New Zealand": "New Zealand", "Romanian": "Romania",
                  "Serbian": "Serbia", "Singaporean": "Singapore", "Slovak": "Slovakia",
                  "Slovenian": "Slovenia", "Soviet": "Soviet Union", "Sri Lankan": "Sri Lanka",
                  "Taiwanese": "Taiwan", "Uruguayan": "Uruguay", "Venezuelan": "Venezuela",
                  "Yugoslav": "Yugoslavia"}
_CONTINENTAL = ("African", "Asian", "European", "North American", "South American",
                "Latin American")


@functools.cache
def nationalities() -> dict[str, str]:
    """Nationality adjective -> its country (an answer's alias: 'American' is also right as
    'United States'): the verifiers' place demonyms (one list for the judge and the
    composer), less the continental ones, and those it lacks. Loaded on first use."""
    from verifiers.places import DEMONYMS
    return {**{a: c for a, c in DEMONYMS.items() if a not in _CONTINENTAL}, **_MORE_DEMONYMS}


_LEAD_YEAR = re.compile(r"^(?:(?:a|an|the)\s+)?(1[5-9]\d{2}|20\d{2})\s+\S")
# a work's kind (its head noun's last word) -> the year relation its lead year is
WORK_YEARS = {**dict.fromkeys("film movie documentary album single song EP soundtrack "
                              "game sitcom musical opera".split(), "released_year"),
              **dict.fromkeys("novel book memoir poem collection comic manga magazine "
                              "newspaper".split(), "published_year")}
_PAREN_YEARS = re.compile(r"\((?:born\s+(?P<born>1\d{3}|20\d{2})|(?P<a>1\d{3})\s*[–-]\s*"
                          r"(?P<b>1\d{3}|20\d{2}))\)")


def demonym(np: str) -> str:
    """The nationality a lead noun phrase opens with ('American' of 'an American film
    director'); '' when it opens otherwise or with a mixed one ('British-American')."""
    known = nationalities()
    words = re.sub(r"^(?:a|an|the)\s+", "", np).split()
    two = " ".join(words[:2])
    return two if two in known else words[0] if words and words[0] in known else ""


def lead_year(np: str, head: str) -> tuple[str, int] | None:
    """(relation, year) of a work's lead ('a 2010 American documentary film'): the year it
    came out, by the kind of work its head noun names; None for other leads."""
    m = _LEAD_YEAR.match(np)
    relation = WORK_YEARS.get(head.split()[-1]) if m and head else None
    return (relation, int(m.group(1))) if relation else None


def paren_years(sentence: str) -> list[tuple[str, int]]:
    """[(born_year, y), (died_year, y)] of a lead's '(born 1976)' or '(1845–1915)'."""
    m = _PAREN_YEARS.search(sentence)
    if not m:
        return []
    if m.group("born"):
        return [("born_year", int(m.group("born")))]
    return [("born_year", int(m.group("a"))), ("died_year", int(m.group("b")))]
