"""Typed records: the seam between every stage (the contract; no logic).

Each table in DESIGN.md §3 has one frozen dataclass here, with an explicit Arrow schema
(derived from its fields by `@record`, warehouse/record.py) and a schema version. Writers
build records, readers get records back, and nothing lets Parquet guess a type from the first
rows. Adding a field (with a default) is an additive change: opening a warehouse for writing
adds the column (warehouse/migrate.py); bump SCHEMA_VERSION so the history says when. The
train_ready view over these tables is views.py's.
"""

from __future__ import annotations

import datetime as dt
import typing
from dataclasses import field
from typing import ClassVar, Literal

import pyarrow as pa

from warehouse.record import (  # noqa: F401 - content_id, conform, to_arrow re-exported
    Evidence, Link, Record, content_id, conform, record, to_arrow, utcnow,
)

# Status-like fields are typed with these Literals: a record refuses any other value when it
# is built (ValueError listing the allowed ones); they are stored as plain strings.
Band = Literal["too_easy", "easy", "medium", "hard", "too_hard"]
VerdictStatus = Literal["pass", "fail", "error"]
FetchOutcome = Literal["stored", "skipped", "failed"]
RunStatus = Literal["running", "succeeded", "failed", "interrupted"]
DifficultySource = Literal["solver", "training", "builtin"]  # builtin: the trainer's demo tasks
LLMCallStatus = Literal["ok", "failed", "cached"]
AnswerType = Literal["", "year", "number", "date", "entity", "yes_no", "other"]  # "" = unknown
# how a multi-page question joins its pages: a bridge (each page after the first is named on
# an earlier one) or a comparison (the pages of the entities compared); "" for one page
HopKind = Literal["", "bridge", "comparison"]

BANDS = typing.get_args(Band)
HOP_KINDS = typing.get_args(HopKind)
RUN_STATUSES = typing.get_args(RunStatus)
ANSWER_TYPES = typing.get_args(AnswerType)


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
    """A (seed or composed) question with its answer, evidence and composing trace.

    `hops` is the number of distinct pages its evidence chain needs (`hop_kind` says how
    they join); `steps` the facts composed into it (what `hops` counted before schema 3:
    a same-page description or a fuzzed detail is a step, never a hop)."""

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
    steps: int = 1
    hop_kind: HopKind = ""

    TABLE: ClassVar[str] = "questions"
    SCHEMA_VERSION: ClassVar[int] = 3


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
