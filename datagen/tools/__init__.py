"""Search and open over the warehouse's stored pages (the composer, solvers and the agent use them).

The file tree is in datagen/README.md.
"""

from datagen.tools.page_tools import PageTools
from datagen.tools.records import PageView, SearchHit

__all__ = ["PageTools", "SearchHit", "PageView"]
