"""Candidate steps (INJECT, FUZZ) for a chain, and applying one to a copy of the chain."""

from __future__ import annotations

import random
import re

from datagen.compose import fuzz
from datagen.compose.backend import StepOption
from datagen.seeds import wording
from datagen.seeds.chain import Chain, Clause, Literal, Node, clone
from datagen.seeds.questions import bare, is_a_clause, literal_of, with_slot
from datagen.seeds.records import Fact
from datagen.seeds.store import FactStore

# literal relations that never identify an entity (shared by many)
_WEAK = {"occupation", "org_type", "work_type", "event_type", "genre"}


def literal_clauses(chain: Chain) -> list[Clause]:
    return [c for _, c in chain.clauses() if isinstance(c.value, Literal)]


def chain_urls(chain: Chain) -> set[str]:
    urls = {chain.root.url}
    for node, c in chain.clauses():
        urls.add(node.url)
        if isinstance(c.value, Node):
            urls.add(c.value.url)
    return urls | {chain.ask.answer_url or ""}


def inject_options(chain: Chain, store: FactStore, index: dict[tuple, int],
                   rng: random.Random) -> list[StepOption]:
    """Every fact that could describe a named entity of the chain, in a seeded order: from a
    page the chain already quotes (obfuscation), or a bridge: a sentence of another page
    that names the entity, whose own page the chain quotes (that page is the next hop)."""
    used, out = chain_urls(chain), []
    evidence = chain.evidence()
    pages, quotes = {e.url for e in evidence}, {e.quote for e in evidence}
    quoted = {id(c.value) for _, c in chain.clauses() if c.relation == "link"}
    for target, node in enumerate(chain.named_nodes()):
        if id(node) in quoted:
            continue   # the name in a quoted sentence: described there, it would not read
        for f, direction in _facts_about(node.url, store):
            other = f.object_url if direction == "out" else f.subject_url
            if other in used or f.value == chain.ask.answer or f.subject == chain.ask.answer \
                    or (f.evidence.quote in quotes and not _lead_of_ask(f, chain)):
                continue
            bridged = direction == "in" and node.url in pages
            if f.evidence.url not in pages and not bridged:
                continue  # a page no earlier page names: found by search, not by a bridge
            if bridged and (_born_after(store, node.url, f.subject_url)
                            or kind_clash(store.noun(node.url), f.evidence.quote)):
                continue  # a namesake (the person born 1954 did not direct a 1958 film), or
                #   a page of another work of that title (the film 'Chicago' for the show)
            templates = _templates(f, direction, store.noun(f.subject_url))
            if not templates or (f.relation != "is_a" and not node.noun) or (
                    f.relation == "link" and "___" in chain.question):
                continue
            adds = bool(other) and other in store.by_subject
            out.append(StepOption("INJECT", target, f.relation, direction, rng.choice(templates),
                                  fact_index=index[id(f)], adds_entity=adds,
                                  new_page=f.evidence.url not in pages,
                                  detail={"entity": node.name, "value": f.value if direction ==
                                          "out" else f.subject, "url": f.evidence.url}))
    rng.shuffle(out)
    return out


_KIND_WORDS = {"film": ("film", "movie"), "novel": ("novel", "book"),
               "album": ("album", "record"), "song": ("song", "single", "track")}
_OTHER_WORKS = ("film", "movie", "novel", "book", "album", "song", "single", "Broadway",
                "musical", "Theatre", "theatre", "stage", "stories", "story", "collection",
                "production", "West End")


def kind_clash(noun: str, sentence: str) -> bool:
    """Does a sentence name a work of another kind than the linked page's ('roles in films
    such as "The Apple Dumpling Gang"' for the novel's page, 'starred as Roxie Hart in
    "Chicago", at the Cambridge Theatre' for the film's)? Only without its own kind's word."""
    kind = noun.split()[-1] if noun else ""
    own = _KIND_WORDS.get(kind)
    if not own or any(w in sentence for w in own):
        return False
    return any(w in sentence for w in _OTHER_WORKS)


_WORK_YEARS = ("released_year", "published_year", "founded_year", "built_year")


def _born_after(store: FactStore, person: str, work: str) -> bool:
    """Was the person born less than ten years before the work's year (so a page naming
    them on the work's page names someone else of the same name)?"""
    born = store.birth_year(person)
    years = [f.typed for rel in _WORK_YEARS for f in store.facts_of(work, rel)
             if isinstance(f.typed, int)]
    return born is not None and bool(years) and born > years[0] - 10


def _lead_of_ask(f: Fact, chain: Chain) -> bool:
    """A description from the very sentence the answer is quoted from ('X (born 1966) is an
    American director'): allowed, the one case where a sentence serves two facts."""
    return f.relation == "is_a" and f.evidence.quote == chain.ask.evidence.quote


