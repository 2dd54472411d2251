"""Facts from stored pages, each with a verbatim quote of the page's stored text.

Three sources: infobox tables (`datagen.demo_world.read_infobox`; on demo pages each label
names a relation), sentences that name another stored page (`pages.links`), and prose
patterns (the lead 'X is a Y' sentence, dates in parentheses, 'was founded in 1923').
A fact whose value no sentence of the stored text states verbatim is dropped and counted.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from typing import Iterable
from urllib.parse import urljoin

from datagen.seeds import patterns
from datagen.seeds.records import Fact, Page
from warehouse import Evidence

log = logging.getLogger(__name__)

MAX_QUOTE_WORDS = 60
LEAD_WINDOW = 10   # the lead sentence is among the first few (after a title or a banner line)


def mine_pages(pages: Iterable[Page], counts: Counter | None = None) -> list[Fact]:
    """Every fact of every page, in page order; `counts` gathers dropped facts by reason."""
    pages = list(pages)
    counts = counts if counts is not None else Counter()
    titles = {p.url: p.title for p in pages}
    facts: list[Fact] = []
    for page in pages:
        found = mine_page(page, titles, counts)
        if not found:
            counts["page_without_facts"] += 1
        facts.extend(found)
    return facts


def mine_page(page: Page, titles: dict[str, str], counts: Counter) -> list[Fact]:
    """The facts of one page: infobox rows, then prose patterns, then link sentences."""
    sents = _candidate_sentences(page)
    squashed = " ".join(page.text.split())
    facts = _infobox_facts(page, sents, squashed, counts)
    facts += _prose_facts(page, sents, {f.relation for f in facts})
    if not any(f.source == "infobox" for f in facts):
        facts += _link_facts(page, sents, titles)
    seen, out = set(), []
    for f in facts:
        if f.key not in seen:
            seen.add(f.key)
            out.append(f)
    return out


def _candidate_sentences(page: Page) -> list[str]:
    """Sentences of the page's paragraphs (from its HTML where stored, else its text) that
    occur verbatim, up to whitespace, in the stored text."""
    squashed = " ".join(page.text.split())
    found = patterns.sentences(page.text)
    if page.html and "<p" in page.html:
        found = _paragraph_sentences(page.html) + found
    out, seen = [], set()
    for s in found:
        if s not in seen and s in squashed and len(s.split()) <= MAX_QUOTE_WORDS:
            seen.add(s)
            out.append(s)
    return out


def _paragraph_sentences(html: str) -> list[str]:
    import lxml.html
    try:
        tree = lxml.html.fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return []
    out = []
    for p in tree.iter("p"):
        out.extend(patterns.sentences(p.text_content()))
    return out


def _word_in(value: str, sentence: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(value) + r"(?!\w)", sentence) is not None


def quote_for(title: str, value: str, sents: list[str]) -> str | None:
    """The shortest sentence stating `value`, preferring one that names the subject."""
    hits = [s for s in sents if _word_in(value, s)]
    named = [s for s in hits if title in s]
    pool = named or hits
    return min(pool, key=len) if pool else None


def _infobox_facts(page: Page, sents: list[str], squashed: str, counts: Counter) -> list[Fact]:
    if not page.html or "infobox" not in page.html:
        return []
    from datagen.demo_world import RELATIONS, read_infobox
    _, rows = read_infobox(page.html)
    facts = []
    for row in rows:
        if row.relation is None or not row.value:
            continue
        vtype = RELATIONS[row.relation][1]
        quote = quote_for(page.title, row.value, sents) or _row_quote(row, squashed)
        if quote is None:
            counts["no_verbatim_quote"] += 1
            continue
        facts.append(Fact(page.title, page.url, row.relation, row.value, vtype,
                          Evidence(page.url, quote), "infobox",
                          urljoin(page.url, row.href) if row.href else None,
                          typed_value(row.value, vtype)))
    return facts


def _row_quote(row, squashed: str) -> str | None:
    """The infobox row as it stands in the stored text ('Capital | Kiarport')."""
    m = re.search(re.escape(row.label) + r"[\s|:]{1,6}" + re.escape(row.value), squashed)
    return m.group(0) if m else None


def typed_value(value: str, vtype: str) -> int | str | None:
    if vtype in ("year", "number"):
        digits = value.replace(",", "")
        return int(digits) if digits.isdigit() else None
    if vtype == "date":
        return patterns.parse_date(value)
    return None


def _prose_facts(page: Page, sents: list[str], have: set[str]) -> list[Fact]:
    facts: list[Fact] = []
    if sents:
        first = next((s for s in sents[:LEAD_WINDOW] if patterns.lead(s, page.title)), None)
        if first:
            facts += _lead_facts(page, first)
    for s in sents[:40]:
        if not patterns.about_subject(s, page.title):
            continue
        facts += _date_facts(page, s, have)
        found = patterns.year_verb(s)
        if found and found[0] not in have and not _a_person(facts):
            rel, year, _ = found
            facts.append(Fact(page.title, page.url, rel, str(year), "year",
                              Evidence(page.url, s), "prose", typed=year))
    return facts


_LIFE = frozenset({"born_on", "born_year", "died_on", "died_year"})


def _a_person(facts: list[Fact]) -> bool:
    """A page with a birth or death: 'She wrote a memoir, which was published in 1949' on
    Maria von Trapp's page dates her book, not her (no one is published, founded or built)."""
    return any(f.relation in _LIFE for f in facts)


