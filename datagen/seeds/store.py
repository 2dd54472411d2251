"""Every mined fact, indexed: which entities satisfy a description, and what a question's
answers are. On the demo world the infobox facts cover every entity, so an answer set
computed here is the truth; on other pages it is a lower bound (the composer then also
judges uniqueness with search)."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Iterable

from datagen.seeds.chain import Ask, Chain, Clause, Literal, Node
from datagen.seeds.records import Fact


class FactStore:
    def __init__(self, facts: Iterable[Fact], titles: dict[str, str] | None = None):
        self.facts = list(facts)
        self.by_subject: dict[str, list[Fact]] = defaultdict(list)
        self.by_relation: dict[str, list[Fact]] = defaultdict(list)
        self.by_object: dict[str, list[Fact]] = defaultdict(list)
        self.names: dict[str, str] = dict(titles or {})
        self.nouns: dict[str, str] = {}
        self.structured: set[str] = set()     # pages with infobox facts
        self._titles: dict[str, str] | None = None
        for f in self.facts:
            self.by_subject[f.subject_url].append(f)
            self.by_relation[f.relation].append(f)
            self.names.setdefault(f.subject_url, f.subject)
            if f.object_url:
                self.by_object[f.object_url].append(f)
            if f.source == "infobox":
                self.structured.add(f.subject_url)
            if f.relation == "is_a" and f.subject_url not in self.nouns:
                from datagen.seeds.patterns import lead
                found = lead(f.evidence.quote, f.subject)
                self.nouns[f.subject_url] = found[1] if found else ""

    def title_in(self, text: str, exclude: str = "") -> tuple[str, str] | None:
        """(title, url) of the longest stored page title (two words or more, without its
        disambiguation) that `text` names as whole words: how a description's entity is
        found when the page gives it no link (word n-grams looked up, not a scan)."""
        if self._titles is None:
            self._titles = {}
            for url, title in sorted(self.names.items()):
                key = re.sub(r"\s*\([^()]*\)$", "", title).strip()
                if len(key.split()) >= 2:
                    self._titles.setdefault(key, url)
        words = text.split()
        for n in range(min(6, len(words)), 1, -1):
            for i in range(len(words) - n + 1):
                span = " ".join(words[i:i + n]).strip(",.;:")
                url = self._titles.get(span)
                if url and url != exclude:
                    return span, url
        return None

    def noun(self, url: str | None) -> str:
        return self.nouns.get(url or "", "")

    def facts_of(self, url: str, relation: str) -> list[Fact]:
        return [f for f in self.by_subject.get(url, []) if f.relation == relation]

    def birth_year(self, url: str | None) -> int | None:
        """The year the page's subject was born (a date's or a year's), None if it gives none:
        what tells a person's page from others on real text."""
        for f in self.facts_of(url or "", "born_on") + self.facts_of(url or "", "born_year"):
            if f.typed:
                return int(str(f.typed)[:4])
        return None

    # ---- which entities satisfy a description ---------------------------------------

    def match(self, node: Node) -> set[str]:
        """URLs of the entities that satisfy every clause of `node` (its own URL if named)."""
        if node.named:
            return {node.url}
        out: set[str] | None = None
        for c in node.clauses:
            found = self._clause(c)
            out = found if out is None else out & found
            if not out:
                return set()
        return out or set()

    def _clause(self, c: Clause) -> set[str]:
        facts = self.by_relation.get(c.relation, [])
        if isinstance(c.value, Literal):
            ok = _literal_test(c.value)
            return {f.subject_url for f in facts if ok(f)} if c.direction == "out" else set()
        inner = self.match(c.value)
        if c.direction == "out":
            return {f.subject_url for f in facts if f.object_url in inner}
        return {f.object_url for f in facts if f.subject_url in inner and f.object_url}

    def answers(self, chain: Chain) -> set[str]:
        """The answers the fact store gives the question (names for entity answers)."""
        subjects = self.match(chain.root)
        ask: Ask = chain.ask
        if ask.relation == "self":
            return {self.names.get(u, u) for u in subjects}
        return {f.value for u in sorted(subjects) for f in self.facts_of(u, ask.relation)}

    def covers(self, chain: Chain) -> bool:
        """Does this store know the whole question (infobox facts for every node)?"""
        urls = [chain.root.url] + [n.url for n, _ in chain.clauses()]
        urls += [c.value.url for _, c in chain.clauses() if isinstance(c.value, Node)]
        return chain.ask.relation not in ("link", "is_a") and all(
            u in self.structured for u in urls if u)


def _literal_test(lit: Literal):
    if not lit.fuzzed:
        return lambda f: f.value == lit.text
    lo, hi = lit.lo, lit.hi

    def within(f: Fact) -> bool:
        v = f.typed
        if v is None or type(v) is not type(lo):
            return False
        return (lo is None or v >= lo) and (hi is None or v <= hi)
    return within
