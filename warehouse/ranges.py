"""`train_ready` one key range at a time: the trainer's data path in bounded memory.

Evaluating the view whole aggregates every question, verdict and difficulty row at once
(DuckDB's hash tables grow with the warehouse: ~155 MB above baseline at 250 k questions,
~430 MB at 1 M, measured with benchmarks' data). Here, when the warehouse holds more than
`range_rows` questions, one streaming pass splits the view's inputs by key range (the top
bits of hash(question_id, salt); Arrow files in a temporary folder, written batch by batch),
and the view's query (views.TRAIN_READY_SELECT) then runs on one range's rows at a time
(a Grace-hash-join-style partitioning). Memory is bounded by `range_rows`, the total work
stays one pass plus one aggregation, and a warehouse that fits in one range is read
directly, as before.

- `Scratch.build`: the rows of train_ready a reader serves (bands, `where`) with their key,
  one Arrow IPC file per (range, band) in key order; a band is then read one file at a
  time (`Scratch.read`, memory-mapped).
- `select_rows`: the first `limit` rows by an order that pass a condition (the trainer's
  evaluation items), keeping only the best `limit` between ranges.

A private DuckDB instance attaches the lake read-only and reads every input `AT` one
snapshot per build, so the ranges are consistent with each other; no read transaction
stays open on the catalog between queries (writers are never blocked).
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from warehouse.location import LAKE, WarehouseLocation, connect
from warehouse.views import train_ready_select

COLUMNS = ("question_id", "question", "answer", "answer_aliases", "band", "pass_rate")
RANGE_ROWS = 262_144  # questions per key range (at most): DuckDB holds ~160 MB for one range
# The view's inputs, and the columns of each it reads (views.TRAIN_READY_SELECT).
INPUTS = {
    "questions": ("question_id", "question", "answer", "answer_aliases", "hops",
                  "answer_type", "created_at"),
    "verdicts": ("question_id", "check_name", "status", "created_at"),
    "difficulty": ("question_id", "band", "pass_rate", "created_at"),
}
PART = "part"  # schema of the in-memory tables holding one range's inputs


def key_sql(salt: int, column: str = "question_id") -> str:
    return f"hash({column}, {int(salt)}::BIGINT)"


def ready_query(source: tuple[str, str], salt: int, where: str | None,
                columns: Sequence[str]) -> str:
    """train_ready rows over a (schema, AT clause) `source` that satisfy `where`, with their
    key as _k."""
    return (f"SELECT {', '.join(columns)}, {key_sql(salt, 't.question_id')} AS _k "
            f"FROM ({train_ready_select(source[0], at=source[1])}) t WHERE ({where or 'TRUE'})")


class Pinned:
    """A private DuckDB instance that attaches the lake read-only at one snapshot."""

    def __init__(self, location: WarehouseLocation, parent: str | Path | None = None,
                 snapshot: int | None = None):
        self.location = location
        self.con = connect(location)
        # DuckDB would keep the Parquet bytes it read in its buffer pool (up to its memory
        # limit): memory that grows with the warehouse, for data this instance reads once.
        self.con.execute("SET enable_external_file_cache = false")
        self.con.execute(location.attach_sql(read_only=True, snapshot=snapshot))
        self.dir = Path(tempfile.mkdtemp(prefix="hardqa-reader-", dir=parent))
        # the folder goes even when close() is never called (a reader dropped on an error)
        self._remove_dir = weakref.finalize(self, shutil.rmtree, self.dir, True)

    def ranges(self, snapshot: int, salt: int, range_rows: int) -> Iterator[tuple[str, str]]:
        """Yield, range by range in key order, the (schema, AT clause) whose questions,
        verdicts and difficulty hold that range's rows at `snapshot` (the lake itself when
        everything fits in one range)."""
        at = f"AT (VERSION => {int(snapshot)})"
        n = self.con.execute(f"SELECT count(*) FROM {LAKE}.questions {at}").fetchall()[0][0]
        if n <= range_rows:
            yield LAKE, at
            return
        bits = max(1, (-(-n // range_rows) - 1).bit_length())  # 2**bits ranges
        try:
            files = {t: self._split(t, at, salt, bits) for t in INPUTS}
            self.con.execute(f"CREATE SCHEMA IF NOT EXISTS {PART}")
            for j in range(1 << bits):
                for table, (paths, schema) in files.items():
                    self._load(table, paths.get(j), schema)
                yield PART, ""
        finally:
            for f in self.dir.glob("in-*.arrow"):
                f.unlink()

    def _split(self, table: str, at: str, salt: int, bits: int) -> tuple[dict[int, Path], Any]:
        """Stream `table`'s columns into one Arrow file per key range (top `bits` bits)."""
        import pyarrow as pa
        cols = ", ".join(INPUTS[table])
        reader = self.con.execute(f"SELECT {key_sql(salt)} >> {64 - bits} AS _r, {cols} "
                                  f"FROM {LAKE}.{table} {at}").to_arrow_reader(1 << 16)
        schema = reader.schema.remove(0)
        writers: dict[int, Any] = {}
        paths: dict[int, Path] = {}
        try:
            for rb in reader:
                r = rb.column(0).to_numpy()
                order = np.argsort(r, kind="stable")
                r, rb = r[order], rb.take(pa.array(order)).drop_columns(["_r"])
                cuts = [0, *(np.flatnonzero(np.diff(r)) + 1).tolist(), len(r)]
                for lo, hi in zip(cuts, cuts[1:]):
                    j = int(r[lo])
                    if j not in writers:
                        paths[j] = self.dir / f"in-{table}-{j}.arrow"
                        writers[j] = pa.ipc.new_file(str(paths[j]), schema)
                    writers[j].write_batch(rb.slice(lo, hi - lo))
        finally:
            for w in writers.values():
                w.close()
        return paths, schema

    def _load(self, table: str, path: Path | None, schema: Any) -> None:
        """Make PART.table hold one range's rows of `table`."""
        import pyarrow as pa
        data = pa.ipc.open_file(str(path)).read_all() if path else schema.empty_table()
        self.con.register("_range_input", data)
        self.con.execute(f"CREATE OR REPLACE TABLE {PART}.{table} AS SELECT * FROM _range_input")
        self.con.unregister("_range_input")

    def close(self) -> None:
        self.con.close()
        self._remove_dir()


