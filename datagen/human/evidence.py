"""A person's question's evidence chain from its gold pages: which page comes first, and the
verbatim sentence quoted from each.

The cold start follows the evidence order (search the first page, open it, search the
entity it names, open that, answer), so a page that names (links) another comes first; among
pages that name none or each other, the one stating the answer comes last, as the grounded
check reads the last quote as the one that states it. Quotes are sentences of the stored
text (less the page's title line): the sentence naming the next page, else the one stating
the answer, else any; among several, the one sharing the most words with the question (the
earliest on a tie), so a comparison quotes the fact compared rather than the lead.
"""

from __future__ import annotations

import html
import re
from typing import Sequence

from datagen.human.records import GoldPage
from warehouse import Evidence

_WORD = re.compile(r"\w+")
_COMMON = frozenset("a an and are as at be by for from in is it of on or that the this to was "
                    "were what which who whom whose with".split())


def evidence_chain(pages: Sequence[GoldPage], question: str,
                   answers: Sequence[str]) -> tuple[Evidence, ...]:
    """The quotes of `pages` in chain order; when only an earlier page states the answer
    (HotpotQA bridges whose answer sits on the naming page), its answer sentence closes the
    chain, so the last quote still states the answer.

    >>> a = GoldPage("u/a", "A", "A\\nA is a film. It stars Bo Ek.", {"u/b": "Bo Ek"})
    >>> b = GoldPage("u/b", "Bo Ek", "Bo Ek\\nBo Ek is an actor. He was born in 1950.")
    >>> [e.quote for e in evidence_chain([b, a], "When was A's star born?", ["1950"])]
    ['It stars Bo Ek.', 'He was born in 1950.']
    """
    ordered = chain_order(pages, answers)
    quotes = [Evidence(p.url, _quote(p, ordered[i + 1:], question, answers))
              for i, p in enumerate(ordered)]
    closing = _closing(ordered, question, answers)
    return tuple(quotes + ([closing] if closing else []))


def _closing(ordered: Sequence[GoldPage], question: str,
             answers: Sequence[str]) -> Evidence | None:
    """The answer sentence of the first page stating the answer, when the last page does not
    (None when it does, or when no page states it: a yes/no answer, a reworded one)."""
    stated = [(p.url, s) for p in ordered if (s := _answer_sentence(p, question, answers))]
    if not stated or stated[-1][0] == ordered[-1].url:
        return None
    return Evidence(*stated[0])


def chain_order(pages: Sequence[GoldPage], answers: Sequence[str]) -> list[GoldPage]:
    """Pages naming another gold page first, then the others; within each, pages stating the
    answer last; otherwise the file's order (a stable sort)."""
    urls = {p.url for p in pages}

    def key(p: GoldPage) -> tuple[bool, bool]:
        names_other = any(u in urls and u != p.url for u in p.links)
        return (not names_other, bool(_answer_sentences(p, answers)))
    return sorted(pages, key=key)


def _quote(page: GoldPage, later: Sequence[GoldPage], question: str,
           answers: Sequence[str]) -> str:
    """The sentence naming the next page of the chain, else the one stating the answer, else
    any (see the module docstring for which of several)."""
    named = next((page.links[p.url] for p in later[:1] if p.url in page.links), None)
    naming = [s for s in _sentences(page) if named and named in s]
    return (_closest(naming, question) or _answer_sentence(page, question, answers)
            or _closest(_sentences(page), question) or page.text)


def _answer_sentence(page: GoldPage, question: str, answers: Sequence[str]) -> str | None:
    """Of the sentences the grounded check reads as stating the answer, the question's."""
    return _closest(_answer_sentences(page, answers), question)


def _answer_sentences(page: GoldPage, answers: Sequence[str]) -> list[str]:
    """The sentences stating the answer (any alias), as verifiers.is_equivalent judges."""
    from verifiers import is_equivalent

    gold, aliases = answers[0], tuple(answers[1:])
    return [s for s in _sentences(page) if is_equivalent(s, gold, aliases)]


def _closest(sentences: list[str], question: str) -> str | None:
    """The sentence sharing the most words with the question; the earliest on a tie."""
    asked = _words(question)
    return max(sentences, key=lambda s: len(_words(s) & asked), default=None)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


def _sentences(page: GoldPage) -> list[str]:
    """The page's sentences verbatim in its text, less its title line (the heading)."""
    from datagen.seeds.patterns import sentences

    title = html.unescape(page.title).strip()
    return [s for s in sentences(page.text) if s in page.text and s != title]