def _facts_about(url: str, store: FactStore) -> list[tuple[Fact, str]]:
    own = [(f, "out") for f in store.by_subject.get(url, []) if f.relation not in _WEAK]
    pointing = [(f, "in") for f in store.by_object.get(url, [])
                if f.relation != "link" or url not in store.structured]
    if url not in store.structured:
        own = [(f, d) for f, d in own if f.relation != "link"]
    else:
        own = [(f, d) for f, d in own if f.relation != "is_a"]
    return own + pointing


def _templates(f: Fact, direction: str, noun: str = "") -> list[str]:
    if f.relation == "is_a":
        return ["{v}"] if len(f.value.split()) >= 3 else []
    if f.relation == "link":
        return _link_templates(f, noun) if direction == "in" else []
    return wording.clause_templates(f.relation, direction)


def _link_templates(f: Fact, noun: str = "") -> list[str]:
    """'the band that completes "{v} is the lead guitarist of ___"': the sentence of the
    linking page, the described entity blanked, the page's subject left for INJECT (named,
    or called by its kind: 'The song was written by ___' on a song's page, `noun` its kind)."""
    s = f.sentence.rstrip(" .").replace('"', "'")   # the template quotes it in double quotes
    if s.count(f.value) != 1 or "{" in s or "}" in s:
        return []
    kind = noun.split()[-1] if noun else ""
    cloze = s.replace(f.value, "___")
    if kind and cloze.startswith(f"The {kind} "):
        cloze = bare(f.subject) + cloze[len(f"The {kind}"):]
    s = with_slot(cloze, bare(f.subject), "{v}")
    if s is None:
        return []
    s = trim_cloze(s)
    return [f'that completes "{s}"', f'that fills the blank in "{s}"', f'missing from "{s}"']


_ASIDE = re.compile(r"\s*\([^()]*\)")
_CLAUSE_END = re.compile(r";|, (?!and\b)|\s(?:(?:in|of|to|by|for|on|at|with|from) (?=which|"
                         r"whom))?(?:from a|from the|which|whom|who|whose|while|where|"
                         r"although|but|after|before|when)\s")


def trim_cloze(s: str) -> str:
    """The cloze without what does not pin its blank: asides in parentheses, and the rest of
    the sentence after the clause that holds the blank and the slot ('... directed by ___'
    of '... directed by ___ from a screenplay by Peter Stone, based on ...'). A blank in a
    list ('A, ___, C') keeps the list: cut short it would fit any of the items."""
    s = _ASIDE.sub(lambda m: m.group(0) if "___" in m.group(0) or "{v}" in m.group(0)
                   else "", s)
    blank = s.find("___")
    if re.search(r"(?:,|\band)\s*['\"]?$", s[:blank]) or re.match(r"['\"]?,", s[blank + 3:]):
        return s
    after = max(blank + 3, s.find("{v}") + 3)
    m = _CLAUSE_END.search(s, after)
    return s[:m.start()].rstrip(" ,") if m else s


def fuzz_options(chain: Chain, rng: random.Random) -> list[StepOption]:
    out = []
    for i, c in enumerate(literal_clauses(chain)):
        for text, kind, lo, hi in fuzz.forms(c.value):
            out.append(StepOption("FUZZ", i, c.relation, fuzzed=text, fuzz_kind=kind, lo=lo,
                                  hi=hi, detail={"value": c.value.text, "fuzzed": text}))
    rng.shuffle(out)
    return out


def apply_step(chain: Chain, option: StepOption, store: FactStore) -> Chain:
    """A copy of `chain` with the step applied (the original is left as it was)."""
    new = clone(chain)
    if option.action == "FUZZ":
        lit = literal_clauses(new)[option.target].value
        lit.fuzzed, lit.fuzz_kind, lit.lo, lit.hi = (option.fuzzed, option.fuzz_kind,
                                                     option.lo, option.hi)
        return new
    node = new.named_nodes()[option.target]
    f = store.facts[option.fact_index]
    node.clauses.append(_clause(f, option, store))
    if f.relation == "is_a":
        node.noun = ""
    return new


def _clause(f: Fact, option: StepOption, store: FactStore) -> Clause:
    if f.relation == "is_a":
        return is_a_clause(f, store)
    if option.direction == "in":
        value: Node | Literal = Node(bare(f.subject), f.subject_url, store.noun(f.subject_url))
    elif f.value_type == "entity":
        value = Node(f.value, f.object_url or "", store.noun(f.object_url))
    else:
        value = literal_of(f)
    return Clause(f.relation, option.direction, value, option.template, f.evidence,
                  f.subject_url)
