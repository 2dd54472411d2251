"""The in-memory copy of `train_ready` a long-lived process may ask for
(`warehouse.open(..., train_ready_copy=True)`: a dashboard, a notebook).

The view aggregates every question, verdict and difficulty row (seconds at a million
questions); such a process then pays that once per commit that changed the view's inputs
instead of once per query. Snapshots are immutable, so the copy is exact; it holds the whole
view, so the trainer never turns it on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from warehouse.location import LAKE
from warehouse.schema import RECORD_TYPES
from warehouse.snapshots import TRAIN_READY_DEPENDS

if TYPE_CHECKING:
    from warehouse.core import Warehouse

COPIES = "view_copies"  # in-memory database for per-snapshot copies; searched only on demand
_TRAIN_READY_REF = re.compile(r"(?<![.\w])train_ready\b", re.I)


def reads_only_train_ready(query: str) -> bool:
    """True when the query names train_ready and no other warehouse table (a table's name
    used as an alias only disables the copy, which is always safe)."""
    if not _TRAIN_READY_REF.search(query):
        return False
    words = set(re.findall(r"\w+", query.lower()))
    return not words & (set(RECORD_TYPES) | {"schema_versions", "lake"})


def refresh(wh: "Warehouse") -> None:
    """Materialise `train_ready` into the in-memory table when its inputs changed since the
    copy was made. No explicit transaction: an open read transaction would hold the SQLite
    catalog's lock and stall writers. The copy is labelled with a snapshot read *before* it
    is built, so a commit landing in between only causes one extra rebuild, never a stale
    answer."""
    snap = wh.current_snapshot()
    if wh.changed_since(wh._train_ready_snapshot, TRAIN_READY_DEPENDS, upto=snap):
        wh.con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {COPIES}")
        wh.con.execute(f"CREATE OR REPLACE TABLE {COPIES}.main.train_ready AS "
                       f"SELECT * FROM {LAKE}.train_ready")
    wh._train_ready_snapshot = snap