def _lead_facts(page: Page, first: str) -> list[Fact]:
    """The lead sentence's facts: what the subject is, and what it states in passing: a
    person's years ('(born 1976)', '(1845–1915)') and nationality ('an American actor'),
    the year a work came out ('a 2010 documentary film')."""
    np, head, _ = patterns.lead(first, page.title)
    ev = Evidence(page.url, first)
    facts = [Fact(page.title, page.url, "is_a", np, "string", ev, "prose")]
    years = [] if patterns.PAREN_DATES.search(first) else patterns.paren_years(first)
    facts += [Fact(page.title, page.url, rel, str(y), "year", ev, "prose", typed=y)
              for rel, y in years]
    person = bool(years or patterns.PAREN_DATES.search(first))
    nationality = patterns.demonym(np) if person else ""
    if nationality:
        facts.append(Fact(page.title, page.url, "nationality", nationality, "string", ev,
                          "prose"))
    work = patterns.lead_year(np, head)
    if work:
        facts.append(Fact(page.title, page.url, work[0], str(work[1]), "year", ev, "prose",
                          typed=work[1]))
    return facts


def _date_facts(page: Page, s: str, have: set[str]) -> list[Fact]:
    m = patterns.PAREN_DATES.search(s)
    if not m or "born_on" in have:
        return []
    out = []
    for rel, group in (("born_on", "a"), ("died_on", "b")):
        value = m.group(group)
        iso = patterns.parse_date(value) if value else None
        if iso:
            out.append(Fact(page.title, page.url, rel, value, "date", Evidence(page.url, s),
                            "prose", typed=iso))
    return out


def _link_facts(page: Page, sents: list[str], titles: dict[str, str]) -> list[Fact]:
    """One fact per linked stored page: the first sentence naming it; source 'list' when the
    name is one item of an enumeration (a cloze of it describes the item, given the others
    named, but asks for it make poor seeds)."""
    facts, done = [], set()
    wrong = _other_gender(page.text)
    for url, anchor in page.links:
        target = titles.get(url)
        if not target or url == page.url or url in done:
            continue
        for s in sents:
            name = target if _word_in(target, s) else anchor if anchor and _word_in(anchor, s) else None
            if not name or len(s.split()) < len(name.split()) + 3 or s.startswith(wrong) \
                    or name in _CALENDAR or name.lower() in _FUNCTION_WORDS \
                    or _inside_a_title(name, s):
                continue  # a bare list item (an index page), 'She' on a man's page, a title
                #   that is a month ('December') or a word ('To'), or part of a quoted title
                #   ('Ride' in the album "Enjoy the Ride")
            if _whole_name(name, s) and not _another_work(target, name, s):
                done.add(url)
                listed = _in_list(name, s, titles.values())
                facts.append(Fact(page.title, page.url, "link" if listed else
                                  _role(name, s, page.title), name, "entity",
                                  Evidence(page.url, s), "list" if listed else "link", url,
                                  sentence=s))
                break
    return facts


_ROLE = re.compile(r"\b(?P<verb>directed|written|produced|created|founded|composed|developed|"
                   r"published|designed)\s+by\s+$|\b(?P<work>novel|book|poem|play|memoir|"
                   r"biography)\s+by\s+$")
_WORKS = {"film", "album", "song", "single", "novel", "book", "play", "TV series", "musical",
          "soundtrack", "magazine", "EP", "poem", "opera"}


