"""Unique answer: no other entity satisfies the question.

Offline: BM25 (bm25s) over the crawled pages finds the pages most like the
question; a page about a *different* entity (its title is not the answer)
that contains at least as many of the question's content words as the
question's own evidence pages do, and nearly all of them, is an alternative
answer, and the question fails. With an LLM judge: the judge lists answers it
thinks are also correct; each is checked against the gold with the
equivalence rules, and any that is a genuinely different answer fails the
question.

The page index comes through the context when the caller has one
(``CheckContext(extra={"page_tools": tools})`` with datagen's ``PageTools``, whose
BM25 index is persisted per snapshot): any object with ``search(query, k)`` returning
hits with ``.url``/``.title`` and ``page(url) -> (title, text)``. Without one, the check
builds its own index from the warehouse.

Limits: the offline test sees entities that have their own page; an
alternative mentioned only inside another page's text is not found.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Sequence

from warehouse import QuestionRecord

from verifiers.checks import CheckContext, CheckResult, fail
from verifiers.equivalence import is_equivalent
from verifiers.normalize import canonical_tokens, content_words

log = logging.getLogger(__name__)


@dataclass
class PageIndex:
    """BM25 over the warehouse's pages, plus each page's canonical word set."""

    urls: list[str]
    titles: list[str]
    words: list[frozenset[str]]
    retriever: Any

    @classmethod
    def from_warehouse(cls, wh: Any) -> "PageIndex":
        rows = wh.sql("select url, any_value(title) as title, any_value(text) as text "
                      "from pages group by url order by url").to_pylist()
        return cls.build([r["url"] for r in rows], [r["title"] or "" for r in rows],
                         [r["text"] or "" for r in rows])

    @classmethod
    def build(cls, urls: list[str], titles: list[str], texts: list[str]) -> "PageIndex":
        import bm25s
        retriever = bm25s.BM25()
        if texts:
            corpus = [f"{t}\n{x}" for t, x in zip(titles, texts)]
            retriever.index(bm25s.tokenize(corpus, show_progress=False), show_progress=False)
        # Page texts are long and seen once: bypass the cache meant for short answers.
        tokens = canonical_tokens.__wrapped__
        words = [frozenset(tokens(f"{t} {x}").words) for t, x in zip(titles, texts)]
        return cls(urls, titles, words, retriever)

    def search(self, query: str, k: int) -> list[int]:
        import bm25s
        if not self.urls:
            return []
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = self.retriever.retrieve(tokens, k=min(k, len(self.urls)), show_progress=False)
        return [int(i) for i in docs[0]]

    def hits(self, query: str, k: int) -> list[tuple[str, str]]:
        return [(self.urls[i], self.titles[i]) for i in self.search(query, k)]

    def page_words(self, urls: set[str]) -> frozenset[str]:
        return frozenset().union(*(w for u, w in zip(self.urls, self.words) if u in urls))

    def words_of(self, url: str) -> frozenset[str]:
        return self.words[self.urls.index(url)]


@dataclass
class InjectedIndex:
    """Adapts a page index handed in through the context (see the module docstring);
    canonical word sets are computed per page on first use."""

    tools: Any
    _words: dict[str, frozenset[str]] = field(default_factory=dict)

    def hits(self, query: str, k: int) -> list[tuple[str, str]]:
        return [(h.url, h.title) for h in self.tools.search(query, k)]

    def words_of(self, url: str) -> frozenset[str]:
        if url not in self._words:
            try:
                title, text = self.tools.page(url)
            except KeyError:
                title, text = "", ""
            self._words[url] = frozenset(canonical_tokens.__wrapped__(f"{title} {text}").words)
        return self._words[url]

    def page_words(self, urls: set[str]) -> frozenset[str]:
        return frozenset().union(*(self.words_of(u) for u in urls))


@dataclass
class UniqueAnswer:
    """See the module docstring. ``min_coverage``: share of the question's content words an
    alternative page must contain (nearly all: it must satisfy the whole question)."""

    top_k: int = 10
    min_coverage: float = 0.8
    use_judge: bool = True
    name: str = "unique_answer"
    _index: PageIndex | None = field(default=None, repr=False)

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        if ctx.judge is not None and self.use_judge:
            return [self._with_judge(q, ctx) for q in questions]
        injected = ctx.extra.get("page_tools") or ctx.extra.get("page_index")
        if injected is not None:
            index: Any = InjectedIndex(injected)
        elif ctx.wh is None:
            raise RuntimeError("unique_answer needs a warehouse or a page index (offline) "
                               "or an LLM judge")
        else:
            index = PageIndex.from_warehouse(ctx.wh)
        return [self._offline(q, index) for q in questions]

    def _offline(self, q: QuestionRecord, index: Any) -> CheckResult:
        terms = set(content_words(canonical_tokens(q.question))) - {"name", "called", "known"}
        if not terms:
            return fail("question has no content words to search with")
        own = {e.url for e in q.evidence} | set(q.source_urls)
        own_cov = len(terms & index.page_words(own)) / len(terms)
        alternatives = []
        for url, title in index.hits(q.question, self.top_k):
            if url in own or is_equivalent(title, q.answer, q.answer_aliases):
                continue
            cov = len(terms & index.words_of(url)) / len(terms)
            if cov >= self.min_coverage and cov >= own_cov:
                alternatives.append({"title": title, "url": url, "coverage": round(cov, 3)})
        if alternatives:
            names = ", ".join(a["title"] for a in alternatives[:3])
            return fail(f"other pages also satisfy the question: {names}",
                        alternatives=alternatives, own_coverage=round(own_cov, 3))
        return CheckResult("pass", "", {"searched": self.top_k, "own_coverage": round(own_cov, 3)})

    def _with_judge(self, q: QuestionRecord, ctx: CheckContext) -> CheckResult:
        proposed = ctx.judge.alternatives(q.question, q.answer)
        different = [a for a in proposed if not is_equivalent(a, q.answer, q.answer_aliases)]
        if different:
            return fail(f"the judge names other correct answers: {', '.join(different[:3])}",
                        alternatives=different, backend="llm_judge")
        return CheckResult("pass", "", {"proposed": proposed, "backend": "llm_judge"})
