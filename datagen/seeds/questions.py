"""Seed questions: one fact each, worded from the relation's phrasings (no model).

A seed is a one-hop `Chain`: an `Ask` about a named entity ('When was Thiaburg founded?'),
the entity itself described by one fact ('Which city has a population of 52,314?'), or a
cloze of a sentence that names another page ('Ed Wood is a film directed by which
filmmaker?'). Which phrasing a fact gets is drawn from a generator keyed on the fact's
content and the run's seed, so the same pages and seed give the same seeds in any process.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from datagen.seeds import patterns, wording
from datagen.seeds.chain import Ask, Chain, Clause, Literal, Node
from datagen.seeds.patterns import nationalities
from datagen.seeds.records import ANSWER_TYPE_OF_KIND, Fact
from datagen.seeds.store import FactStore
from warehouse import content_id

# literal relations worth a 'which entity ...' seed (their values are near unique)
SELF_RELATIONS = ("born_on", "held_on", "population", "employees", "attendance", "area_km2",
                  "currency", "died_on")
_PRONOUN = re.compile(r"^(He|She|It|They|The (?:film|band|company|magazine|album|book|novel|"
                      r"city|town))\b")
_POSSESSIVE = re.compile(r"^(His|Her|Its|Their)\b")
_LIST_PAGE = re.compile(r"\b(?:filmography|discography|bibliography|videography)$|^List of ")


def with_slot(text: str, subject: str, slot: str = "{e}") -> str | None:
    """`text` with the subject's mention (its name, a leading pronoun, possessive or surname)
    made a slot; None when the text does not mention the subject."""
    if subject and subject in text:
        return text.replace(subject, slot, 1)
    full = patterns.full_name_at(text, subject)
    if full:
        return slot + text[len(full):]   # 'Stephan Douglas Jenkins is ...' on Stephan Jenkins
    if _LIST_PAGE.search(subject):
        return None   # 'She' on 'Shruti Haasan filmography' is the actress, not the list
    if _PRONOUN.match(text):
        return _PRONOUN.sub(slot, text, count=1)
    last = subject.split()[-1] if len(subject.split()) >= 2 else ""
    if last[:1].isupper() and re.match(re.escape(last) + r"\b(?!')", text):
        return slot + text[len(last):]  # 'Maslow was a professor' on Abraham Maslow's page
    if _POSSESSIVE.match(text):
        return _POSSESSIVE.sub(slot + "'s", text, count=1)
    return None


def bare(title: str) -> str:
    """A page title without its disambiguation: 'United (Marian Gold album)' -> 'United'."""
    return re.sub(r"\s*\([^()]*\)$", "", title).strip() or title


@dataclass
class Seed:
    chain: Chain
    fact: Fact
    source: str          # infobox | link | prose


def fact_rng(seed: int, fact: Fact, salt: str = "") -> random.Random:
    """A generator keyed on the fact's content (never its URL: a served site's port varies)."""
    return random.Random(content_id(seed, fact.subject, fact.relation, fact.value, salt))


def make_seeds(store: FactStore, seed: int = 0) -> list[Seed]:
    """Seed chains for every fact that can be asked about, in fact order."""
    out: list[Seed] = []
    for f in store.facts:
        rng = fact_rng(seed, f)
        made = _seed(f, store, rng)
        if made is not None:
            out.append(Seed(made, f, f.source))
        if f.relation in SELF_RELATIONS:
            described = _self_seed(f, store, fact_rng(seed, f, "self"))
            if described is not None:
                out.append(Seed(described, f, f.source))
        if f.relation == "is_a" and f.subject_url not in store.structured:
            described = is_a_seed(f, store, rng)
            if described is not None:
                out.append(Seed(described, f, f.source))
    return out


def _seed(f: Fact, store: FactStore, rng: random.Random) -> Chain | None:
    if f.relation == "link":
        return link_seed(f, store, rng) if f.source == "link" else None
    templates = wording.templates_for(f.relation, prose=f.source == "prose")
    if not templates:
        return None
    root = Node(bare(f.subject), f.subject_url, _without(store.noun(f.subject_url), f.value))
    noun = store.noun(f.object_url)
    usable = [t for t in templates if noun or "{an}" not in t]
    if not usable:  # every wording names the answer's kind, and its page was not crawled
        return None
    country = nationalities().get(f.value, "") if f.relation == "nationality" else ""
    ask = Ask(f.relation, rng.choice(usable), f.value, ANSWER_TYPE_OF_KIND[f.value_type],
              f.evidence, f.object_url, aliases=(country,) if country else (), answer_noun=noun,
              verb=wording.YEAR_VERB_RELATIONS.get(f.relation, ""))
    return Chain(ask, root)


def _without(noun: str, value: str) -> str:
    """The entity's noun without the answer in it: 'film director', not 'American film
    director', when the question asks for its nationality ('2010 film' likewise for a year)."""
    words = [w for w in noun.split() if w != value]
    return " ".join(words) if len(words) < len(noun.split()) else noun


