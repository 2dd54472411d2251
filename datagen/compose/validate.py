"""Checks every kept step passes: quotes verbatim, the answer unique and unchanged, not
leaked, every constraint worded in the question, and (for the whole question) no shortcut.
Reuses `verifiers` for the leak and shortcut checks.

Uniqueness: where the fact store knows every node of the question (infobox facts: the demo
world), the answer set is computed from it and must be exactly the answer. Elsewhere each
description is searched over the stored pages (BM25, top 10); another page that holds
nearly all of the description's content words, at least as many as the described page,
makes the description ambiguous. The trace records which way was used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from datagen.seeds.chain import Chain, Literal, Node, described_nodes, render_value
from datagen.seeds.store import FactStore
from warehouse import QuestionRecord

if TYPE_CHECKING:
    from datagen.tools import PageTools
    from verifiers import PageWords

SEARCH_K = 10
MIN_COVERAGE = 0.8


@dataclass
class Validator:
    store: FactStore
    page_texts: dict[str, str]          # url -> whitespace-squashed stored text
    tools: "PageTools | None" = None    # for search-judged uniqueness
    search: "PageTools | None" = None   # the agent's search, for the shortcut check
    _words: "PageWords | None" = field(default=None, repr=False)   # the tools' word sets
    _states: dict = field(default_factory=dict, repr=False)  # (quote, answer) -> bool

    def check(self, chain: Chain) -> str:
        """'' when the chain may be kept, else the reason it is rejected."""
        q = chain.question
        if not q or len(q.split()) < 4:
            return "wording_failed"
        evidence = chain.evidence()
        for ev in evidence:
            if " ".join(ev.quote.split()) not in self.page_texts.get(ev.url, ""):
                return "quote_not_verbatim"
        if not self._states_answer(evidence[-1].quote, chain):
            return "last_quote_lacks_answer"
        for _, c in chain.clauses():
            shown = c.value.name if isinstance(c.value, Node) and c.value.named else (
                c.value.fuzzed or c.value.text if isinstance(c.value, Literal) else "")
            if shown and shown not in q:
                return "constraint_not_in_question"
            if isinstance(c.value, Literal) and c.value.fuzzed and re.search(
                    r"(?<!\w)" + re.escape(c.value.text) + r"(?!\w)", q):
                return "fuzzed_value_still_in_question"
        if any(_names(q, n.name) for n in described_nodes(chain.root)):
            return "described_entity_named"   # 'the city home to the Drathwick Festival'
        unique = self._unique(chain)   # cheaper than the leak check, and fails more often
        if unique:
            return unique
        return "answer_in_question" if _leaks(chain) or self._surname_leaks(chain) else ""

    def _surname_leaks(self, chain: Chain) -> bool:
        """Does the question name the answer's surname, where the answer is a person (its page
        gives a birth)? '... was Bakshi's first live-action film' gives away Ralph Bakshi.
        The verifiers' leak check cannot tell a person from 'Pacific Ocean'; the store can."""
        words = chain.ask.answer.split()
        return self.store.birth_year(chain.ask.answer_url) is not None and len(words) >= 2 and len(words[-1]) > 3 and _names(
            chain.question, words[-1])

    def shortcut(self, chain: Chain) -> bool:
        """Does one search of the question (k = 3, the agent's index) find the answer's page?
        The verify stage's check (verifiers.shortcut), run here so none is stored."""
        if self.search is None or chain.hops < 2:
            return False
        from verifiers.shortcut import is_shortcut, shortcut_pages
        return is_shortcut(shortcut_pages(self.search, chain.question), chain.evidence()[-1].url)

    def _states_answer(self, quote: str, chain: Chain) -> bool:
        """Does the last quote state the answer, as verifiers' grounding check requires?"""
        key = (quote, chain.ask.answer)
        if key not in self._states:
            from verifiers import is_equivalent
            self._states[key] = is_equivalent(quote, chain.ask.answer, chain.ask.aliases)
        return self._states[key]

    def _unique(self, chain: Chain) -> str:
        if self.store.covers(chain):
            answers = self.store.answers(chain)
            chain.uniqueness = {"method": "fact_store", "answers": len(answers)}
            if answers != {chain.ask.answer}:
                return "answer_not_unique" if len(answers) > 1 else "answer_changed"
            return ""
        return self._unique_by_search(chain)

    def _unique_by_search(self, chain: Chain) -> str:
        if self.tools is None:
            chain.uniqueness = {"method": "none"}
            return ""
        checked = []
        for node in described_nodes(chain.root):
            text = render_value(node)
            sources = {c.evidence.url for c in node.clauses}   # pages quoted for it
            alt = ambiguous(self._page_words(), text, node.url, sources)
            checked.append({"description": text, "alternatives": alt[:3]})
            if alt:
                chain.uniqueness = {"method": "search", "k": SEARCH_K, "checked": checked}
                return "description_not_unique"
        chain.uniqueness = {"method": "search", "k": SEARCH_K, "checked": checked}
        return ""

    def _page_words(self) -> "PageWords":
        if self._words is None:
            from verifiers import PageWords
            self._words = PageWords(self.tools)
        return self._words


def _names(question: str, name: str) -> bool:
    """Whether the question names an entity it describes (whole words): a search would go
    straight to the page the description should make a solver find."""
    return bool(name) and re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", question) is not None


def ambiguous(words: "PageWords", description: str, own_url: str,
              sources: set[str] = frozenset()) -> list[str]:
    """Titles of other stored pages that satisfy `description` about as well as its own page
    (pages the description is quoted from are not rivals: they hold its words by design);
    the unique-answer check's coverage test (verifiers.uniqueness), on one description."""
    from verifiers import question_terms
    terms = question_terms(description)
    if not terms:
        return []
    own = words.coverage(terms, {own_url})   # 0 when the page is not stored
    return [title for url, title in words.hits(description, SEARCH_K)
            if url != own_url and url not in sources
            and (cov := words.coverage(terms, {url})) >= MIN_COVERAGE and cov >= own]


def _leaks(chain: Chain) -> bool:
    from verifiers import AnswerNotLeaked
    rec = QuestionRecord(question_id="", question=chain.question, answer=chain.ask.answer,
                         answer_aliases=tuple(chain.ask.aliases))
    return AnswerNotLeaked().check_one(rec, None).status != "pass"
