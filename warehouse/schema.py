"""Typed records and their Arrow schemas: the seam between every stage.

Each table in DESIGN.md §3 has one frozen dataclass here, an explicit Arrow
schema and a schema version. Writers build records, readers get records back,
and nothing lets Parquet guess a type from the first rows.

This module holds no logic beyond record <-> Arrow conversion.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Sequence

import pyarrow as pa

UTC = dt.timezone.utc
TS = pa.timestamp("us", tz="UTC")
EVIDENCE = pa.struct([("url", pa.string()), ("quote", pa.string())])
LINK = pa.struct([("url", pa.string()), ("anchor", pa.string())])

BANDS = ("too_easy", "easy", "medium", "hard", "too_hard")
VERDICT_STATUSES = ("pass", "fail", "error")
FETCH_OUTCOMES = ("stored", "skipped", "failed")
RUN_STATUSES = ("running", "succeeded", "failed", "interrupted")


def utcnow() -> dt.datetime:
    return dt.datetime.now(UTC)


def content_id(*parts: Any, length: int = 16) -> str:
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

    def to_row(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_row(cls, row: dict[str, Any]):
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in row:
                kwargs[f.name] = _revive(cls, f.name, row[f.name])
        return cls(**kwargs)


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


@dataclass(frozen=True)
class FetchRecord(Record):
    """One URL the crawler attempted (stored, skipped or failed, with the reason)."""

    url: str
    final_url: str | None
    http_status: int | None
    outcome: str
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
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("url", pa.string()), ("final_url", pa.string()), ("http_status", pa.int32()),
        ("outcome", pa.string()), ("reason", pa.string()), ("bytes", pa.int64()),
        ("elapsed_ms", pa.float64()), ("fetched_at", TS), ("content_type", pa.string()),
        ("depth", pa.int32()), ("run_id", pa.string()), ("created_at", TS),
    ])


@dataclass(frozen=True)
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
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("url", pa.string()), ("title", pa.string()), ("text", pa.string()),
        ("content_hash", pa.string()), ("fetched_at", TS), ("final_url", pa.string()),
        ("links", pa.list_(LINK)), ("license", pa.string()), ("language", pa.string()),
        ("etag", pa.string()), ("last_modified", pa.string()), ("html", pa.string()),
        ("run_id", pa.string()), ("created_at", TS),
    ])


@dataclass(frozen=True)
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

    TABLE: ClassVar[str] = "questions"
    SCHEMA_VERSION: ClassVar[int] = 1
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("question_id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
        ("answer_aliases", pa.list_(pa.string())), ("hops", pa.int32()),
        ("actions", pa.list_(pa.string())), ("evidence", pa.list_(EVIDENCE)),
        ("source_urls", pa.list_(pa.string())), ("parent_id", pa.string()),
        ("composer", pa.string()), ("backend", pa.string()), ("trace", pa.string()),
        ("run_id", pa.string()), ("created_at", TS),
    ])


@dataclass(frozen=True)
class VerdictRecord(Record):
    """One check's decision on one question: pass, fail or error, with a reason."""

    question_id: str
    check_name: str
    status: str
    reason: str = ""
    details: str = ""  # JSON with check-specific evidence
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "verdicts"
    SCHEMA_VERSION: ClassVar[int] = 1
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("question_id", pa.string()), ("check_name", pa.string()), ("status", pa.string()),
        ("reason", pa.string()), ("details", pa.string()), ("run_id", pa.string()),
        ("created_at", TS),
    ])


