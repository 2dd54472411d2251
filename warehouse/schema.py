"""Typed records and their Arrow schemas: the seam between every stage.

Each table in DESIGN.md §3 has one frozen dataclass here, an explicit Arrow
schema and a schema version. Writers build records, readers get records back,
and nothing lets Parquet guess a type from the first rows.

A record's Arrow schema is derived from its dataclass fields (`@record`), so the two are
written once: str -> string, int -> int32 (ARROW_TYPES overrides a field, e.g. int64),
float -> float64, bool, datetime -> timestamp[us, UTC], tuple[X, ...] -> list<X>.
Adding a field (with a default) is an additive change: opening a warehouse for writing
adds the column (warehouse/migrate.py); bump SCHEMA_VERSION so the history says when.

This module holds no logic beyond record <-> Arrow conversion.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
import types
import typing
from typing import Any, ClassVar, Iterable, Literal, Sequence

import pyarrow as pa

UTC = dt.timezone.utc
TS = pa.timestamp("us", tz="UTC")
EVIDENCE = pa.struct([("url", pa.string()), ("quote", pa.string())])
LINK = pa.struct([("url", pa.string()), ("anchor", pa.string())])

# Status-like fields are typed with these Literals: a record refuses any other value when it
# is built (ValueError listing the allowed ones); they are stored as plain strings.
Band = Literal["too_easy", "easy", "medium", "hard", "too_hard"]
VerdictStatus = Literal["pass", "fail", "error"]
FetchOutcome = Literal["stored", "skipped", "failed"]
RunStatus = Literal["running", "succeeded", "failed", "interrupted"]
DifficultySource = Literal["solver", "training", "builtin"]  # builtin: the trainer's demo tasks
LLMCallStatus = Literal["ok", "failed", "cached"]
AnswerType = Literal["", "year", "number", "date", "entity", "other"]  # "" = unknown

BANDS = typing.get_args(Band)
RUN_STATUSES = typing.get_args(RunStatus)
ANSWER_TYPES = typing.get_args(AnswerType)


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


@record
class FetchRecord(Record):
    """One URL the crawler attempted (stored, skipped or failed, with the reason)."""

    url: str
    final_url: str | None
    http_status: int | None
    outcome: FetchOutcome
    reason: str
    bytes: int
    elapsed_ms: float
    fetched_at: dt.datetime
    content_type: str | None = None
    depth: int = 0
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "fetches"
    SCHEMA_VERSION: ClassVar[int] = 1
    ARROW_TYPES: ClassVar[dict[str, pa.DataType]] = {"bytes": pa.int64()}


@record
class PageRecord(Record):
    """A stored page: extracted main text plus what later stages need (links, licence)."""

    url: str
    title: str
    text: str
    content_hash: str
    fetched_at: dt.datetime
    final_url: str | None = None
    links: tuple[Link, ...] = ()
    license: str | None = None
    language: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    html: str | None = None
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "pages"
    SCHEMA_VERSION: ClassVar[int] = 1


@record
class QuestionRecord(Record):
    """A (seed or composed) question with its answer, evidence and composing trace."""

    question_id: str
    question: str
    answer: str
    answer_aliases: tuple[str, ...] = ()
    hops: int = 1
    actions: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    source_urls: tuple[str, ...] = ()
    parent_id: str | None = None
    composer: str = ""
    backend: str = ""
    trace: str = ""  # JSON: the composing steps, for audit
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)
    answer_type: AnswerType = ""

    TABLE: ClassVar[str] = "questions"
    SCHEMA_VERSION: ClassVar[int] = 2


@record
class VerdictRecord(Record):
    """One check's decision on one question: pass, fail or error, with a reason."""

    question_id: str
    check_name: str
    status: VerdictStatus
    reason: str = ""
    details: str = ""  # JSON with check-specific evidence
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "verdicts"
    SCHEMA_VERSION: ClassVar[int] = 1


@record
class DifficultyRecord(Record):
    """A pass-rate estimate for a question and the band it puts the question in."""

    question_id: str
    solver: str
    k: int
    n_correct: int
    pass_rate: float
    band: Band
    pass_rate_low: float | None = None
    pass_rate_high: float | None = None
    source: DifficultySource = "solver"
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)
    details: str = ""  # JSON of the attempts, for audit

    TABLE: ClassVar[str] = "difficulty"
    SCHEMA_VERSION: ClassVar[int] = 2


