"""Additive schema migrations: a warehouse made by older code opens and gains what is new.

Opening a warehouse for writing compares its catalog with the record types in schema.py
and, in one commit, creates the missing tables, adds the missing columns (nullable: rows
written before read them as NULL, which `Record.from_row` turns into the field's default)
and recreates the `train_ready` view when its version changed. Each change is a row of
`schema_versions` (table, version, applied_at, change). Nothing is ever dropped, renamed or
retyped: a stored column whose type differs from the code's, or a table stamped with a
newer version than the code's, is refused with SchemaMismatch.

A read-only open of a warehouse that needs changes is refused with the command that
upgrades it. A time-travel open (`snapshot=`) may predate a migration and is read as is.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from warehouse import errors
from warehouse.record import utcnow
from warehouse.schema import RECORD_TYPES
from warehouse.views import TRAIN_READY_SQL, TRAIN_READY_VERSION

if TYPE_CHECKING:
    from warehouse.core import Warehouse

log = logging.getLogger(__name__)

VERSIONS = "schema_versions"
VIEW = "train_ready"
VERSIONS_COLUMNS = (("table_name", "VARCHAR"), ("version", "INTEGER"),
                    ("applied_at", "TIMESTAMP WITH TIME ZONE"), ("change", "VARCHAR"))
UPGRADE_COMMAND = "datagen maintain --warehouse {root}"


# Rows written before a column existed, given its value from what they already store (run
# right after the column is added, in the same commit). Schema 3 of `questions`: `hops`
# became the number of distinct evidence pages and the old count of composed facts moved to
# `steps`; bands and verdicts, keyed by question id, stay as they are.
_PAGES = "len(list_distinct(list_transform(evidence, e -> e.url)))"
BACKFILLS = {
    ("questions", "steps"): (
        "UPDATE {lake}.questions SET steps = hops, hops = greatest(1, " + _PAGES + "), "
        "hop_kind = CASE WHEN " + _PAGES + " >= 2 THEN 'bridge' ELSE '' END "
        "WHERE steps IS NULL",
        "questions recounted: hops are distinct evidence pages, the old count kept as steps"),
}


@dataclass(frozen=True)
class Step:
    """One additive change: its DDL (None = only record the version) and its history row."""

    table: str
    sql: str | None
    version: int
    change: str


def prepare(wh: "Warehouse") -> list[Step]:
    """Check the stored schema and bring it up to date when `wh` is writable.

    Returns the steps applied (empty when the warehouse was current)."""
    from warehouse.location import LAKE
    cols = stored_columns(wh.con, LAKE)
    check_migratable(wh, cols, stored_versions(wh.con, LAKE, cols))
    steps = plan(wh.con, LAKE)
    if not steps or wh.snapshot is not None:
        return []
    if wh.read_only:
        what = "; ".join(s.change for s in steps[:3]) + ("; …" if len(steps) > 3 else "")
        raise errors.SchemaMismatch(
            f"warehouse {wh.root} was made by an older version of this tool ({what}); upgrade "
            f"it in place with `{UPGRADE_COMMAND.format(root=wh.root)}` (opening it for "
            "writing upgrades it)")
    return wh.commit(lambda con: apply(con, LAKE))


def apply(con, lake: str) -> list[Step]:
    """Plan inside the transaction (a concurrent opener may have migrated first) and apply."""
    steps = plan(con, lake)
    now = utcnow()
    for step in steps:
        if step.sql:
            con.execute(step.sql)
    for step in steps:
        con.execute(f"INSERT INTO {lake}.{VERSIONS} (table_name, version, applied_at, change) "
                    "VALUES (?, ?, ?, ?)", [step.table, step.version, now, step.change])
    if steps:
        log.info("warehouse schema upgraded: %s", "; ".join(s.change for s in steps))
    return steps


def plan(con, lake: str) -> list[Step]:
    """The additive changes that would bring the catalog up to the code's schema."""
    cols = stored_columns(con, lake)
    steps = _versions_table_steps(cols.get(VERSIONS), lake)
    versions = stored_versions(con, lake, cols)
    for name, rtype in RECORD_TYPES.items():
        have = cols.get(name)
        if have is None:
            ddl = ", ".join(f'"{f.name}" {arrow_to_sql_type(f.type)}' for f in rtype.SCHEMA)
            steps.append(Step(name, f"CREATE TABLE {lake}.{name} ({ddl})", rtype.SCHEMA_VERSION,
                              f"created table {name}"))
            continue
        missing = [f for f in rtype.SCHEMA if f.name not in have]
        steps += [Step(name, f'ALTER TABLE {lake}.{name} ADD COLUMN "{f.name}" '
                             f"{arrow_to_sql_type(f.type)}", rtype.SCHEMA_VERSION,
                       f"{name} gained column {f.name}") for f in missing]
        steps += [Step(name, sql.format(lake=lake), rtype.SCHEMA_VERSION, change)
                  for f in missing if (name, f.name) in BACKFILLS
                  for sql, change in [BACKFILLS[name, f.name]]]
        if not missing and versions.get(name, 0) < rtype.SCHEMA_VERSION:
            steps.append(Step(name, None, rtype.SCHEMA_VERSION,
                              f"{name} stamped version {rtype.SCHEMA_VERSION}"))
    if versions.get(VIEW, 0) < TRAIN_READY_VERSION or not _has_view(con, lake):
        steps.append(Step(VIEW, TRAIN_READY_SQL.format(lake=lake), TRAIN_READY_VERSION,
                          f"view {VIEW} at version {TRAIN_READY_VERSION}"))
    return steps


