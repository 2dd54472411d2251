"""Typed results of the page tools (no logic)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchHit:
    """One search result: the page, a snippet around the query's words, the BM25 score."""

    url: str
    title: str
    snippet: str
    score: float


@dataclass(frozen=True)
class PageView:
    """A window of a page's stored text; `next_offset` is None at the end of the page."""

    url: str
    title: str
    text: str
    offset: int
    next_offset: int | None
