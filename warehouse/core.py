"""The warehouse: a thin layer over DuckLake (DuckDB + Parquet + a catalog).

DuckLake gives atomic multi-table commits, snapshots and time travel; this module
only adds the table schemas, retry-on-conflict for concurrent writers, run lineage
and clear errors. It never writes its own manifest or commit protocol.
Opening and creating a warehouse directory lives in store.py.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence, TypeVar

import pyarrow as pa

if TYPE_CHECKING:
    import duckdb

from warehouse import errors, runs
from warehouse.runs import code_version, redact  # noqa: F401 - re-exported
from warehouse.schema import (
    RECORD_TYPES, RUN_STATUSES, Record, RunRecord, conform, to_arrow, utcnow,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

LAKE = "lake"

# Errors that mean "another writer got there first": roll back and try again.
_RETRYABLE = ("database is locked", "conflict", "Failed to flush changes",
              "could not serialize", "busy")

TRAIN_READY_INPUTS = ("questions", "verdicts", "difficulty")
_COPIES = "view_copies"  # in-memory database for per-snapshot copies; searched only on demand
_TRAIN_READY_REF = re.compile(r"(?<![.\w])train_ready\b", re.I)

_PASSWORD = re.compile(r"\s*\bpassword\s*=\s*('[^']*'|\S+)", re.I)


def hide_password(text: str, keep: bool = True) -> str:
    """Mask (keep=True) or drop a `password=...` from a libpq DSN or a message quoting one."""
    return _PASSWORD.sub(" password=***" if keep else "", text).strip()


def connect(location: "WarehouseLocation | None" = None):
    """A fresh in-memory DuckDB with the DuckLake and SQLite extensions loaded (and those
    `location` needs: postgres for its catalog, httpfs for object storage).

    Extensions come from the `duckdb-extension-*` PyPI packages (installed into DuckDB's
    extension folder on first use), never from the network. `allow_unsigned_extensions`
    skips DuckDB's per-LOAD signature hash of the ~70 MB of extension binaries, which
    costs ~0.5 s on every open; the binaries are the signed ones from PyPI, and the
    read-only query path turns off LOAD altogether (see warehouse/query.py).
    """
    import duckdb
    con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": "true",
                                             "autoinstall_known_extensions": "false"})
    con.execute("SET TimeZone='UTC'")
    con.execute("SET enable_progress_bar = false")  # a library prints nothing on its own
    load_extensions(con, ("ducklake", "sqlite"))
    if location is not None and location.catalog.startswith("postgres"):
        load_extensions(con, ("postgres",))
    if location is not None and location.data_path.startswith("s3://"):
        from warehouse.objstore import add_s3_secret  # keys from the environment, never stored
        add_s3_secret(con)
    elif location is not None and location.data_path.startswith(
            ("gs://", "gcs://", "r2://", "az://", "abfss://")):
        load_extensions(con, ("httpfs",))
    return con


def load_extensions(con, names: Sequence[str]) -> None:
    import duckdb
    for name in names:
        try:
            con.execute(f"LOAD {name}")
        except duckdb.Error:  # not yet in DuckDB's extension folder: install from the package
            from duckdb_extensions import import_extension
            import_extension(name, con=con)
            con.execute(f"LOAD {name}")


@dataclass(frozen=True)
class WarehouseLocation:
    """Where the catalog and the data files live. A team points both elsewhere."""

    root: Path
    catalog: str          # DuckLake metadata spec, e.g. "sqlite:/w/catalog.sqlite" or "postgres:dbname=..."
    data_path: str        # local folder or object-storage prefix (s3://bucket/prefix/)
    in_folder: bool = False  # default layout: catalog and data inside root, which may move

    @classmethod
    def for_root(cls, root: Path, catalog: str | None = None,
                 data_path: str | None = None) -> "WarehouseLocation":
        return cls(root=root,
                   catalog=catalog or f"sqlite:{root / 'catalog.sqlite'}",
                   data_path=data_path or str(root / "data") + "/",
                   in_folder=not catalog and not data_path)

    def attach_sql(self, alias: str = LAKE, read_only: bool = False,
                   snapshot: int | None = None) -> str:
        """The ATTACH statement. A folder warehouse that was moved or copied (`cp -r`) still
        names its old folder in the catalog; OVERRIDE_DATA_PATH makes this attach read and
        write the folder it is in now (DuckLake keeps file paths relative to the data path)."""
        opts = [f"DATA_PATH '{self.data_path}'"]
        if self.in_folder:
            opts.append("OVERRIDE_DATA_PATH true")
        if read_only:
            opts.append("READ_ONLY")
        if snapshot is not None:
            opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        return f"ATTACH 'ducklake:{self.catalog}' AS {alias} ({', '.join(opts)})"


class Warehouse:
    """An open warehouse. Use `warehouse.open(path)` to get one."""

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
        import duckdb
        try:
            if transaction:
                self.con.execute("BEGIN TRANSACTION")
            result = fn(self.con)
            if transaction:
                self.con.execute("COMMIT")
            return result
        except BaseException:
            if transaction:  # also on KeyboardInterrupt or a bug in fn: never leave it open
                with contextlib.suppress(duckdb.Error):
                    self.con.execute("ROLLBACK")
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

    # ---- runs (lineage) --------------------------------------------------------------

    def start_run(self, kind: str, config: Mapping[str, object] | None = None,
                  run_id: str | None = None, *, parent_run_id: str = "",
                  resumed_from: str = "") -> str:
        """Record a `running` run of `kind` (with this process's pid and host) and return its
        id. First, runs of the same kind left `running` by a process that is gone are marked
        `interrupted`. `resumed_from`: the run whose checkpoint this one continues."""
        self.mark_interrupted(kind)
        run_id = run_id or f"{kind}-{utcnow():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        pid, host = runs.this_process()
        rec = RunRecord(run_id=run_id, kind=kind,
                        config=json.dumps(redact(config or {}), sort_keys=True, default=str),
                        code_version=code_version(), started_at=utcnow(), pid=pid, host=host,
                        parent_run_id=parent_run_id, resumed_from=resumed_from)
        self.append([rec])
        return run_id

    def mark_interrupted(self, kind: str) -> list[str]:
        """Mark `interrupted` the runs of `kind` on this host still `running` although their
        process is gone (killed, crashed machine); returns their ids."""
        _, host = runs.this_process()
        rows = self.con.execute(
            f"SELECT run_id, pid, started_at FROM {LAKE}.runs WHERE kind = ? AND "
            "status = 'running' AND host = ? AND pid > 0", [kind, host]).fetchall()
        gone = [run_id for run_id, pid, started in rows if runs.process_gone(pid, started)]
        if gone:
            note = json.dumps({"interrupted": f"its process on {host} was gone"})
            marks = ", ".join("?" * len(gone))
            self.commit(lambda con: con.execute(
                f"UPDATE {LAKE}.runs SET status = 'interrupted', finished_at = ?, summary = ? "
                f"WHERE status = 'running' AND run_id IN ({marks})", [utcnow(), note, *gone]))
            log.warning("marked %d %s run(s) interrupted (process gone): %s",
                        len(gone), kind, ", ".join(gone))
        return gone

    def finish_run(self, run_id: str, status: str = "succeeded",
                   summary: Mapping[str, object] | None = None) -> None:
        if status not in RUN_STATUSES:
            raise ValueError(f"run status {status!r} is not allowed; use one of "
                             f"{', '.join(map(repr, RUN_STATUSES))}")

        def update(con):
            con.execute(f"UPDATE {LAKE}.runs SET finished_at = ?, status = ?, summary = ? "
                        "WHERE run_id = ?",
                        [utcnow(), status, json.dumps(summary or {}, default=str), run_id])
        self.commit(update)

    @contextlib.contextmanager
    def run(self, kind: str, config: Mapping[str, object] | None = None,
            run_id: str | None = None, **lineage: str) -> Iterator["RunHandle"]:
        """`with wh.run("crawl", cfg) as run:` ... marks the run succeeded/failed/interrupted.
        `lineage`: parent_run_id= and resumed_from= as in start_run."""
        handle = RunHandle(self.start_run(kind, config, run_id, **lineage))
        try:
            yield handle
        except KeyboardInterrupt:
            self._finish_quietly(handle, "interrupted")
            raise
        except BaseException:
            self._finish_quietly(handle, "failed")
            raise
        self.finish_run(handle.run_id, "succeeded", handle.summary)

    def _finish_quietly(self, handle: "RunHandle", status: str) -> None:
        # Marking the run must never hide the error that ended it.
        try:
            self.finish_run(handle.run_id, status, handle.summary)
        except Exception as exc:  # noqa: BLE001 - logged, the original error propagates
            log.error("could not mark run %s %s: %s", handle.run_id, status, exc)

    # ---- reading (trusted, internal) ------------------------------------------------

    def sql(self, query: str, params: Sequence[object] | None = None) -> pa.Table:
        """Run trusted SQL (tables are reachable as plain names) and return Arrow.

        With `train_ready_copy` (opt-in, for long-lived interactive processes: a dashboard,
        a notebook), a query that reads nothing but a plain `train_ready` is served from an
        in-memory copy materialised once per snapshot that changed the view's inputs
        (snapshots are immutable, so the copy is exact); the copy holds the whole view, so
        the trainer never turns it on. Otherwise, and for queries that also read other
        tables, the view is evaluated in the statement, so it always sees one snapshot.
        """
        with self._lock:
            self.con.execute(f"USE {LAKE}")
            if self.train_ready_copy and self._reads_only_train_ready(query):
                self._refresh_train_ready_copy()
                self.con.execute(f"SET search_path = '{_COPIES}.main,{LAKE}.main'")
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

    def snapshots(self) -> list[dict[str, Any]]:
        return self.sql(f"SELECT * FROM {LAKE}.snapshots() ORDER BY snapshot_id").to_pylist()

    def current_snapshot(self) -> int:
        return self.scalar(f"SELECT max(snapshot_id) FROM {LAKE}.snapshots()")

    def last_changed(self, tables: Sequence[str]) -> int:
        """The id of the last snapshot whose commit wrote rows to, created or altered one of
        `tables` (0 if none did): a cache key for anything built from those tables. Commits
        that only rewrite files (compaction) do not move it."""
        placeholders = ", ".join("?" * len(tables))
        names = {str(i) for (i,) in self.con.execute(
            f"SELECT table_id FROM {LAKE}.table_info() WHERE table_name IN ({placeholders})",
            list(tables)).fetchall()} | {f"main.{t}" for t in tables}
        rows = self.con.execute(f"SELECT snapshot_id, changes FROM {LAKE}.snapshots() "
                                "ORDER BY snapshot_id DESC").fetchall()
        for snap, changes in rows:
            if any(names & {str(v) for v in values} for values in dict(changes or {}).values()):
                return int(snap)
        return 0

    def changed_since(self, snapshot: int | None, tables: Sequence[str] = TRAIN_READY_INPUTS,
                      upto: int | None = None) -> bool:
        """Did a commit after `snapshot` touch one of `tables`? (Unknown -> True.)

        Commits that only write rollouts or runs (the trainer's own) then cost no re-read.
        """
        if snapshot is None:
            return True
        if upto is not None and upto == snapshot:
            return False  # nothing was committed in between: no catalog scan needed
        rows = self.con.execute(
            f"SELECT snapshot_id, changes FROM {LAKE}.snapshots() "
            "WHERE snapshot_id >= ? AND snapshot_id <= ? ORDER BY snapshot_id",
            [snapshot, upto if upto is not None else 2**62]).fetchall()
        if not rows or rows[0][0] != snapshot:  # expired by maintain: cannot tell
            return True
        placeholders = ", ".join("?" * len(tables))
        ids = {str(i) for (i,) in self.con.execute(
            f"SELECT table_id FROM {LAKE}.table_info() WHERE table_name IN ({placeholders})",
            list(tables)).fetchall()}
        for _, changes in rows[1:]:
            for kind, values in dict(changes or {}).items():
                if not kind.startswith(("tables_inserted", "tables_deleted", "inlined_")):
                    return True  # schema or view changes, compaction: assume changed
                if ids & {str(v) for v in values}:
                    return True
        return False

    def _reads_only_train_ready(self, query: str) -> bool:
        """True when the query names train_ready and no other warehouse table (a table's
        name used as an alias only disables the copy, which is always safe)."""
        if not _TRAIN_READY_REF.search(query):
            return False
        words = set(re.findall(r"\w+", query.lower()))
        return not words & (set(RECORD_TYPES) | {"schema_versions", "lake"})

    def _refresh_train_ready_copy(self) -> None:
        """Materialise `train_ready` into an in-memory table when its inputs changed.

        The view aggregates every question, verdict and difficulty row (seconds at a million
        questions); a long-lived process (dashboard, notebook, trainer) then pays that once
        per relevant commit instead of once per query. No explicit transaction: an open
        read transaction would hold the SQLite catalog's lock and stall writers. The copy is
        labelled with a snapshot read *before* it is built, so a commit landing in between
        only causes one extra rebuild, never a stale answer.
        """
        snap = self.current_snapshot()
        if self.changed_since(self._train_ready_snapshot, upto=snap):
            self.con.execute(f"ATTACH IF NOT EXISTS ':memory:' AS {_COPIES}")
            self.con.execute(f"CREATE OR REPLACE TABLE {_COPIES}.main.train_ready AS "
                             f"SELECT * FROM {LAKE}.train_ready")
        self._train_ready_snapshot = snap


@dataclass
class RunHandle:
    run_id: str
    summary: dict[str, Any] | None = None


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
