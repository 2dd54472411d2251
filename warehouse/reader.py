"""The trainer's streaming reader over `train_ready` (DESIGN.md §3).

    reader = StreamReader(wh_path, band_weights={"easy": 1, "medium": 2, "hard": 2}, seed=0)
    for item in reader: ...                 # TrainItem, forever (or max_epochs)
    batch = reader.next_batch(64)
    state = reader.state_dict()             # JSON-serialisable; save with the checkpoint
    reader.load_state_dict(state)           # in a new process: continues where it stopped

How it samples:
- Within an epoch every row of `train_ready` (that passes `where` and whose band has a
  positive weight) is served exactly once. Each draw first picks a band with probability
  proportional to its weight among the bands that still have rows this epoch (a band that
  runs out gives its share to the others), then the next row of that band.
- The order inside a band is a pseudo-random permutation fixed by (seed, epoch,
  question_id), so a restored cursor (epoch, the ids already served, the RNG state)
  continues with exactly the rows and order the uninterrupted reader would have produced.
- New rows committed to the warehouse join the current epoch: the reader re-reads
  `train_ready` when the warehouse has a new snapshot and `refresh_s` has passed, and
  always before ending an epoch. A row whose band changed moves to its new band; a row
  that left `train_ready` (e.g. failed a re-check) is no longer served.

Rows are held in memory as one Arrow table (a refresh is one scan of the view), which is
what makes the reader about as fast as a bare scan; budget ~0.5 KB per question.
Not thread-safe: use one reader per consumer.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import time
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from warehouse.core import LAKE, Warehouse
from warehouse.store import open as open_warehouse
from warehouse.schema import BANDS

log = logging.getLogger(__name__)

STATE_VERSION = 1
COLUMNS = ("question_id", "question", "answer", "answer_aliases", "band", "pass_rate")


class TrainItem(NamedTuple):
    """One training question (a NamedTuple: immutable, typed, and cheap to build in bulk)."""

    question_id: str
    question: str
    answer: str
    answer_aliases: tuple[str, ...]
    band: str
    pass_rate: float | None


# Builds a TrainItem from a row tuple entirely in C (NamedTuple._make is Python-level).
_MAKE_ITEM = functools.partial(tuple.__new__, TrainItem)


class StreamReader:
    """Band-mixed sampling without replacement over `train_ready`, with a restorable cursor."""

    def __init__(self, source: str | Path | Warehouse | None, band_weights: dict[str, float],
                 seed: int = 0, where: str | None = None, refresh_s: float = 30.0,
                 max_epochs: int | None = None):
        self.band_weights = _check_weights(band_weights)
        self.seed = int(seed)
        self.where = where
        self.refresh_s = refresh_s
        self.max_epochs = max_epochs
        self._owns = not isinstance(source, Warehouse)
        self._wh = open_warehouse(source, create=False, read_only=True) if self._owns else source
        self.epoch = 0
        self._served: set[str] = set()
        self._rng = np.random.default_rng(self.seed)
        self._snapshot: int | None = None
        self._loaded_at = 0.0
        self._refresh()

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
        weighted bands, or when `max_epochs` is reached."""
        out: list[TrainItem] = []
        self._maybe_refresh()
        while len(out) < n:
            out.extend(self._draw(n - len(out)))
            if len(out) < n and not self._next_epoch():
                break
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "epoch": self.epoch, "seed": self.seed,
                "served": sorted(self._served), "rng": self._rng.bit_generator.state,
                "band_weights": dict(self.band_weights), "where": self.where}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"reader state version {state.get('version')} is not "
                             f"{STATE_VERSION}; it was saved by another version of the reader")
        self.epoch = int(state["epoch"])
        self.seed = int(state["seed"])
        self._served = set(state["served"])
        self._rng = np.random.default_rng(self.seed)
        self._rng.bit_generator.state = state["rng"]
        self._rebuild()

    def remaining(self) -> dict[str, int]:
        """Rows left in the current epoch, per band."""
        return {b: len(order) - self._pos[b] for b, order in self._order.items()}

    def close(self) -> None:
        if self._owns:
            self._wh.close()

    def __enter__(self) -> "StreamReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- loading ---------------------------------------------------------------------

    def _maybe_refresh(self) -> None:
        if time.monotonic() - self._loaded_at >= self.refresh_s:
            self._refresh()

    def _refresh(self, force: bool = False) -> None:
        """Re-read train_ready when the warehouse has a new snapshot (or when forced)."""
        self._loaded_at = time.monotonic()
        snap = self._wh.current_snapshot()
        if not force and not self._wh.changed_since(self._snapshot, upto=snap):
            self._snapshot = snap
            return
        self._snapshot = snap
        bands = [b for b, w in self.band_weights.items() if w > 0]
        sql = (f"SELECT {', '.join(COLUMNS)}, hash(question_id) AS _h "
               f"FROM {LAKE}.train_ready WHERE band IN ({', '.join('?' * len(bands))})")
        if self.where:
            sql += f" AND ({self.where})"
        rows: list[TrainItem] = []
        ids, band_col, hashes = [], [], []
        with _no_gc():
            # Convert each batch while DuckDB's threads produce the next one.
            for rb in self._wh.con.execute(sql, bands).to_arrow_reader(8192):
                cols = [rb.column(i).to_pylist() for i in range(len(COLUMNS))]
                cols[3] = [tuple(a) if a else () for a in cols[3]]  # answer_aliases
                rows.extend(map(_MAKE_ITEM, zip(*cols)))
                ids.append(rb.column(0))
                band_col.append(rb.column(4))
                hashes.append(rb.column(len(COLUMNS)).to_numpy())
        self._rows = rows
        self._ids = pa.chunked_array(ids, pa.string())
        self._bands = pa.chunked_array(band_col, pa.string())
        self._hashes = np.concatenate(hashes).astype(np.uint64) if hashes else np.empty(0, np.uint64)
        self._rebuild()

    def _rebuild(self) -> None:
        """Per band: the rows not yet served this epoch, in this epoch's priority order."""
        keep = np.ones(len(self._rows), dtype=bool)
        if self._served:
            served = pa.array(list(self._served), pa.string())
            keep = ~pc.is_in(self._ids, value_set=served).to_numpy(zero_copy_only=False)
        prio = _mix(self._hashes, self.seed, self.epoch)
        self._order, self._pos = {}, {}
        for b in self.band_weights:
            if self.band_weights[b] > 0:
                in_band = pc.equal(self._bands, b).to_numpy(zero_copy_only=False)
                idx = np.flatnonzero(in_band & keep)
                self._order[b] = idx[np.argsort(prio[idx], kind="stable")]
                self._pos[b] = 0

    def _next_epoch(self) -> bool:
        """Start the next epoch if this one is really over; False when nothing is left."""
        self._refresh()  # rows committed since the last read join this epoch
        if any(self.remaining().values()):
            return True
        if self.max_epochs is not None and self.epoch + 1 >= self.max_epochs:
            return False
        if not self._served:  # nothing to serve at all
            return False
        self.epoch += 1
        self._served.clear()
        self._rebuild()
        return any(self.remaining().values())

    # ---- sampling --------------------------------------------------------------------

    def _draw(self, n: int) -> list[TrainItem]:
        """Draw up to n rows of this epoch.

        One uniform number per served row picks its band, and no number is drawn that is
        not used, so the stream does not depend on how it is cut into batches (which is
        what lets a restored cursor continue exactly)."""
        k = min(n, sum(self.remaining().values()))
        u = self._rng.random(k)
        picks = np.empty(k, dtype=np.int64)
        i = 0
        while i < k:
            bands = [b for b in self._order if self._pos[b] < len(self._order[b])]
            w = np.array([self.band_weights[b] for b in bands])
            cum = np.cumsum(w) / w.sum()
            choice = np.minimum(np.searchsorted(cum, u[i:], side="right"), len(bands) - 1)
            end = len(choice)
            for j, b in enumerate(bands):  # stop where a band runs out; remap the rest
                hits = np.flatnonzero(choice == j)
                room = len(self._order[b]) - self._pos[b]
                if len(hits) > room:
                    end = min(end, int(hits[room]))
            for j, b in enumerate(bands):
                hits = np.flatnonzero(choice[:end] == j)
                picks[i + hits] = self._order[b][self._pos[b]:self._pos[b] + len(hits)]
                self._pos[b] += len(hits)
            i += end
        return self._items(picks.tolist())

    def _items(self, picks: list[int]) -> list[TrainItem]:
        rows = self._rows
        items = [rows[i] for i in picks]
        self._served.update([it[0] for it in items])
        return items


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC while building millions of acyclic tuples: otherwise it rescans
    the growing heap again and again (the objects made here hold no reference cycles)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _mix(h: np.ndarray, seed: int, epoch: int) -> np.ndarray:
    """splitmix64 of (row hash ^ salt): an independent pseudo-random order per seed and epoch."""
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
