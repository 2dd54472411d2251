"""Read-only SQL over a warehouse, for people and scripts (`datagen query`).

Two independent guards, so that a gap in one is caught by the other:

1. `check_read_only(sql)` parses the text with DuckDB's own parser: exactly one statement,
   of type SELECT (or EXPLAIN of one), whose syntax tree reads only tables by plain name
   and calls only allow-listed table functions. Writes, ATTACH/DETACH, COPY, INSTALL/LOAD,
   SET/PRAGMA/RESET, CALL, `read_parquet(...)`, `glob(...)`, `'file.csv'` scans, `query(...)`
   and the like are refused with `QueryRefused` before anything runs.
2. `open_read_only(path)` runs the statement on a READ_ONLY DuckLake attach (optionally
   pinned to a snapshot), with external access switched off except for the warehouse's own
   data folder, extension loading off, and the configuration locked.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa

from warehouse import errors
from warehouse.core import Warehouse
from warehouse.location import LAKE
from warehouse.store import open as open_warehouse

# Table functions a query may call: generators, DuckDB's catalog introspection, and
# DuckLake's read-only metadata functions. Everything else (read_*, glob, query, *_scan,
# sqlite_/postgres_ functions, ...) could reach outside the warehouse and is refused.
ALLOWED_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "repeat_row",
    "duckdb_tables", "duckdb_columns", "duckdb_views", "duckdb_schemas", "duckdb_databases",
    "duckdb_types", "duckdb_functions", "duckdb_constraints", "duckdb_keywords",
    "pragma_table_info", "pragma_show", "pragma_version", "pragma_database_size",
    "snapshots", "table_info", "table_changes", "table_insertions", "table_deletions",
    "current_snapshot", "last_committed_snapshot", "options", "settings",
    "ducklake_snapshots", "ducklake_table_info", "ducklake_table_changes",
    "ducklake_table_insertions", "ducklake_table_deletions", "ducklake_current_snapshot",
    "ducklake_last_committed_snapshot", "ducklake_options", "ducklake_settings",
    "ducklake_list_files",
})
# Scalar functions that read the environment or files.
DENIED_FUNCTIONS = frozenset({"getenv", "read_text", "read_blob", "query", "query_table"})
_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_EXPLAIN = re.compile(r"^\s*explain\s+(analy[sz]e\s+)?", re.I)
_ALLOWED_CATALOGS = {"", LAKE}


def check_read_only(sql: str) -> None:
    """Raise QueryRefused unless `sql` is one statement that only reads the warehouse."""
    import duckdb
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise errors.QueryRefused(f"cannot parse the SQL: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise errors.QueryRefused(
            f"one statement at a time, please (got {len(statements)})")
    kind = statements[0].type.name
    if kind == "EXPLAIN":
        check_read_only(_EXPLAIN.sub("", sql, count=1))
        return
    if kind != "SELECT":
        raise errors.QueryRefused(
            f"{_verb(sql)} statements are refused: `datagen query` is read-only "
            "(only SELECT, WITH ... SELECT, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)")
    _check_tree(_parse_tree(sql))


def _parse_tree(sql: str) -> dict:
    import duckdb
    con = duckdb.connect(":memory:")
    try:
        out = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0])
    finally:
        con.close()
    if out.get("error"):
        raise errors.QueryRefused(
            f"cannot check this statement ({out.get('error_message', 'unknown')}); "
            "write it as a plain SELECT")
    return out


def _check_tree(node: Any) -> None:
    for obj in _walk(node):
        kind = obj.get("type")
        if kind == "TABLE_FUNCTION":
            name = (obj.get("function") or {}).get("function_name", "").lower()
            if name not in ALLOWED_TABLE_FUNCTIONS:
                raise errors.QueryRefused(
                    f"table function {name}(...) is refused: queries may read only the "
                    "warehouse's tables (by plain name, e.g. `from questions`)")
        elif kind == "BASE_TABLE":
            name = obj.get("table_name", "")
            if not _PLAIN_NAME.match(name):
                raise errors.QueryRefused(
                    f"reading {name!r} is refused: only the warehouse's tables, by plain name")
            if obj.get("catalog_name", "") not in _ALLOWED_CATALOGS:
                raise errors.QueryRefused(
                    f"catalog {obj['catalog_name']!r} is refused: only the warehouse's tables")
        elif obj.get("class") == "FUNCTION" and obj.get("function_name", "").lower() in DENIED_FUNCTIONS:
            raise errors.QueryRefused(f"function {obj['function_name']}() is refused in queries")


def _walk(node: Any) -> Iterator[dict]:
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict):
            yield cur
            stack.extend(cur.values())
        elif isinstance(cur, list):
            stack.extend(cur)


def _verb(sql: str) -> str:
    words = re.findall(r"[A-Za-z]+", sql)
    return words[0].upper() if words else "empty"


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def sandbox(wh: Warehouse) -> None:
    """Lock a read-only warehouse connection down: no files outside the data folder,
    no extension loading, no configuration changes for the rest of its life."""
    con = wh.con
    con.execute(f"USE {LAKE}")
    data = wh.location.data_path
    if "://" not in data:
        data = str(Path(data).resolve()) + "/"
    con.execute("SET allowed_directories = ?", [[data, wh.location.data_path]])
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def open_read_only(path: str | Path | None, as_of: int | None = None) -> Warehouse:
    """Open an existing warehouse for untrusted read-only SQL (see the module docstring)."""
    import duckdb
    wh = open_warehouse(path, create=False, read_only=True, snapshot=as_of)
    try:
        sandbox(wh)
    except duckdb.Error:
        wh.close()
        raise
    return wh


def run_query(path: str | Path | None, sql: str, as_of: int | None = None) -> pa.Table:
    """Check, then run `sql` read-only on the warehouse at `path`; return an Arrow table."""
    check_read_only(sql)
    wh = open_read_only(path, as_of)
    try:
        return execute(wh, sql)
    finally:
        wh.close()


def execute(wh: Warehouse, sql: str) -> pa.Table:
    """Run an already-checked statement on a sandboxed warehouse; errors become one line."""
    import duckdb
    from warehouse.core import _explain_read_error
    try:
        return wh.con.execute(sql).to_arrow_table()
    except duckdb.Error as exc:
        explained = _explain_read_error(wh, exc)
        if explained is not exc:
            raise explained from None
        if isinstance(exc, duckdb.PermissionException):
            raise errors.QueryRefused(f"refused by the read-only sandbox: {_first_line(exc)}") from None
        raise errors.QueryError(_first_line(exc)) from None


# ---- output formats ----------------------------------------------------------------------

def _jsonable(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def to_json(table: pa.Table) -> str:
    """One JSON array of row objects, on a line of its own."""
    return json.dumps(table.to_pylist(), default=_jsonable, ensure_ascii=False) + "\n"


def to_csv(table: pa.Table) -> str:
    """A header row, then one row per record; nested values as JSON."""
    import csv
    import io
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(table.column_names)
    for row in table.to_pylist():
        writer.writerow([_cell(v) for v in row.values()])
    return buf.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=_jsonable, ensure_ascii=False)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)


def to_text_table(table: pa.Table, max_width: int = 60) -> str:
    """An aligned plain-text table (what a person reads in a terminal), with a row count."""
    names = table.column_names
    rows = [[_cell(v).replace("\n", " ") for v in r.values()] for r in table.to_pylist()]
    rows = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in r] for r in rows]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(names), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"


FORMATTERS = {"table": to_text_table, "csv": to_csv, "json": to_json}
