"""Shortcut: a multi-hop question that one search of its own text answers.

A question that claims several pages is worth its hops only if the solver has to find them.
One BM25 search of the question text, k = 3, over every stored page (the index the agent's
`search` tool uses: `warehouse.StoredPages`, which datagen's `PageTools` extends), is the
cheapest thing a solver tries; when it already returns

- for a bridge question: the page that holds the answer (the url of the last evidence quote;
  evidence is stored in chain order, the quote stating the answer last), or
- for a comparison: every compared page (the distinct evidence urls),

the question is a shortcut and fails with reason `shortcut`. A one-hop question passes (not
applicable: its one search is the question). The functions below are the reusable API (the
composer avoids shortcuts with them, benchmarks/bench_hops.py measures any warehouse with
them); `Shortcut` is the check over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from warehouse import QuestionRecord, StoredPages

from verifiers.checks import CheckContext, CheckResult, PageSearch

SHORTCUT_K = 3
BRIDGE, COMPARISON = "bridge", "comparison"
MULTI_PAGE_KINDS = (BRIDGE, COMPARISON)
SHORTCUT = "shortcut"


def shortcut_pages(search: PageSearch, question: str, k: int = SHORTCUT_K) -> list[str]:
    """The urls one search of `question` returns, best first: what a solver gets for free."""
    return [h.url for h in search.search(question, k)]


def shortcut_pages_many(search: PageSearch, questions: list[str],
                        k: int = SHORTCUT_K) -> list[list[str]]:
    """`shortcut_pages` of each question in one batched search (thousands of questions)."""
    return [[h.url for h in hits] for hits in search.search_many(questions, k)]


def is_shortcut(hits: Sequence[str], answer_url: str, compared_urls: Sequence[str] = (),
                kind: str = BRIDGE) -> bool:
    """Whether the search results `hits` give the question away: the answer's page among them
    (a bridge), or every compared page (a comparison)."""
    if kind not in MULTI_PAGE_KINDS:
        raise ValueError(f"hop kind {kind!r} is not one of {', '.join(MULTI_PAGE_KINDS)}")
    if kind == COMPARISON:
        return bool(compared_urls) and set(compared_urls) <= set(hits)
    return bool(answer_url) and answer_url in hits


def answer_url(q: QuestionRecord) -> str:
    """The page that holds the answer: the url of the last evidence quote ('' without any)."""
    return q.evidence[-1].url if q.evidence else ""


def compared_urls(q: QuestionRecord) -> list[str]:
    """The pages a comparison compares: its distinct evidence urls, in evidence order."""
    return list(dict.fromkeys(e.url for e in q.evidence))


def hop_kind(q: QuestionRecord) -> str:
    """"bridge" or "comparison", as the question records it (rows from before schema 3 and
    one-page questions record "": read as a bridge, the stricter reading)."""
    return q.hop_kind or BRIDGE


def applies(q: QuestionRecord) -> bool:
    """Only a multi-hop question can be a shortcut: a one-hop question's one search is it."""
    return q.hops >= 2


def question_is_shortcut(q: QuestionRecord, hits: Sequence[str]) -> bool:
    """`is_shortcut` of a stored question, given what one search of its text returned."""
    return is_shortcut(hits, answer_url(q), compared_urls(q), hop_kind(q))


def multi_hop_hits(search: PageSearch, questions: Sequence[QuestionRecord],
                   k: int = SHORTCUT_K) -> list[list[str] | None]:
    """What one search of each multi-hop question returns, in one batched search; None for
    a one-hop question (not applicable)."""
    multi = [i for i, q in enumerate(questions) if applies(q)]
    out: list[list[str] | None] = [None] * len(questions)
    found = shortcut_pages_many(search, [questions[i].question for i in multi], k) if multi else []
    for i, hits in zip(multi, found):
        out[i] = hits
    return out


def shortcut_flags(search: PageSearch, questions: Sequence[QuestionRecord],
                   k: int = SHORTCUT_K) -> list[bool | None]:
    """Per question: True (a shortcut), False, or None (one hop: not applicable)."""
    return [None if hits is None else question_is_shortcut(q, hits)
            for q, hits in zip(questions, multi_hop_hits(search, questions, k))]


@dataclass
class Shortcut:
    """The check: see the module docstring. `k`: how many results the one search returns."""

    k: int = SHORTCUT_K
    name: str = SHORTCUT
    _pages: PageSearch | None = field(default=None, repr=False, compare=False)

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        """A verdict per question, the multi-hop ones searched in one batch (no index is
        opened for a batch of one-hop questions alone)."""
        if not any(applies(q) for q in questions):
            return [self._verdict(q, None) for q in questions]
        found = multi_hop_hits(self._search(ctx), questions, self.k)
        return [self._verdict(q, hits) for q, hits in zip(questions, found)]

    def _verdict(self, q: QuestionRecord, hits: list[str] | None) -> CheckResult:
        """pass / fail `shortcut`, with what the search returned beside it."""
        if hits is None:
            return CheckResult("pass", "", {"applicable": False})
        details = {"kind": hop_kind(q), "hits": hits, "answer_url": answer_url(q), "k": self.k}
        if question_is_shortcut(q, hits):
            return CheckResult("fail", SHORTCUT, details)
        return CheckResult("pass", "", details)

    def _search(self, ctx: CheckContext) -> PageSearch:
        """The injected page search (the build's PageTools), else the warehouse's own index,
        kept from batch to batch while the warehouse's pages are unchanged."""
        if ctx.pages is not None:
            return ctx.pages
        if ctx.wh is None:
            raise RuntimeError("the shortcut check needs a warehouse or a page search")
        if not (isinstance(self._pages, StoredPages) and self._pages.current_for(ctx.wh)):
            self._pages = StoredPages.of(ctx.wh)
        return self._pages