def literal_of(f: Fact) -> Literal:
    return Literal(f.value, f.value_type, f.typed)


def _self_seed(f: Fact, store: FactStore, rng: random.Random) -> Chain | None:
    templates = wording.clause_templates(f.relation, "out")
    noun = store.noun(f.subject_url)
    if not templates or not noun:
        return None
    clause = Clause(f.relation, "out", literal_of(f), rng.choice(templates), f.evidence,
                    f.subject_url)
    root = Node(bare(f.subject), f.subject_url, noun, [clause])
    ask = Ask("self", rng.choice(wording.ASKS["self"]), bare(f.subject), "entity", f.evidence,
              f.subject_url, answer_noun=noun)
    return Chain(ask, root)


def is_a_clause(f: Fact, store: FactStore) -> Clause:
    """The lead sentence's noun phrase as a clause; a stored page it names becomes a node
    (so a later INJECT can describe it in turn)."""
    np = f.value
    for link in store.by_subject.get(f.subject_url, []):
        if link.source == "link" and link.object_url and re.search(
                r"(?<!\w)" + re.escape(link.value) + r"(?!\w)", np):
            template = np.replace(link.value, "{v}", 1)
            target = Node(bare(link.value), link.object_url, store.noun(link.object_url))
            return Clause("is_a", "out", target, template, f.evidence, f.subject_url)
    named = store.title_in(np, exclude=f.subject_url)   # a stored page named without a link
    if named:
        title, url = named
        target = Node(title, url, store.noun(url))
        return Clause("is_a", "out", target, np.replace(title, "{v}", 1), f.evidence,
                      f.subject_url)
    return Clause("is_a", "out", Literal(np, "string"), "{v}", f.evidence, f.subject_url)


def is_a_seed(f: Fact, store: FactStore, rng: random.Random) -> Chain | None:
    """'What is the name of the American literary periodical published in Philadelphia?'"""
    if len(f.value.split()) < 3:
        return None  # 'a city', 'an actor': never unique
    root = Node(bare(f.subject), f.subject_url, "", [is_a_clause(f, store)])
    ask = Ask("self", rng.choice(wording.ASKS["self"]), bare(f.subject), "entity", f.evidence,
              f.subject_url)
    return Chain(ask, root)


def _surname(name: str) -> str:
    """The last word of a person's name, when it is a name ('Lincoln'); '' otherwise."""
    words = name.split()
    last = words[-1] if len(words) >= 2 else ""
    return last if last[:1].isupper() and len(last) > 2 and last.isalpha() else ""


def link_seed(f: Fact, store: FactStore, rng: random.Random) -> Chain | None:
    """A cloze of the sentence: the linked name becomes the question phrase, the subject's
    mention becomes the slot {e} that INJECT can describe."""
    s = f.sentence.rstrip(" .!")
    at = s.find(f.value)
    if at < 0 or s.count(f.value) > 1 or "{" in s or "}" in s:
        return None
    subject = bare(f.subject)
    text = s[:at] + "\x00" + s[at + len(f.value):]
    slotted = with_slot(text, subject)
    if slotted is None and store.facts_of(f.subject_url, "born_on"):
        slotted = with_slot(text, _surname(subject))   # 'Lincoln' on Abraham Lincoln's page
    if slotted is None:
        return None
    before, after = slotted.split("\x00")
    noun = store.noun(f.object_url)
    noun = noun[:1].lower() + noun[1:] if noun[:2].istitle() and " " not in noun else noun
    wh_word = "whom" if store.facts_of(f.object_url or "", "born_on") else "what"
    template = rng.choice([t for t in wording.ASKS["link"] if noun or "{an}" not in t
                           and "cloze_which" not in t])
    cloze = {"cloze_which": f"{before}which {noun}{after}", "cloze_wh": f"{before}{wh_word}{after}",
             "cloze_blank": f"{before}___{after}"}
    key = template.strip("{}?").split("}")[0]
    text = (cloze[key] + "?" if key in cloze else
            template.replace("{cloze_blank}", cloze["cloze_blank"]).replace("{an}", noun))
    root = Node(subject, f.subject_url, store.noun(f.subject_url))
    ask = Ask("link", text, f.value, "entity", f.evidence, f.object_url, answer_noun=noun)
    return Chain(ask, root)
