"""The open warehouse: a thin layer over DuckLake (DuckDB + Parquet + a catalog).

DuckLake gives atomic multi-table commits, snapshots and time travel; `Warehouse` only adds
the table schemas, retry-on-conflict for concurrent writers, run lineage (lineage.py),
snapshot scans (snapshots.py) and clear errors. It never writes its own manifest or commit
protocol. Where a warehouse lives is location.py's; opening a directory is store.py's.
"""

from __future__ import annotations

import contextlib
import logging
import random
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

import pyarrow as pa

if TYPE_CHECKING:
    import duckdb

from warehouse import errors
from warehouse import train_ready_copy as view_copy
from warehouse.lineage import RunHandle, RunLineage  # noqa: F401 - RunHandle re-exported
from warehouse.location import (  # noqa: F401 - re-exported for callers of warehouse.core
    LAKE, WarehouseLocation, connect, hide_password, load_extensions,
)
from warehouse.runs import code_version, redact  # noqa: F401 - re-exported
from warehouse.record import Record, conform, to_arrow
from warehouse.snapshots import TRAIN_READY_INPUTS, SnapshotScans  # noqa: F401 - re-exported

log = logging.getLogger(__name__)
T = TypeVar("T")

# Errors that mean "another writer got there first": roll back and try again.
_RETRYABLE = ("database is locked", "conflict", "Failed to flush changes",
              "could not serialize", "busy")


class Warehouse(RunLineage, SnapshotScans):
    """An open warehouse. Use `warehouse.open(path)` to get one. Its run lineage is
    lineage.py's, its snapshot scans snapshots.py's."""

    def __init__(self, location: WarehouseLocation, read_only: bool = False,
                 snapshot: int | None = None, max_retries: int = 30,
                 train_ready_copy: bool = False):
        import duckdb
        self.location = location
        self.train_ready_copy = train_ready_copy
        self.root = location.root
        self.read_only = read_only
        self.snapshot = snapshot
        self.max_retries = max_retries
        self._train_ready_snapshot: int | None = None
        # One object may serve several threads of a stage (the model client's accounting
        # writer beside the stage's own commits): its reads and each commit attempt take
        # turns on the one connection. A second connection of the same process to a SQLite
        # catalog is no way out: concurrent use of two locks that catalog up for good.
        self._lock = threading.RLock()
        self.con = connect(location)
        try:
            self.con.execute(location.attach_sql(read_only=read_only, snapshot=snapshot))
        except duckdb.Error as exc:
            self.con.close()
            if snapshot is not None and "snapshot" in str(exc).lower():
                raise errors.WarehouseError(
                    f"warehouse {self.root} has no snapshot {snapshot} (list them with "
                    "`datagen query \"from snapshots()\"`)") from None
            raise errors.CorruptWarehouse(
                f"cannot open the catalog of warehouse {self.root}: "
                f"{hide_password(str(exc).splitlines()[0])}") from None
        except BaseException:  # a stop mid-attach: close, or its traceback holds the lock
            self.con.close()
            raise

    # ---- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()

    def __enter__(self) -> "Warehouse":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- schema ----------------------------------------------------------------------

    def ensure_schema(self) -> list:
        """Create missing tables and columns and the train_ready view (additive migrations,
        warehouse/migrate.py); refuse what cannot be migrated. Read-only: check only."""
        from warehouse import migrate
        steps = migrate.prepare(self)
        if steps and not self.read_only:
            self._set_storage_options()
        return steps

    def _set_storage_options(self) -> None:
        """Parquet codecs: lz4 for the tables that are queried all the time (decodes ~20 %
        faster than DuckLake's default snappy on the failure-reason query at 1 M questions),
        zstd for bulky page text and raw HTML, which are read rarely."""
        self.con.execute(f"CALL {LAKE}.set_option('parquet_compression', 'lz4')")
        for table in ("pages", "fetches"):
            self.con.execute(f"CALL {LAKE}.set_option('parquet_compression', 'zstd', "
                             f"table_name => '{table}')")

    # ---- writing ---------------------------------------------------------------------

    def commit(self, fn: Callable[["duckdb.DuckDBPyConnection"], T]) -> T:
        """Run fn(con) inside one DuckLake transaction; retry with backoff on conflicts.

        Either everything fn wrote becomes visible at once, or nothing does.
        """
        return self.retrying(fn, transaction=True)

    def retrying(self, fn: Callable[["duckdb.DuckDBPyConnection"], T], transaction: bool = False) -> T:
        """Call fn(con), retrying with jittered exponential backoff when another writer
        holds the catalog or committed first. Anything else propagates unchanged."""
        import duckdb
        if self.read_only:
            raise errors.ReadOnlyViolation(f"warehouse {self.root} was opened read-only")
        delay = 0.01
        last: BaseException | None = None
        for attempt in range(self.max_retries):
            try:
                with self._lock:
                    return self._attempt(fn, transaction)
            except BaseException as exc:
                if not (isinstance(exc, duckdb.Error) and _is_retryable(exc)):
                    raise
                log.debug("commit conflict (attempt %d): %s", attempt + 1, exc)
                last = exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
        first_line = str(last).splitlines()[0] if last else ""
        raise errors.CommitConflict(
            f"warehouse {self.root}: commit still conflicting after {self.max_retries} retries "
            f"(last: {first_line})") from last

    def _attempt(self, fn: Callable[["duckdb.DuckDBPyConnection"], T], transaction: bool) -> T:
        try:
            if transaction:
                self.con.execute("BEGIN TRANSACTION")
            result = fn(self.con)
            if transaction:
                self.con.execute("COMMIT")
            return result
        except BaseException:
            if transaction:  # also on KeyboardInterrupt or a bug in fn: never leave it open
                self._roll_back()
            raise

    def _roll_back(self) -> None:
        """ROLLBACK; a connection whose rollback a stop interrupted too is closed, or its open
        transaction would hold the catalog's lock for the rest of the process."""
        import duckdb
        try:
            self.con.execute("ROLLBACK")
        except duckdb.Error:  # e.g. no transaction is active
            pass
        except BaseException:
            self.close()
            raise

    def append(self, records: Sequence[Record] | pa.Table, record_type: type[Record] | None = None,
               run_id: str | None = None) -> int:
        """Append one batch to its table in one commit. Returns the number of rows."""
        with self.transaction() as tx:
            tx.append(records, record_type, run_id=run_id)
        return len(records)

    @contextlib.contextmanager
    def transaction(self) -> Iterator["Transaction"]:
        """Collect appends to several tables and commit them atomically on exit."""
        tx = Transaction()
        yield tx
        if tx.batches:
            self.commit(tx.apply)

    # ---- reading (trusted, internal) ------------------------------------------------

    def sql(self, query: str, params: Sequence[object] | None = None) -> pa.Table:
        """Run trusted SQL and return Arrow. Tables and the train_ready view are reachable
        by plain names; a read that fails on a missing or corrupt data file raises
        CorruptWarehouse naming the file.

        With `train_ready_copy` (opt-in, for long-lived interactive processes: a dashboard,
        a notebook), a query that names train_ready and no other warehouse table (nor
        `lake.`) reads the in-memory copy, rebuilt first when a snapshot since the last build
        changed the view or its inputs (train_ready_copy.py). Every other query evaluates the
        view in the statement, so it sees one snapshot.
        """
        with self._lock:
            self.con.execute(f"USE {LAKE}")
            if self.train_ready_copy and view_copy.reads_only_train_ready(query):
                view_copy.refresh(self)
                self.con.execute(f"SET search_path = '{view_copy.COPIES}.main,"
                                 f"{LAKE}.main'")
            else:
                self.con.execute(f"SET search_path = '{LAKE}.main'")
            try:
                return self.con.execute(query, params or []).to_arrow_table()
            except Exception as exc:
                raise _explain_read_error(self, exc) from exc

    def read(self, record_type: type[Record], where: str | None = None,
             params: Sequence[object] | None = None) -> list[Record]:
        cols = ", ".join(f'"{f.name}"' for f in record_type.SCHEMA)
        query = f"SELECT {cols} FROM {LAKE}.{record_type.TABLE}"
        if where:
            query += f" WHERE {where}"
        table = self.sql(query, params)
        return [record_type.from_row(r) for r in table.to_pylist()]

    def scalar(self, query: str, params: Sequence[object] | None = None) -> Any:
        """The one value of a trusted one-row query.

        fetchall, never fetchone: an unfinished result keeps the catalog's SQLite read
        transaction open, and that shared lock blocks every writer (any process)."""
        with self._lock:
            return self.con.execute(query, params or []).fetchall()[0][0]

    def count(self, table: str) -> int:
        return self.scalar(f"SELECT count(*) FROM {LAKE}.{table}")


