"""The one BM25 index over the stored pages, persisted under
`<warehouse root>/cache/bm25/<snapshot>`, and `StoredPages`: search and read over it.

The key is the last snapshot that changed `pages`: commits of questions, verdicts or runs
leave it valid, so a composer committing batches or a solver re-banding never rebuilds it.
It lives here, beside the pages, because two stages search them: datagen's page tools
(`datagen.tools.PageTools` adds snippets and paged `open`) and the unique-answer check of
`verifiers`, which imports no other stage (DESIGN.md §2).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from warehouse.core import Warehouse

log = logging.getLogger(__name__)

INDEX_FORMAT = 1
BM25_STOPWORDS = "en"


def pages_snapshot(wh: "Warehouse") -> int:
    """The id of the last snapshot whose commit touched the `pages` table."""
    return int(wh.last_changed(["pages"]))


def tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s
    return bm25s.tokenize(texts, stopwords=BM25_STOPWORDS, return_ids=False, show_progress=False)


@dataclass
class PageIndex:
    """BM25 over (title + text) of each stored page; `urls[i]` is document i."""

    urls: list[str]
    titles: list[str]
    retriever: Any
    snapshot: int

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """(document, score) of the best `k` pages with a positive score."""
        if not self.urls or k <= 0:
            return []
        return self.search_many([query], k)[0]

    def search_many(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        """`search` of each query, in one tokenize and one retrieve call: per call, bm25s's
        setup (its progress bars even when hidden) cost as much as the scoring. Each query is
        scored on its own, so the hits are those `search` gives one query at a time."""
        out: list[list[tuple[int, float]]] = [[] for _ in queries]
        if not self.urls or k <= 0 or not queries:
            return out
        tokens = tokenize(list(queries))
        todo = [i for i, t in enumerate(tokens) if t]
        if not todo:
            return out
        docs, scores = self.retriever.retrieve([tokens[i] for i in todo],
                                               k=min(k, len(self.urls)), show_progress=False)
        for row, i in enumerate(todo):  # Python numbers first: numpy scalars are slow to walk
            out[i] = [(d, s) for d, s in zip(docs[row].tolist(), scores[row].tolist()) if s > 0]
        return out


def build_index(urls: list[str], titles: list[str], texts: list[str],
                snapshot: int) -> PageIndex:
    import bm25s
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each build at DEBUG
    retriever = bm25s.BM25()
    if urls:
        corpus = [f"{t}\n{x}" for t, x in zip(titles, texts)]
        retriever.index(bm25s.tokenize(corpus, stopwords=BM25_STOPWORDS, show_progress=False),
                        show_progress=False)
    return PageIndex(urls, titles, retriever, snapshot)


def index_dir(root: Path, snapshot: int) -> Path:
    return Path(root) / "cache" / "bm25" / str(snapshot)


def save(index: PageIndex, folder: Path) -> None:
    """Write to a temporary folder, then rename: a reader never sees half an index."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    if index.urls:
        index.retriever.save(str(tmp / "bm25"))
    meta = {"format": INDEX_FORMAT, "snapshot": index.snapshot, "urls": index.urls,
            "titles": index.titles}
    (tmp / "docs.json").write_text(json.dumps(meta), encoding="utf-8")
    try:
        tmp.rename(folder)
    except OSError:  # another process saved the same snapshot first: theirs is as good
        shutil.rmtree(tmp, ignore_errors=True)


def load(folder: Path) -> PageIndex | None:
    """The index saved in `folder`, or None when absent, of an older format or unreadable."""
    import bm25s
    try:
        meta = json.loads((folder / "docs.json").read_text(encoding="utf-8"))
        if meta.get("format") != INDEX_FORMAT:
            return None
        retriever = bm25s.BM25.load(str(folder / "bm25")) if meta["urls"] else bm25s.BM25()
    except (OSError, ValueError, KeyError) as exc:
        log.info("BM25 index at %s unusable (%s); rebuilding", folder, exc)
        return None
    return PageIndex(meta["urls"], meta["titles"], retriever, int(meta["snapshot"]))


