"""The trainer's streaming reader over `train_ready` (DESIGN.md §3), flat in memory.

    reader = StreamReader(wh_path, band_weights={"easy": 1, "medium": 2, "hard": 2}, seed=0)
    for item in reader: ...                 # TrainItem, forever (or max_epochs)
    batch = reader.next_batch(64)
    state = reader.state_dict()             # a few hundred bytes of JSON, whatever the table
    reader.load_state_dict(state)           # in a new process: continues where it stopped

How it samples:
- Every row has a key, hash(question_id, salt) with the salt fixed by (seed, epoch): a
  pseudo-random order, new each epoch. Within an epoch every row of `train_ready` (that
  passes `where` and whose band has a positive weight) is served exactly once, each band
  in key order.
- Each draw picks a band with probability proportional to its weight among the bands that
  still have rows this epoch (a band that runs out gives its share to the others). Draw i
  of an epoch uses its own uniform number, a hash of (seed, epoch, i), so the stream does
  not depend on how it is cut into batches.
- The cursor is the epoch, the number of draws, and per band the key of the last row
  served. Restored in a new process, it continues with exactly the items the
  uninterrupted reader would have produced.

New commits: the reader checks for a new snapshot that touched questions, verdicts or
difficulty every `refresh_s` seconds and always before ending an epoch, and then re-reads.
A row committed during an epoch JOINS THAT EPOCH IF ITS KEY IS AHEAD OF ITS BAND'S CURSOR
(not yet reached), and otherwise waits for the next epoch: a row committed half-way
through an epoch has an even chance of each. A row that left `train_ready` (e.g. failed a
re-check) is no longer served. A row whose band changed is served in its new band's order,
so within that epoch it may be served twice or not at all (the cursor keeps no per-row
state; that is what keeps it small).

Exploration and re-tries (the training loop's starvation rule, training/reband.py): with
`explore_share` ε > 0 the bands the weights exclude (weight 0 or absent, e.g. too_easy and
too_hard) are read too, and each draw goes to them with probability ε while they have rows
left this epoch (split evenly among them); the epoch is still over when the weighted bands
run out, so explored rows that were not drawn wait for the next epoch. `retry(items)` queues
items served before the next draws (not counted as draws, so the stream's order is the
same). When the weighted bands have no rows at all, `next_batch` returns short and
`ended` says why ("no_rows" or "max_epochs"); `dry_message()` is the line to show.

Memory: nothing grows with the table. Each (re)read evaluates the view one key range of at
most `range_rows` questions at a time into Arrow files in a temporary folder, one per
(range, band) in key order (warehouse/ranges.py; removed on close); a band holds the rows
of one range at a time. Disk: one copy of the served columns. A (re)read happens at the
first draw, on each new epoch, and when commits touched train_ready's inputs.
Not thread-safe: use one reader per consumer.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import time
from collections import deque
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

import numpy as np

from warehouse import ranges
from warehouse.core import Warehouse
from warehouse.store import open as open_warehouse
from warehouse.schema import BANDS

log = logging.getLogger(__name__)

STATE_VERSION = 2
class TrainItem(NamedTuple):
    """One training question (a NamedTuple: immutable, typed, and cheap to build in bulk)."""

    question_id: str
    question: str
    answer: str
    answer_aliases: tuple[str, ...] = ()
    band: str = ""                   # "": not banded yet (a built-in task's question)
    pass_rate: float | None = None


# Builds a TrainItem from a row tuple entirely in C (NamedTuple._make is Python-level).
_MAKE_ITEM = functools.partial(tuple.__new__, TrainItem)


class _Band:
    """One band's loaded rows (one key range's, after the cursor) and the next range."""

    def __init__(self) -> None:
        self.items: list[TrainItem] = []
        self.keys = np.empty(0, np.uint64)
        self.pos = 0
        self.next_range = 0

    def room(self) -> int:
        return len(self.items) - self.pos


class StreamReader:
    """Band-mixed sampling without replacement over `train_ready`, with a small cursor."""

    def __init__(self, source: str | Path | Warehouse | None, band_weights: dict[str, float],
                 seed: int = 0, where: str | None = None, refresh_s: float = 30.0,
                 max_epochs: int | None = None, *, range_rows: int = ranges.RANGE_ROWS,
                 scratch_dir: str | Path | None = None, explore_share: float = 0.0):
        self.band_weights = _check_weights(band_weights)
        self.seed = int(seed)
        self.where = where
        self.refresh_s = refresh_s
        self.max_epochs = max_epochs
        self.range_rows = int(range_rows)
        self._owns = not isinstance(source, Warehouse)
        self._wh = open_warehouse(source, create=False, read_only=True) if self._owns else source
        self._main = [b for b, w in self.band_weights.items() if w > 0]
        self._cursor: dict[str, int] = {}  # band -> last key served; explore() keeps it
        self.explore(explore_share)
        self._retry: deque[TrainItem] = deque()
        self.ended: str | None = None  # why the last next_batch came back short
        self._scratch = ranges.Scratch(self._wh.location, scratch_dir, self._wh.snapshot)
        self.epoch = 0
        self._draws = 0
        self.rebuilds = 0  # how often train_ready was re-read (tests, logs)
        self._built = False  # built on first use, so a load_state_dict right after is free

    # ---- public API ------------------------------------------------------------------

    def __iter__(self) -> Iterator[TrainItem]:
        while True:
            batch = self.next_batch(256)
            if not batch:
                return
            yield from batch

    def next_batch(self, n: int) -> list[TrainItem]:
        """Up to n items, crossing into the next epoch when this one runs out.

        Returns fewer than n (possibly none) only when `train_ready` has no rows for the
        weighted bands, or when `max_epochs` is reached (`ended` says which)."""
        out: list[TrainItem] = [self._retry.popleft() for _ in range(min(n, len(self._retry)))]
        self._ensure_built()
        self._maybe_refresh()
        self.ended = None
        while len(out) < n:
            out.extend(self._draw(n - len(out)))
            if len(out) < n and not self._next_epoch():
                break
        return out

    def explore(self, share: float, bands: Iterable[str] | None = None) -> None:
        """Draw a share ε of the stream from `bands` (default: those the weights exclude)."""
        if not 0 <= share < 1:
            raise ValueError(f"explore_share must be in [0, 1), got {share}")
        bands = [b for b in BANDS if b not in self._main] if bands is None else list(bands)
        unknown = sorted(set(bands) - set(BANDS))
        if unknown:
            raise ValueError(f"unknown band(s) {unknown} to explore; bands are {list(BANDS)}")
        self.explore_share = float(share)
        self._explore = [b for b in bands if b not in self._main] if share > 0 else []
        self._bands = self._main + self._explore
        self._cursor = {b: self._cursor.get(b, -1) for b in self._bands}
        self._built = False

    def retry(self, items: Iterable[TrainItem]) -> int:
        """Queue items to serve before the next draws (re-tries of excluded questions)."""
        before = len(self._retry)
        self._retry.extend(items)
        return len(self._retry) - before

    def dry_message(self) -> str:
        """Why the stream came back short, in one line."""
        if self.ended == "max_epochs":
            return f"the reader served its max_epochs = {self.max_epochs}"
        return (f"train_ready has no rows left in the streamed bands ({', '.join(self._main)}"
                f"{' + explored ' + ', '.join(self._explore) if self._explore else ''})")

    def state_dict(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "epoch": self.epoch, "seed": self.seed,
                "draws": self._draws, "cursor": dict(self._cursor),
                "band_weights": dict(self.band_weights), "where": self.where,
                "explore_share": self.explore_share}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"reader state version {state.get('version')} is not "
                             f"{STATE_VERSION}; it was saved by another version of the reader")
        self.epoch, self.seed = int(state["epoch"]), int(state["seed"])
        self._draws = int(state["draws"])
        saved = {b: int(c) for b, c in state["cursor"].items() if b in BANDS}
        self._cursor = {**saved, **{b: saved.get(b, -1) for b in self._bands}}
        self._built = False

    def remaining(self) -> dict[str, int]:
        """Rows left in the current epoch, per band."""
        self._ensure_built()
        return dict(self._left)

    def key(self, question_id: str) -> int:
        """The row's key in this epoch's order (compare with state_dict()['cursor'])."""
        salt = ranges.salt_of(self.seed, self.epoch)
        return int(self._scratch.con.execute(f"SELECT {ranges.key_sql(salt, '?::VARCHAR')}",
                                             [question_id]).fetchall()[0][0])

    def close(self) -> None:
        self._scratch.close()
        if self._owns:
            self._wh.close()

    def __enter__(self) -> "StreamReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- loading ---------------------------------------------------------------------

    def _ensure_built(self) -> None:
        if not self._built:
            self._build()

    def _maybe_refresh(self) -> None:
        if time.monotonic() - self._loaded_at >= self.refresh_s:
            self._refresh()

    def _refresh(self) -> None:
        """Re-read train_ready when a commit since the last read touched its inputs."""
        self._loaded_at = time.monotonic()
        snap = self._wh.current_snapshot()
        if self._wh.changed_since(self._snapshot, upto=snap):
            self._build(snap)
        self._snapshot = snap

    def _build(self, snap: int | None = None) -> None:
        """Rebuild the scratch copy for this epoch's order; bands restart at their cursor."""
        self._snapshot = self._wh.snapshot if self._wh.snapshot is not None else (
            snap if snap is not None else self._wh.current_snapshot())
        self._loaded_at = time.monotonic()
        with _no_gc():
            self._scratch.build(self._snapshot, ranges.salt_of(self.seed, self.epoch),
                                self._bands, self.where, _to_items, self.range_rows)
        self._left = {b: self._scratch.left(b, self._cursor[b]) for b in self._bands}
        self._loaded = {b: _Band() for b in self._bands}
        self._built = True
        self.rebuilds += 1

    def _fill(self, band: str) -> None:
        """Load the band's rows of its next key range that has rows after its cursor."""
        st, cursor = self._loaded[band], self._cursor[band]
        while st.room() == 0 and st.next_range < self._scratch.n_ranges:
            with _no_gc():
                got = self._scratch.read(st.next_range, band, _to_items)
            st.next_range += 1
            if got is None:
                continue
            items, keys = got
            start = int(np.searchsorted(keys, np.uint64(cursor), side="right")) if cursor >= 0 else 0
            st.items, st.keys, st.pos = items[start:], keys[start:], 0
        if st.room() == 0:
            self._left[band] = 0  # (never expected: the counts come from the same rows)

    def _next_epoch(self) -> bool:
        """Start the next epoch if this one is really over; False when nothing is left."""
        self._refresh()  # rows committed ahead of the cursors join this epoch
        if self._main_left():
            return True
        if self.max_epochs is not None and self.epoch + 1 >= self.max_epochs:
            self.ended = "max_epochs"
            return False
        self.ended = "no_rows"
        if self._draws == 0:  # nothing to serve at all
            return False
        self.epoch += 1
        self._draws = 0
        self._cursor = {b: -1 for b in self._bands}
        self._build()
        if self._main_left():
            self.ended = None
            return True
        return False

    def _main_left(self) -> bool:
        return any(self._left[b] for b in self._main)

    # ---- sampling --------------------------------------------------------------------

    def _draw(self, n: int) -> list[TrainItem]:
        """Draw up to n rows of this epoch, refilling a band's rows when they run out."""
        out: list[TrainItem] = []
        while len(out) < n:
            for b in self._bands:
                if self._left[b] and not self._loaded[b].room():
                    self._fill(b)
            live = [b for b in self._bands if self._left[b]]
            if not any(b in self._main for b in live):  # the epoch is over
                break
            out.extend(self._draw_loaded(live, min(n - len(out), sum(self._left.values()))))
        return out

    def _draw_loaded(self, live: list[str], k: int) -> list[TrainItem]:
        """Up to k draws among `live` bands, stopping where a band's loaded rows run out."""
        u = ranges.uniforms(self.seed, self.epoch, self._draws, k)
        w = self._draw_weights(live)
        choice = np.minimum(np.searchsorted(np.cumsum(w) / w.sum(), u, side="right"),
                            len(live) - 1)
        end = k
        for j, b in enumerate(live):
            hits = np.flatnonzero(choice == j)
            room = self._loaded[b].room()
            if len(hits) > room:
                end = min(end, int(hits[room]))
        picks: list[Any] = [None] * end
        for j, b in enumerate(live):
            hits = np.flatnonzero(choice[:end] == j).tolist()
            if not hits:
                continue
            st = self._loaded[b]
            for h, item in zip(hits, st.items[st.pos:st.pos + len(hits)]):
                picks[h] = item
            st.pos += len(hits)
            self._cursor[b] = int(st.keys[st.pos - 1])
            self._left[b] -= len(hits)
        self._draws += end
        return picks


    def _draw_weights(self, live: list[str]) -> np.ndarray:
        """Band weights among live bands; the live explored bands share ε of the total."""
        main = sum(self.band_weights[b] for b in live if b in self._main)
        explored = [b for b in live if b not in self._main]
        each = self.explore_share / (1 - self.explore_share) * main / max(len(explored), 1)
        return np.array([self.band_weights[b] if b in self._main else each for b in live])


