"""Search and open over the warehouse's stored pages (the composer, solvers and the agent use them).

    records.py     SearchHit, PageView (typed results)
    index.py       the BM25 index (bm25s), persisted per snapshot that last changed `pages`
    page_tools.py  PageTools.open(wh): search(query, k) and open(url, offset)
"""

from datagen.tools.page_tools import PageTools
from datagen.tools.records import PageView, SearchHit

__all__ = ["PageTools", "SearchHit", "PageView"]
