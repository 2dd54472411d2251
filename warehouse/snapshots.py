"""Snapshots, and which of them changed some tables: one rule for every cache built from
the warehouse (a stage's input key, the trainer's stream, the in-memory train_ready copy).

A snapshot changed `tables` when one of its changes names one of them: rows inserted or
deleted (by table id), a table or view created, altered or dropped (by id or `main.NAME`).
Commits that only rewrite files (compaction, flushing inlined rows) change no table's
contents and count for none; a kind of change this code does not know counts for every
table, so a newer DuckLake can cost a rebuild, never a stale answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from warehouse.location import LAKE

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

TRAIN_READY_INPUTS = ("questions", "verdicts", "difficulty")
# What train_ready is read from: its input tables and the view itself (a migration recreates it).
TRAIN_READY_DEPENDS = (*TRAIN_READY_INPUTS, "train_ready")

_NAMED_CHANGES = frozenset({
    "tables_inserted_into", "tables_deleted_from", "inlined_insert", "inlined_delete",
    "tables_created", "tables_altered", "tables_dropped",
    "views_created", "views_altered", "views_dropped"})
_FILE_ONLY_CHANGES = frozenset({
    "merge_adjacent", "compacted_table", "flushed_inlined", "schemas_created"})


def changes_tables(changes: Any, keys: set[str]) -> bool:
    """Does one snapshot's `changes` (DuckLake's map of kind -> ids or names) change a table
    whose id or `main.NAME` is in `keys`?"""
    for kind, values in dict(changes or {}).items():
        if kind in _FILE_ONLY_CHANGES:
            continue
        if kind not in _NAMED_CHANGES or keys & {str(v) for v in values}:
            return True
    return False


class SnapshotScans:
    """The snapshot methods of `Warehouse` (a mixin: it reads the warehouse's connection)."""

    con: "duckdb.DuckDBPyConnection"
    sql: Callable[..., "pa.Table"]
    scalar: Callable[..., Any]

    def snapshots(self) -> list[dict[str, Any]]:
        return self.sql(f"SELECT * FROM {LAKE}.snapshots() ORDER BY snapshot_id").to_pylist()

    def current_snapshot(self) -> int:
        return self.scalar(f"SELECT max(snapshot_id) FROM {LAKE}.snapshots()")

    def last_changed(self, tables: Sequence[str]) -> int:
        """The id of the last snapshot that changed one of `tables` (0 if none did): a cache
        key for anything built from those tables."""
        keys = self._table_keys(tables)
        rows = self.con.execute(f"SELECT snapshot_id, changes FROM {LAKE}.snapshots() "
                                "ORDER BY snapshot_id DESC").fetchall()
        return next((int(snap) for snap, changes in rows if changes_tables(changes, keys)), 0)

    def changed_since(self, snapshot: int | None, tables: Sequence[str] = TRAIN_READY_DEPENDS,
                      upto: int | None = None) -> bool:
        """Did a snapshot after `snapshot` (up to `upto`) change one of `tables`? Unknown
        (no snapshot, or it was expired by maintain) -> True. Commits that only write
        rollouts or runs (the trainer's own) then cost no re-read of train_ready."""
        if snapshot is None:
            return True
        if upto is not None and upto == snapshot:
            return False  # nothing was committed in between: no catalog scan needed
        rows = self.con.execute(
            f"SELECT snapshot_id, changes FROM {LAKE}.snapshots() "
            "WHERE snapshot_id >= ? AND snapshot_id <= ? ORDER BY snapshot_id",
            [snapshot, upto if upto is not None else 2**62]).fetchall()
        if not rows or rows[0][0] != snapshot:
            return True
        keys = self._table_keys(tables)
        return any(changes_tables(changes, keys) for _, changes in rows[1:])

    def _table_keys(self, tables: Iterable[str]) -> set[str]:
        """How snapshot changes name `tables`: their ids and `main.NAME`."""
        tables = list(tables)
        if not tables:
            return set()
        marks = ", ".join("?" * len(tables))
        ids = self.con.execute(f"SELECT table_id FROM {LAKE}.table_info() WHERE table_name IN "
                               f"({marks})", tables).fetchall()
        return {str(i) for (i,) in ids} | {f"main.{t}" for t in tables}