class Scratch(Pinned):
    """The reader's served rows, one Arrow IPC file per (key range, band), each in key order,
    in a private temporary folder (removed by close()). A band is read one file at a time
    (memory-mapped), so the reader holds about one range's rows, whatever the table."""

    def __init__(self, location: WarehouseLocation, parent: str | Path | None = None,
                 snapshot: int | None = None):
        super().__init__(location, parent, snapshot)
        self.n_ranges = 0
        self.sizes: dict[tuple[int, str], int] = {}  # (range, band) -> rows
        self._one: dict[str, Any] = {}  # one range only: its tables stay in memory
        self._build_no = 0

    def build(self, snapshot: int, salt: int, bands: Sequence[str], where: str | None,
              to_items: Callable[[Any], list], range_rows: int = RANGE_ROWS) -> None:
        """Rebuild from the lake at `snapshot`, one key range at a time. One range only: its
        rows become items (`to_items`, per Arrow batch) while DuckDB computes the next batch,
        and stay in memory; several: one Arrow file per (range, band)."""
        import pyarrow.compute as pc
        cond = f"band IN ({', '.join(_quote(b) for b in bands)})"
        if where:
            cond += f" AND ({where})"
        self._clear()
        for j, source in enumerate(self.ranges(snapshot, salt, range_rows)):
            sql = ready_query(source, salt, cond, COLUMNS)
            if source[0] == LAKE:
                self._one = _items_by_band(self.con.execute(sql).to_arrow_reader(8192),
                                           bands, to_items)
                self.sizes = {(0, b): len(keys) for b, (_, keys) in self._one.items()}
            else:
                table = self.con.execute(sql).to_arrow_table()
                for b in bands:
                    part = table.filter(pc.equal(table["band"], b))
                    part = part.take(np.argsort(part["_k"].to_numpy(), kind="stable"))
                    self.sizes[(j, b)] = part.num_rows
                    if part.num_rows:
                        _write_ipc(self._file(j, b), part)
            self.n_ranges = j + 1

    def read(self, j: int, band: str, to_items: Callable[[Any], list]) -> Any:
        """Range j's (items, keys) of `band` in key order; None when it has none."""
        if not self.sizes.get((j, band)):
            return None
        if self._one:
            return self._one[band]
        import pyarrow as pa
        with pa.memory_map(str(self._file(j, band))) as source:
            table = pa.ipc.open_file(source).read_all()
        return to_items(table), table.column("_k").to_numpy()

    def left(self, band: str, after: int) -> int:
        """Rows of `band` with a key after `after` (-1: all of them)."""
        import pyarrow as pa
        total = 0
        for j in range(self.n_ranges):
            size = self.sizes.get((j, band), 0)
            if size and after >= 0:
                if self._one:
                    keys = self._one[band][1]
                else:
                    with pa.memory_map(str(self._file(j, band))) as source:
                        keys = pa.ipc.open_file(source).read_all().column("_k").to_numpy()
                size -= int(np.searchsorted(keys, np.uint64(after), side="right"))
            total += size
        return total

    def _file(self, j: int, band: str) -> Path:
        return self.dir / f"ready-{self._build_no}-{j}-{band}.arrow"

    def _clear(self) -> None:
        for f in self.dir.glob("ready-*.arrow"):
            f.unlink()
        self._build_no += 1
        self.n_ranges, self.sizes, self._one = 0, {}, {}