@dataclass(frozen=True)
class DifficultyRecord(Record):
    """A pass-rate estimate for a question and the band it puts the question in."""

    question_id: str
    solver: str
    k: int
    n_correct: int
    pass_rate: float
    band: str
    pass_rate_low: float | None = None
    pass_rate_high: float | None = None
    source: str = "solver"  # "solver" or "training"
    run_id: str = ""
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "difficulty"
    SCHEMA_VERSION: ClassVar[int] = 1
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("question_id", pa.string()), ("solver", pa.string()), ("k", pa.int32()),
        ("n_correct", pa.int32()), ("pass_rate", pa.float64()), ("band", pa.string()),
        ("pass_rate_low", pa.float64()), ("pass_rate_high", pa.float64()),
        ("source", pa.string()), ("run_id", pa.string()), ("created_at", TS),
    ])


@dataclass(frozen=True)
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

    TABLE: ClassVar[str] = "rollouts"
    SCHEMA_VERSION: ClassVar[int] = 1
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("question_id", pa.string()), ("policy_version", pa.int64()), ("reward", pa.float64()),
        ("n_turns", pa.int32()), ("episode_id", pa.string()), ("completion_tokens", pa.int32()),
        ("staleness", pa.int32()), ("trained", pa.bool_()), ("run_id", pa.string()),
        ("created_at", TS),
    ])


@dataclass(frozen=True)
class RunRecord(Record):
    """Lineage: one run of one stage, its resolved config (secrets redacted) and outcome."""

    run_id: str
    kind: str
    config: str  # JSON, redacted
    code_version: str
    started_at: dt.datetime
    finished_at: dt.datetime | None = None
    status: str = "running"
    summary: str = ""  # JSON counters written at the end
    created_at: dt.datetime = field(default_factory=utcnow)

    TABLE: ClassVar[str] = "runs"
    SCHEMA_VERSION: ClassVar[int] = 1
    SCHEMA: ClassVar[pa.Schema] = pa.schema([
        ("run_id", pa.string()), ("kind", pa.string()), ("config", pa.string()),
        ("code_version", pa.string()), ("started_at", TS), ("finished_at", TS),
        ("status", pa.string()), ("summary", pa.string()), ("created_at", TS),
    ])


RECORD_TYPES: dict[str, type[Record]] = {
    r.TABLE: r
    for r in (FetchRecord, PageRecord, QuestionRecord, VerdictRecord, DifficultyRecord,
              RolloutRecord, RunRecord)
}

# The trainer's view: questions whose latest verdict for every check is `pass`
# (and that have at least one verdict), with the band of their latest difficulty row.
TRAIN_READY_SQL = """
CREATE OR REPLACE VIEW {lake}.train_ready AS
WITH latest_verdicts AS (
    SELECT question_id, check_name,
           arg_max(status, created_at) AS status
    FROM {lake}.verdicts GROUP BY question_id, check_name
), verified AS (
    SELECT question_id FROM latest_verdicts
    GROUP BY question_id HAVING bool_and(status = 'pass')
), latest_difficulty AS (
    SELECT question_id, arg_max(band, created_at) AS band,
           arg_max(pass_rate, created_at) AS pass_rate
    FROM {lake}.difficulty GROUP BY question_id
), latest_question AS (
    SELECT question_id, arg_max(question, created_at) AS question,
           arg_max(answer, created_at) AS answer,
           arg_max(answer_aliases, created_at) AS answer_aliases,
           max(created_at) AS created_at
    FROM {lake}.questions GROUP BY question_id
)
SELECT q.question_id, q.question, q.answer, q.answer_aliases, d.band, d.pass_rate, q.created_at
FROM latest_question q
JOIN verified v USING (question_id)
JOIN latest_difficulty d USING (question_id)
"""


def to_arrow(records: Sequence[Record] | Iterable[Record], record_type: type[Record]) -> pa.Table:
    """Records -> an Arrow table with the record type's exact schema."""
    rows = [r.to_row() for r in records]
    for r in rows:
        if "created_at" in r and r["created_at"] is None:
            r["created_at"] = utcnow()
    return pa.Table.from_pylist(rows, schema=record_type.SCHEMA)


def from_arrow(table: pa.Table, record_type: type[Record]) -> list[Record]:
    return [record_type.from_row(r) for r in table.to_pylist()]
