"""`search(query, k)` and `open(url, offset)` over the warehouse's stored pages.

One implementation for the composer (INJECT on real pages), the difficulty solvers and the
training search agent. The index is built once per snapshot that changed `pages` and
reused from disk afterwards; page texts are read from the warehouse on first `open`.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from datagen.tools import index as bm25_index
from datagen.tools.records import PageView, SearchHit

log = logging.getLogger(__name__)

PAGE_CHARS = 4000
SNIPPET_CHARS = 240
_LATEST_PAGES = ("SELECT url, arg_max(final_url, fetched_at) AS final_url, "
                 "arg_max(title, fetched_at) AS title, arg_max(text, fetched_at) AS text "
                 "FROM pages GROUP BY url ORDER BY url")


class _Dual:
    """`PageTools.open(wh)` builds the tools; `tools.open(url)` opens a page (the contract
    names both `open`): on the class this resolves to one function, on an instance to the other."""

    def __init__(self, on_class, on_instance):
        self.on_class, self.on_instance = on_class, on_instance

    def __get__(self, obj, cls):
        if obj is None:
            return self.on_class.__get__(cls, cls)
        return self.on_instance.__get__(obj, cls)


class PageTools:
    """Search and open the stored pages of one warehouse (see the module docstring)."""

    def __init__(self, index: bm25_index.PageIndex, wh: Any = None,
                 texts: dict[str, tuple[str, str]] | None = None,
                 aliases: dict[str, str] | None = None):
        self.index = index
        self._wh = wh
        self._texts = texts
        self._aliases: dict[str, str] = aliases or {}

    def _open_warehouse(cls, wh: Any, *, rebuild: bool = False) -> "PageTools":
        """Tools over `wh`'s pages; the index comes from the warehouse's cache when current."""
        snap = bm25_index.pages_snapshot(wh)
        folder = bm25_index.index_dir(wh.root, snap)
        index = None if rebuild else bm25_index.load(folder)
        texts, aliases = None, {}
        if index is None:
            texts = _read_pages(wh, aliases)
            index = bm25_index.build(list(texts), [t for t, _ in texts.values()],
                                     [x for _, x in texts.values()], snap)
            bm25_index.save(index, folder)
            log.info("built the BM25 index of %d pages for snapshot %d", len(texts), snap)
        return cls(index, wh, texts, aliases)

    @classmethod
    def from_pages(cls, pages: dict[str, tuple[str, str]]) -> "PageTools":
        """Tools over in-memory pages {url: (title, text)} (not persisted; tests, small sites)."""
        index = bm25_index.build(list(pages), [t for t, _ in pages.values()],
                                 [x for _, x in pages.values()], -1)
        return cls(index, None, dict(pages))

    @property
    def urls(self) -> list[str]:
        return self.index.urls

    def search(self, query: str, k: int = 5) -> list[SearchHit]:
        """The `k` best pages for `query` (BM25), each with a snippet around its words."""
        hits = []
        words = {w for w in bm25_index.tokenize([query])[0]}
        for doc, score in self.index.search(query, k):
            url = self.index.urls[doc]
            title, text = self.page(url)
            hits.append(SearchHit(url, title, snippet(text, words), round(score, 4)))
        return hits

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

    def page(self, url: str) -> tuple[str, str]:
        """(title, full stored text) of a page, by its URL or its final URL; KeyError if absent."""
        texts = self._load_texts()
        key = url if url in texts else self._aliases.get(url)
        if key is None:
            raise KeyError(f"no stored page {url}")
        return texts[key]

    def _load_texts(self) -> dict[str, tuple[str, str]]:
        if self._texts is None:
            self._texts = _read_pages(self._wh, self._aliases)
        return self._texts


def _read_pages(wh: Any, aliases: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """{url: (title, text)} of every stored page (latest fetch), in URL order."""
    out: dict[str, tuple[str, str]] = {}
    for row in wh.sql(_LATEST_PAGES).to_pylist():
        out[row["url"]] = (row["title"] or "", row["text"] or "")
        if aliases is not None and row["final_url"] and row["final_url"] != row["url"]:
            aliases[row["final_url"]] = row["url"]
    return out


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