class Transaction:
    """Batches gathered for one atomic commit."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, pa.Table]] = []

    def append(self, records: Sequence[Record] | pa.Table, record_type: type[Record] | None = None,
               run_id: str | None = None) -> None:
        if isinstance(records, pa.Table):
            if record_type is None:
                raise TypeError("append(pa.Table) needs record_type")
            table = conform(records, record_type)
        else:
            records = list(records)
            if not records:
                return
            record_type = record_type or type(records[0])
            table = to_arrow(records, record_type)
        if run_id is not None and "run_id" in table.column_names:
            idx = table.column_names.index("run_id")
            table = table.set_column(idx, "run_id", pa.array([run_id] * len(table), pa.string()))
        self.batches.append((record_type.TABLE, table))

    def apply(self, con) -> None:
        for i, (name, table) in enumerate(self.batches):
            view = f"_batch_{i}"
            con.register(view, table)
            try:
                con.execute(f"INSERT INTO {LAKE}.{name} BY NAME SELECT * FROM {view}")
            finally:
                con.unregister(view)


def _is_retryable(exc: Exception) -> bool:
    msg = str(exc).lower()
    return any(s.lower() in msg for s in _RETRYABLE)


def _explain_read_error(wh: Warehouse, exc: Exception) -> Exception:
    """Turn a missing/corrupt data file into an error that names the file."""
    msg = str(exc)
    m = re.search(r"([\w./\\:-]+\.parquet)", msg)
    if m and any(s in msg for s in ("No such file", "not found", "Failed to open", "Invalid",
                                   "magic", "corrupt", "IO Error", "cannot", "too small")):
        return errors.CorruptWarehouse(
            f"warehouse {wh.root}: data file {m.group(1)} is missing or corrupt ({msg.splitlines()[0]})")
    return exc