def _to_items(batch: Any) -> list[TrainItem]:
    """TrainItems from an Arrow batch or table whose first columns are ranges.COLUMNS."""
    cols = [batch.column(i).to_pylist() for i in range(len(ranges.COLUMNS))]
    cols[3] = [tuple(a) if a else () for a in cols[3]]  # answer_aliases
    return list(map(_MAKE_ITEM, zip(*cols)))


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building many acyclic tuples: otherwise it rescans the
    growing heap again and again (the objects made here hold no reference cycles)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def select_items(source: str | Path | Warehouse, where: str | None = None,
                 order: str = "question_id", limit: int = 64,
                 range_rows: int = ranges.RANGE_ROWS) -> tuple[TrainItem, ...]:
    """The first `limit` train_ready rows by `order` among those satisfying `where` (both SQL
    over train_ready's columns): the trainer's evaluation items. Evaluated one key range at
    a time, so memory stays bounded (a query through `Warehouse.sql` would aggregate the
    whole view at once)."""
    wh = source if isinstance(source, Warehouse) else open_warehouse(
        source, create=False, read_only=True)
    try:
        rows = ranges.select_rows(wh.location, where, order, limit, wh.snapshot, range_rows)
    finally:
        if wh is not source:
            wh.close()
    return tuple(item_from_row(r) for r in rows)


def item_from_row(row: dict) -> TrainItem:
    """A TrainItem from one train_ready row as a dict (SQL's list of aliases as a tuple)."""
    return TrainItem(row["question_id"], row["question"], row["answer"],
                     tuple(row["answer_aliases"] or ()), row["band"], row["pass_rate"])


def _mix(h: np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """splitmix64 of (value ^ salt): an independent pseudo-random stream per seed and epoch."""
    salt = np.uint64((seed * 0x9E3779B97F4A7C15 + epoch * 0xBF58476D1CE4E5B9) % (1 << 64))
    with np.errstate(over="ignore"):
        z = h ^ salt
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _check_weights(weights: dict[str, float]) -> dict[str, float]:
    unknown = sorted(set(weights) - set(BANDS))
    if unknown:
        raise ValueError(f"unknown band(s) {unknown} in band_weights; bands are {list(BANDS)}")
    if any(w < 0 for w in weights.values()):
        raise ValueError("band weights must be >= 0")
    if not any(w > 0 for w in weights.values()):
        raise ValueError("at least one band needs a positive weight")
    return {b: float(weights[b]) for b in BANDS if b in weights}