def _versions_table_steps(have: dict[str, str] | None, lake: str) -> list[Step]:
    if have is None:
        ddl = ", ".join(f"{n} {t}" for n, t in VERSIONS_COLUMNS)
        return [Step(VERSIONS, f"CREATE TABLE {lake}.{VERSIONS} ({ddl})", 1,
                     f"created table {VERSIONS}")]
    return [Step(VERSIONS, f"ALTER TABLE {lake}.{VERSIONS} ADD COLUMN {n} {t}", 1,
                 f"{VERSIONS} gained column {n}") for n, t in VERSIONS_COLUMNS if n not in have]


def check_migratable(wh: "Warehouse", cols: dict[str, dict[str, str]], versions: dict[str, int]) -> None:
    """Refuse what an additive migration cannot fix: a catalog that is not ours, a table
    from newer code, a column whose type changed."""
    if VERSIONS not in cols and cols:
        raise errors.SchemaMismatch(f"warehouse {wh.root} has no {VERSIONS} table; "
                                    "it was not created by this tool or is damaged")
    for name, rtype in RECORD_TYPES.items():
        if versions.get(name, 0) > rtype.SCHEMA_VERSION:
            raise errors.SchemaMismatch(
                f"warehouse {wh.root}: table {name!r} has schema version {versions[name]}, "
                f"this code expects {rtype.SCHEMA_VERSION}; it was written by newer code: "
                "upgrade this tool, or export it with the version that wrote it")
        for f in rtype.SCHEMA:
            have = cols.get(name, {}).get(f.name)
            want = _norm_type(arrow_to_sql_type(f.type))
            if have is not None and _norm_type(have) != want:
                raise errors.SchemaMismatch(
                    f"warehouse {wh.root}: column {name}.{f.name} is {_norm_type(have)}, "
                    f"this code expects {want}")


def stored_columns(con, lake: str) -> dict[str, dict[str, str]]:
    """{table: {column: SQL type}} of the attached catalog."""
    cols: dict[str, dict[str, str]] = {}
    for table, col, sql_type in con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = ?", [lake]).fetchall():
        cols.setdefault(table, {})[col] = sql_type
    return cols


def stored_versions(con, lake: str, cols: dict[str, dict[str, str]]) -> dict[str, int]:
    """The latest recorded version per table (and per view)."""
    if VERSIONS not in cols:
        return {}
    return dict(con.execute(f"SELECT table_name, max(version) FROM {lake}.{VERSIONS} "
                            "GROUP BY table_name").fetchall())


def arrow_to_sql_type(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "VARCHAR"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_timestamp(t):
        return "TIMESTAMPTZ" if t.tz else "TIMESTAMP"
    if pa.types.is_list(t):
        return arrow_to_sql_type(t.value_type) + "[]"
    if pa.types.is_struct(t):
        inner = ", ".join(f"{f.name} {arrow_to_sql_type(f.type)}" for f in t)
        return f"STRUCT({inner})"
    raise TypeError(f"no SQL type for Arrow type {t}")


def _has_view(con, lake: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_views() WHERE database_name = ? "
                            "AND view_name = ?", [lake, VIEW]).fetchall()[0][0])


def _norm_type(sql_type: str) -> str:
    return sql_type.replace('"', "").replace("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE").upper()