@record
class RolloutRecord(Record):
    """One finished training episode: the outcome that flows back to difficulty."""

    question_id: str
    policy_version: int
    reward: float
    n_turns: int = 1
    episode_id: str = ""
    completion_tokens: int = 0
    staleness: int = 0
    trained: bool = False
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)
    n_tool_calls: int = 0

    TABLE: ClassVar[str] = "rollouts"
    SCHEMA_VERSION: ClassVar[int] = 2
    ARROW_TYPES: ClassVar[dict[str, pa.DataType]] = {"policy_version": pa.int64()}


@record
class RunRecord(Record):
    """Lineage: one run of one stage, its resolved config (secrets redacted) and outcome."""

    run_id: str
    kind: str
    config: str  # JSON, redacted
    code_version: str
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    status: RunStatus = "running"
    summary: str = ""  # JSON counters written at the end
    created_at: dt.datetime = field(default_factory=utcnow)
    parent_run_id: str = ""  # a stage run's build run
    resumed_from: str = ""  # the run this one resumed
    pid: int = 0  # the process running it, and its host: a run left `running` by a process
    host: str = ""  # that is gone is marked `interrupted` when the next run of its kind starts

    TABLE: ClassVar[str] = "runs"
    SCHEMA_VERSION: ClassVar[int] = 3


@record
class LLMCallRecord(Record):
    """One call to an LLM endpoint (or one answered from the cache): cost and failure audit."""

    run_id: str
    purpose: str
    item_id: str = ""
    endpoint: str = ""
    model: str = ""
    request_key: str = ""
    n: int = 1
    status: LLMCallStatus = "ok"
    error: str = ""
    attempts: int = 1
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "llm_calls"
    SCHEMA_VERSION: ClassVar[int] = 1


RECORD_TYPES: dict[str, type[Record]] = {
    r.TABLE: r
    for r in (FetchRecord, PageRecord, QuestionRecord, VerdictRecord, DifficultyRecord,
              RolloutRecord, RunRecord, LLMCallRecord)
}

# The trainer's view: questions whose latest verdict for every check is `pass`
# (and that have at least one verdict), with the band of their latest difficulty row.
# `{key}` filters every input by question_id before it is aggregated and `{at}` pins a
# snapshot: the view uses neither; the trainer's reader (warehouse/ranges.py) evaluates it
# one key range at a time, at one snapshot.
TRAIN_READY_VERSION = 2  # bump when TRAIN_READY_SELECT changes: writers then recreate the view
TRAIN_READY_SELECT = """
WITH latest_verdicts AS (
    SELECT question_id, check_name,
           arg_max(status, created_at) AS status
    FROM {lake}.verdicts {at} WHERE {key} GROUP BY question_id, check_name
), verified AS (
    SELECT question_id FROM latest_verdicts
    GROUP BY question_id HAVING bool_and(status = 'pass')
), latest_difficulty AS (
    SELECT question_id, arg_max(band, created_at) AS band,
           arg_max(pass_rate, created_at) AS pass_rate
    FROM {lake}.difficulty {at} WHERE {key} GROUP BY question_id
), latest_question AS (
    SELECT question_id, arg_max(question, created_at) AS question,
           arg_max(answer, created_at) AS answer,
           arg_max(answer_aliases, created_at) AS answer_aliases,
           arg_max(hops, created_at) AS hops,
           coalesce(arg_max(answer_type, created_at), '') AS answer_type,
           max(created_at) AS created_at
    FROM {lake}.questions {at} WHERE {key} GROUP BY question_id
)
SELECT q.question_id, q.question, q.answer, q.answer_aliases, d.band, d.pass_rate, q.created_at,
       q.hops, q.answer_type
FROM latest_question q
JOIN verified v USING (question_id)
JOIN latest_difficulty d USING (question_id)
"""
TRAIN_READY_SQL = ("CREATE OR REPLACE VIEW {lake}.train_ready AS"
                   + TRAIN_READY_SELECT.replace("{key}", "TRUE").replace(" {at}", ""))


def train_ready_select(lake: str, key: str = "TRUE", at: str = "") -> str:
    """The train_ready query over `lake`, each input filtered by `key` (SQL on question_id)
    and read `at` a version (e.g. "AT (VERSION => 12)"; "" = the attached state)."""
    return TRAIN_READY_SELECT.format(lake=lake, key=key, at=at)


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

