"""Unique answer: no other entity satisfies the question.

Offline: BM25 over the crawled pages finds the pages most like the
question; a page about a *different* entity (its title is not the answer)
that contains at least as many of the question's content words as the
question's own evidence pages do, and nearly all of them, is an alternative
answer, and the question fails. With an LLM judge: the judge lists answers it
thinks are also correct; each is checked against the gold with the
equivalence rules, and any that is a genuinely different answer fails the
question.

The page search comes through the context when the caller has one
(``CheckContext(pages=tools)`` with datagen's ``PageTools``): a ``PageSearch``, with
``search(query, k)`` and ``search_many(queries, k)`` returning hits with ``.url``/``.title``
and ``page(url) -> (title, text)``. Without one, the check opens the warehouse's own
(``warehouse.StoredPages``, the same BM25 index, persisted per snapshot).

Limits: the offline test sees entities that have their own page; an
alternative mentioned only inside another page's text is not found.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

from warehouse import QuestionRecord, StoredPages

from verifiers.checks import AlternativesJudge, CheckContext, CheckResult, PageSearch, fail
from verifiers.equivalence import is_equivalent
from verifiers.normalize import canonical_tokens, content_words

log = logging.getLogger(__name__)


NOT_CONTENT = frozenset({"name", "called", "known"})  # "what is the name of ..." says nothing


def question_terms(text: str) -> set[str]:
    """The content words a rival page must hold to satisfy `text` too."""
    return set(content_words(canonical_tokens(text))) - NOT_CONTENT


@dataclass
class PageWords:
    """A page search with each page's canonical word set computed on first use: what the
    unique-answer check and the composer's uniqueness test measure coverage with."""

    pages: PageSearch
    _words: dict[str, frozenset[str]] = field(default_factory=dict)

    def hits(self, query: str, k: int) -> list[tuple[str, str]]:
        """(url, title) of the best `k` pages for `query`."""
        return [(h.url, h.title) for h in self.pages.search(query, k)]

    def hits_many(self, queries: list[str], k: int) -> list[list[tuple[str, str]]]:
        """`hits` of each query, in one batched search (no snippets either: only the url
        and title are read)."""
        return [[(h.url, h.title) for h in hits] for hits in self.pages.search_many(queries, k)]

    def words_of(self, url: str) -> frozenset[str]:
        if url not in self._words:
            try:
                title, text = self.pages.page(url)
            except KeyError:
                title, text = "", ""
            # Page texts are long and seen once: bypass the cache meant for short answers.
            self._words[url] = frozenset(canonical_tokens.__wrapped__(f"{title} {text}").words)
        return self._words[url]

    def coverage(self, terms: set[str], urls: set[str]) -> float:
        """The share of `terms` that the pages `urls` hold between them (no union of their
        word sets is built: a page holds hundreds of words, a question a handful)."""
        held = [self.words_of(u) for u in urls]
        return sum(1 for t in terms if any(t in words for words in held)) / len(terms)


@dataclass
class UniqueAnswer:
    """See the module docstring. ``min_coverage``: share of the question's content words an
    alternative page must contain (nearly all: it must satisfy the whole question)."""

    top_k: int = 10
    min_coverage: float = 0.8
    use_judge: bool = True
    name: str = "unique_answer"
    _index: PageWords | None = field(default=None, repr=False, compare=False)

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        if ctx.judge is not None and self.use_judge:
            return [self._with_judge(q, ctx.judge) for q in questions]
        index = self._words(ctx)
        texts = [q.question for q in questions]
        found = index.hits_many(texts, self.top_k)
        return [self._offline(q, index, hits) for q, hits in zip(questions, found)]

    def _words(self, ctx: CheckContext) -> PageWords:
        """The page search with its word sets, kept from batch to batch of the same search
        (each batch recomputed the word sets of the ~2,000 pages it met)."""
        pages = ctx.pages if ctx.pages is not None else self._stored_pages(ctx)
        if self._index is None or self._index.pages is not pages:
            self._index = PageWords(pages)
        return self._index

    def _stored_pages(self, ctx: CheckContext) -> PageSearch:
        """The warehouse's own index: the one of the last batch while `pages` is unchanged."""
        if ctx.wh is None:
            raise RuntimeError("unique_answer needs a warehouse or a page search (offline) "
                               "or an LLM judge")
        last = self._index.pages if self._index is not None else None
        if isinstance(last, StoredPages) and last.current_for(ctx.wh):
            return last
        return StoredPages.of(ctx.wh)

    def _offline(self, q: QuestionRecord, index: PageWords,
                 hits: list[tuple[str, str]]) -> CheckResult:
        terms = question_terms(q.question)
        if not terms:
            return fail("question has no content words to search with")
        own = {e.url for e in q.evidence} | set(q.source_urls)
        own_cov = index.coverage(terms, own)
        alternatives = []
        for url, title in hits:
            if url in own:
                continue
            cov = index.coverage(terms, {url})
            # the equivalence test last: it costs far more than the coverage, and most hits
            # fall short of the coverage anyway
            if cov >= self.min_coverage and cov >= own_cov and \
                    not is_equivalent(title, q.answer, q.answer_aliases):
                alternatives.append({"title": title, "url": url, "coverage": round(cov, 3)})
        if alternatives:
            names = ", ".join(a["title"] for a in alternatives[:3])
            return fail(f"other pages also satisfy the question: {names}",
                        alternatives=alternatives, own_coverage=round(own_cov, 3))
        return CheckResult("pass", "", {"searched": self.top_k, "own_coverage": round(own_cov, 3)})

    def _with_judge(self, q: QuestionRecord, judge: AlternativesJudge) -> CheckResult:
        proposed = judge.alternatives(q.question, q.answer)
        different = [a for a in proposed if not is_equivalent(a, q.answer, q.answer_aliases)]
        if different:
            return fail(f"the judge names other correct answers: {', '.join(different[:3])}",
                        alternatives=different, backend="llm_judge")
        return CheckResult("pass", "", {"proposed": proposed, "backend": "llm_judge"})