def _role(name: str, sentence: str, title: str) -> str:
    """The relation a sentence about the page's subject states between it and the page it
    names, where its words say which and the name stands alone ('directed by ___' ->
    directed_by, 'a novel by ___' -> written_by); 'link' otherwise."""
    at = sentence.find(name)
    after = sentence[at + len(name):]
    m = _ROLE.search(sentence[:at])
    alone = not re.match(r"\s*(?:,\s*[A-Z]|and\s+[A-Z\"]|&)", after) and not re.search(r"\band\s+\w+$|,\s*\w+$",
                                                                       sentence[:m.start()]
                                                                       if m else "")
    relative = m and re.search(r"\b(?:which|who|whose|that)\b[^,]*$", sentence[:m.start()])
    if not m or not alone or relative or sentence.startswith("It ") \
            or not patterns.about_subject(sentence, title):
        return "link"   # '..., which was created by ___' is about the thing before 'which';
        #   'It was produced by ___' on a band's page is about its album
    return f"{m.group('verb')}_by" if m.group("verb") else "written_by"


def _another_work(target: str, name: str, sentence: str) -> bool:
    """A page on a work ('Waste Land (film)') named by its bare title ('Waste Land') outside
    quotes, or in a sentence about another kind of work ('her Broadway debut in "Chicago"'
    for 'Chicago (2002 film)'): more often another work or a place of that name."""
    kind = re.search(r"\(([^()]*)\)$", target)
    words = kind.group(1).split() if kind else []
    if not words or not (words[-1] in _WORKS or " ".join(words[-2:]) in _WORKS):
        return False
    other = _OTHER_KINDS.get(words[-1], ())
    clash = words[-1] not in sentence and any(w in sentence for w in other)
    return (f'"{name}"' not in sentence and name != target) or clash


_OTHER_KINDS = {"film": ("Broadway", "musical", "stage", "novel", "song", "album", "play "),
                "album": ("film", "novel", "Broadway"), "song": ("film", "novel", "Broadway"),
                "novel": ("film", "album", "song", "Broadway")}


_CALENDAR = frozenset(patterns.MONTH_NAMES + "Monday Tuesday Wednesday Thursday Friday "
                                              "Saturday Sunday".split())


_FUNCTION_WORDS = frozenset("a an the to in on at of by for from with as it he she they we you i "
                            "this that these those and or but if so no yes all one two up".split())


def _inside_a_title(name: str, sentence: str) -> bool:
    """Is the first mention of `name` part of a longer quoted title ("Enjoy the Ride")?"""
    at = sentence.find(name)
    for m in re.finditer(r'"([^"]+)"', sentence):
        if m.start(1) <= at < m.end(1):
            return m.group(1).strip() != name
    return False


def _other_gender(text: str) -> tuple[str, ...]:
    """Leading pronouns that cannot mean the page's subject (by the pronouns the page uses
    most), so 'She was given in marriage to ...' on a man's page is not read as his."""
    low = f" {text.lower()} "
    he = low.count(" he ") + low.count(" his ")
    she = low.count(" she ") + low.count(" her ")
    return ("She ", "Her ") if he > 2 * she else ("He ", "His ") if she > 2 * he else ()


def _whole_name(name: str, sentence: str) -> bool:
    """'Maria' in 'Maria Barbara Bach', 'United' in 'United States', 'World Soccer' in 'World
    Soccer: Winning Eleven' or 'Wonder Boy' in 'Mohammed "Wonder Boy" Shahid' is part of a
    longer name, not a mention of the page 'Maria'."""
    at = sentence.find(name)
    after = sentence[at + len(name):].lstrip(" ")
    before = sentence[:at].rstrip(" ").split(" ")[-1] if sentence[:at].strip() else ""
    nickname = re.search(r"[A-Z]\w+ \"$", sentence[:at]) and re.match(r"\" [A-Z]",
                                                                      sentence[at + len(name):])
    return not (after[:1].isupper() and sentence[at + len(name):at + len(name) + 1] == " ") and \
        not (before[:1].isupper() and before[-1:].isalpha() and sentence[:at].endswith(" ")) \
        and not re.match(r": [A-Z]", sentence[at + len(name):]) and not nickname


def _in_list(name: str, sentence: str, all_titles: Iterable[str]) -> bool:
    """Is `name` one item of an enumeration ('A, B and C') of names? Its answer is not unique."""
    at = sentence.find(name)
    around = sentence[max(0, at - 5):at] + "|" + sentence[at + len(name):at + len(name) + 7]
    return bool(re.search(r",\s*\||\|\s*,|\band\s*\||\|\s*(?:and|or)\s+[A-Z\"]", around))
