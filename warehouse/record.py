"""How a record is written once: a frozen dataclass whose Arrow schema is derived from its
fields (`@record`), and the conversions between records and Arrow rows.

str -> string, int -> int32 (ARROW_TYPES overrides a field, e.g. int64), float -> float64,
bool, datetime -> timestamp[us, UTC], Literal -> string (its values checked when a record or
a batch is built), tuple[X, ...] -> list<X>. The record types themselves are schema.py's.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Literal, Sequence

import pyarrow as pa

UTC = dt.timezone.utc
TS = pa.timestamp("us", tz="UTC")
EVIDENCE = pa.struct([("url", pa.string()), ("quote", pa.string())])
LINK = pa.struct([("url", pa.string()), ("anchor", pa.string())])


def utcnow() -> dt.datetime:
    return dt.datetime.now(UTC)


def content_id(*parts: object, length: int = 16) -> str:
    """Stable content-hash id: the same content always gets the same id."""
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\x1f")
    return h.hexdigest()[:length]


@dataclass(frozen=True)
class Evidence:
    url: str
    quote: str


@dataclass(frozen=True)
class Link:
    url: str
    anchor: str


@dataclass(frozen=True)
class Record:
    """Base of every stored row. Subclasses set TABLE, SCHEMA and SCHEMA_VERSION."""

    TABLE: ClassVar[str]
    SCHEMA: ClassVar[pa.Schema]
    SCHEMA_VERSION: ClassVar[int]
    ARROW_TYPES: ClassVar[dict[str, pa.DataType]] = {}
    ALLOWED: ClassVar[dict[str, tuple]] = {}  # Literal-typed fields -> allowed values (@record)

    def __post_init__(self) -> None:
        for name, allowed in self.ALLOWED.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{type(self).__name__}.{name} = {value!r} is not allowed; "
                                 f"use one of {', '.join(repr(a) for a in allowed)}")

    def to_row(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_row(cls, row: dict[str, Any]):
        """A record from a stored row. NULL in a column added by a migration (rows written
        before it existed) reads as the field's default, e.g. "" or 0."""
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name not in row:
                continue
            if row[f.name] is None and f.default not in (dataclasses.MISSING, None):
                continue
            kwargs[f.name] = _revive(cls, f.name, row[f.name])
        return cls(**kwargs)


def record(cls: type[Record]) -> type[Record]:
    """Make `cls` a frozen dataclass and derive its Arrow SCHEMA from its fields."""
    cls = dataclass(frozen=True)(cls)
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    cls.SCHEMA = pa.schema([(f.name, cls.ARROW_TYPES.get(f.name) or _arrow_type(hints[f.name]))
                            for f in fields])
    cls.ALLOWED = {f.name: allowed for f in fields if (allowed := _literal_values(hints[f.name]))}
    return cls


def _literal_values(hint: Any) -> tuple:
    """The values a Literal (or Optional Literal) annotation allows; () for other types."""
    if typing.get_origin(hint) is Literal:
        return typing.get_args(hint)
    args = typing.get_args(hint)
    if type(None) in args and (inner := [a for a in args if a is not type(None)]):
        values = _literal_values(inner[0])
        return values + (None,) if values else ()
    return ()


_SCALARS = {str: pa.string(), int: pa.int32(), float: pa.float64(), bool: pa.bool_()}


def _arrow_type(hint: Any) -> pa.DataType:
    """The Arrow type for a field's annotation (Optional[X] is X: every column is nullable)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return _arrow_type(args[0])
    if typing.get_origin(hint) is tuple:
        return pa.list_(_arrow_type(args[0]))
    if typing.get_origin(hint) is Literal:
        return pa.string()
    if hint in _SCALARS:
        return _SCALARS[hint]
    if hint is dt.datetime:
        return TS
    if hint in (Evidence, Link):
        return EVIDENCE if hint is Evidence else LINK
    raise TypeError(f"no Arrow type for field annotation {hint!r}")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _revive(cls: type, name: str, value: Any) -> Any:
    if name == "evidence" and value is not None:
        return tuple(Evidence(**v) for v in value)
    if name == "links" and value is not None:
        return tuple(Link(**v) for v in value)
    if isinstance(value, list):
        return tuple(value)
    return value


def to_arrow(records: Sequence[Record] | Iterable[Record], record_type: type[Record]) -> pa.Table:
    """Records -> an Arrow table with the record type's exact schema."""
    rows = [r.to_row() for r in records]
    for r in rows:
        if "created_at" in r and r["created_at"] is None:
            r["created_at"] = utcnow()
    return pa.Table.from_pylist(rows, schema=record_type.SCHEMA)


def conform(table: pa.Table, record_type: type[Record]) -> pa.Table:
    """An Arrow batch in the record type's exact schema; a column it lacks that has a
    default (e.g. a field added later) is filled with it, so older producers still work.
    Literal-typed columns are checked like a record's fields."""
    by_name = {f.name: f for f in dataclasses.fields(record_type)}
    for name in record_type.SCHEMA.names:
        if name not in table.column_names:
            f = by_name[name]
            default = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
            if default is dataclasses.MISSING:
                raise KeyError(f"{record_type.TABLE}: the batch lacks required column {name!r}")
            table = table.append_column(name, pa.array([default] * len(table),
                                                       record_type.SCHEMA.field(name).type))
    table = table.select(record_type.SCHEMA.names).cast(record_type.SCHEMA)
    for name, allowed in record_type.ALLOWED.items():
        bad = set(table.column(name).unique().to_pylist()) - set(allowed)
        if bad:
            raise ValueError(f"{record_type.__name__}.{name}: {sorted(map(repr, bad))} not "
                             f"allowed; use one of {', '.join(repr(a) for a in allowed)}")
    return table