_LATEST_PAGES = ("SELECT url, arg_max(final_url, fetched_at) AS final_url, "
                 "arg_max(title, fetched_at) AS title, arg_max(text, fetched_at) AS text "
                 "FROM pages GROUP BY url ORDER BY url")


@dataclass(frozen=True)
class PageHit:
    """One ranked page: its URL, title and BM25 score."""

    url: str
    title: str
    score: float


class StoredPages:
    """The warehouse's pages: BM25 `search` and `page(url) -> (title, text)`. The index comes
    from the warehouse's cache when current; texts are read on first use."""

    def __init__(self, index: PageIndex, wh: "Warehouse | None" = None,
                 texts: dict[str, tuple[str, str]] | None = None,
                 aliases: dict[str, str] | None = None):
        self.index = index
        self._wh = wh
        self._texts = texts
        self._aliases: dict[str, str] = aliases or {}

    @classmethod
    def of(cls, wh: "Warehouse", *, rebuild: bool = False):
        """Search over `wh`'s pages (the index persisted per snapshot that changed `pages`)."""
        snap = pages_snapshot(wh)
        folder = index_dir(wh.root, snap)
        index = None if rebuild else load(folder)
        texts, aliases = None, {}
        if index is None:
            texts = read_pages(wh, aliases)
            index = build_index(list(texts), [t for t, _ in texts.values()],
                          [x for _, x in texts.values()], snap)
            save(index, folder)
            log.info("built the BM25 index of %d pages for snapshot %d", len(texts), snap)
        return cls(index, wh, texts, aliases)

    @classmethod
    def from_pages(cls, pages: dict[str, tuple[str, str]]):
        """Search over in-memory pages {url: (title, text)} (not persisted; tests, small sites)."""
        index = build_index(list(pages), [t for t, _ in pages.values()],
                      [x for _, x in pages.values()], -1)
        return cls(index, None, dict(pages))

    def current_for(self, wh: "Warehouse") -> bool:
        """Whether these are `wh`'s pages as they stand (no commit to `pages` since)."""
        return self._wh is wh and self.index.snapshot == pages_snapshot(wh)

    @property
    def urls(self) -> list[str]:
        return self.index.urls

    def search(self, query: str, k: int = 5) -> list[PageHit]:
        """The `k` best pages for `query` with a positive BM25 score, best first."""
        return [PageHit(self.index.urls[d], self.index.titles[d], score)
                for d, score in self.index.search(query, k)]

    def search_many(self, queries: list[str], k: int = 5) -> list[list[PageHit]]:
        """`StoredPages.search` of each query, batched (the checks and solvers that search
        once per question)."""
        return [[PageHit(self.index.urls[d], self.index.titles[d], score) for d, score in hits]
                for hits in self.index.search_many(queries, k)]

    def page(self, url: str) -> tuple[str, str]:
        """(title, full stored text) of a page, by its URL or its final URL; KeyError if absent."""
        texts = self._load_texts()
        key = url if url in texts else self._aliases.get(url)
        if key is None:
            raise KeyError(f"no stored page {url}")
        return texts[key]

    def load_texts(self) -> None:
        """Read every page's text now rather than on the first `page` call."""
        self._load_texts()

    def _load_texts(self) -> dict[str, tuple[str, str]]:
        if self._texts is None:
            if self._wh is None:
                raise KeyError("no stored pages")
            self._texts = read_pages(self._wh, self._aliases)
        return self._texts


def read_pages(wh: "Warehouse", aliases: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """{url: (title, text)} of every stored page (latest fetch), in URL order; `aliases`
    receives final URL -> URL where a fetch was redirected."""
    out: dict[str, tuple[str, str]] = {}
    for row in wh.sql(_LATEST_PAGES).to_pylist():
        out[row["url"]] = (row["title"] or "", row["text"] or "")
        if aliases is not None and row["final_url"] and row["final_url"] != row["url"]:
            aliases[row["final_url"]] = row["url"]
    return out
