"""`search(query, k)` and `open(url, offset)` over the warehouse's stored pages.

One implementation for the composer (INJECT on real pages), the difficulty solvers and the
training search agent. The BM25 index is the warehouse's (`warehouse/page_index.py`, which
the unique-answer check also searches): built once per snapshot that changed `pages` and
reused from disk afterwards; page texts are read from the warehouse on first `open`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from warehouse import StoredPages, page_index

from datagen.tools.records import PageView, SearchHit

if TYPE_CHECKING:
    from warehouse import Warehouse

PAGE_CHARS = 4000
SNIPPET_CHARS = 240


class _Dual:
    """`PageTools.open(wh)` builds the tools; `tools.open(url)` opens a page (the contract
    names both `open`): on the class this resolves to one function, on an instance to the other."""

    def __init__(self, on_class, on_instance):
        self.on_class, self.on_instance = on_class, on_instance

    def __get__(self, obj, cls):
        if obj is None:
            return self.on_class.__get__(cls, cls)
        return self.on_instance.__get__(obj, cls)


class PageTools(StoredPages):
    """Search and open the stored pages of one warehouse (see the module docstring): the
    warehouse's page search (`warehouse.page_index.StoredPages`) with snippets and paging."""

    def _open_warehouse(cls, wh: "Warehouse", *, rebuild: bool = False) -> "PageTools":
        """Tools over `wh`'s pages; the index comes from the warehouse's cache when current."""
        return cls.of(wh, rebuild=rebuild)

    def search(self, query: str, k: int = 5) -> list[SearchHit]:  # type: ignore[override]
        """The `k` best pages for `query` (BM25), each with a snippet around its words."""
        words = set(page_index.tokenize([query])[0])
        return [SearchHit(h.url, h.title, snippet(self.page(h.url)[1], words), round(h.score, 4))
                for h in super().search(query, k)]

    def _open_page(self, url: str, offset: int = 0, length: int = PAGE_CHARS) -> PageView:
        """`length` characters of the page's stored text from `offset` (cut at a space)."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0 (got {offset})")
        title, text = self.page(url)
        end = min(len(text), offset + length)
        if end < len(text):
            space = text.rfind(" ", offset + length // 2, end)
            end = space + 1 if space > 0 else end
        return PageView(url, title, text[offset:end], offset, end if end < len(text) else None)

    open = _Dual(classmethod(_open_warehouse), _open_page)


def snippet(text: str, words: set[str], width: int = SNIPPET_CHARS) -> str:
    """The window of `text` holding the most query words (the start when none occurs)."""
    if not text:
        return ""
    best, best_at = -1, 0
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=[.!?]\s))\S", text)][:400] or [0]
    for at in starts:
        window = text[at:at + width].lower()
        n = sum(1 for w in words if w in window)
        if n > best:
            best, best_at = n, at
    return " ".join(text[best_at:best_at + width].split())