def _items_by_band(reader: Any, bands: Sequence[str],
                   to_items: Callable[[Any], list]) -> dict[str, tuple[list, np.ndarray]]:
    """Stream batches into per-band (items, keys), each sorted by key."""
    import pyarrow as pa
    import pyarrow.compute as pc
    items: dict[str, list] = {b: [] for b in bands}
    keys: dict[str, list] = {b: [] for b in bands}
    value_set = pa.array(list(bands), pa.string())
    for rb in reader:
        batch_items = to_items(rb)
        batch_keys = rb.column(rb.num_columns - 1).to_numpy()
        codes = pc.index_in(rb.column("band"), value_set=value_set).to_numpy(zero_copy_only=False)
        for i, b in enumerate(bands):
            idx = np.flatnonzero(codes == i)
            items[b].extend(map(batch_items.__getitem__, idx.tolist()))
            keys[b].append(batch_keys[idx])
    out = {}
    for b in bands:
        k = np.concatenate(keys[b]) if keys[b] else np.empty(0, np.uint64)
        order = np.argsort(k, kind="stable")
        out[b] = ([items[b][i] for i in order.tolist()], k[order])
    return out


def _write_ipc(path: Path, table: Any) -> None:
    import pyarrow as pa
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def select_rows(location: WarehouseLocation, where: str | None, order: str, limit: int,
                 snapshot: int | None = None, range_rows: int = RANGE_ROWS) -> list[dict]:
    """The first `limit` train_ready rows by `order` (an ORDER BY clause over train_ready's
    columns) among those satisfying `where`, as dicts; memory bounded by range_rows and
    limit: the best rows so far are merged with each range's best."""
    pinned = Pinned(location, snapshot=snapshot)
    cols = COLUMNS + ("hops", "answer_type", "created_at")
    try:
        if snapshot is None:
            snapshot = pinned.con.execute(
                f"SELECT max(snapshot_id) FROM {LAKE}.snapshots()").fetchall()[0][0]
        for i, source in enumerate(pinned.ranges(snapshot, 0, range_rows)):
            best = f"SELECT * FROM ({ready_query(source, 0, where, cols)}) " \
                   f"ORDER BY {order} LIMIT {int(limit)}"
            if i:
                best = (f"SELECT * FROM (SELECT * FROM best UNION ALL ({best})) "
                        f"ORDER BY {order} LIMIT {int(limit)}")
            pinned.con.execute(f"CREATE OR REPLACE TEMP TABLE best AS {best}")
        rows = pinned.con.execute(f"SELECT * FROM best ORDER BY {order}").to_arrow_table()
        return [{k: v for k, v in r.items() if k != "_k"} for r in rows.to_pylist()]
    finally:
        pinned.close()


def uniforms(seed: int, epoch: int, start: int, n: int) -> np.ndarray:
    """The uniform numbers of draws start..start+n-1 of an epoch (counter-based: a draw's
    number does not depend on how the stream was cut into batches or restarted)."""
    from warehouse.reader import _mix
    idx = np.arange(start, start + n, dtype=np.uint64)
    return (_mix(idx, seed, epoch) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def salt_of(seed: int, epoch: int) -> int:
    """The key salt of an epoch: a new pseudo-random order per (seed, epoch)."""
    return (int(seed) * 1_000_003 + int(epoch) * 7_919 + 1) % (1 << 62)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
