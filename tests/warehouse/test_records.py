"""Typed records: status-like fields refuse unknown values when built; each record's fields
and its Arrow schema are the same list."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pyarrow as pa
import pytest

from warehouse.schema import (
    RECORD_TYPES, DifficultyRecord, FetchRecord, LLMCallRecord, QuestionRecord, RunRecord,
    VerdictRecord, conform,
)

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
BAD = [
    (VerdictRecord, dict(question_id="q", check_name="c"), "status", "passed", "'pass', 'fail', 'error'"),
    (FetchRecord, dict(url="u", final_url=None, http_status=None, reason="", bytes=0,
                       elapsed_ms=0.0, fetched_at=NOW), "outcome", "ok", "'stored', 'skipped', 'failed'"),
    (RunRecord, dict(run_id="r", kind="k", config="{}", code_version="v", started_at=NOW),
     "status", "done", "'running', 'succeeded', 'failed', 'interrupted'"),
    (DifficultyRecord, dict(question_id="q", solver="s", k=1, n_correct=0, pass_rate=0.0),
     "band", "Hard", "'too_easy', 'easy', 'medium', 'hard', 'too_hard'"),
    (DifficultyRecord, dict(question_id="q", solver="s", k=1, n_correct=0, pass_rate=0.0, band="easy"),
     "source", "guess", "'solver', 'training', 'builtin'"),
    (LLMCallRecord, dict(run_id="r", purpose="p"), "status", "error", "'ok', 'failed', 'cached'"),
    (QuestionRecord, dict(question_id="q", question="?", answer="a"), "answer_type", "int",
     "'', 'year', 'number'"),
]


@pytest.mark.parametrize("rtype, base, name, bad, allowed", BAD,
                         ids=[f"{b[0].__name__}.{b[2]}" for b in BAD])
def test_unknown_status_is_refused_with_the_allowed_values(rtype, base, name, bad, allowed):
    with pytest.raises(ValueError, match=f"{rtype.__name__}.{name} = '{bad}'.*{allowed}"):
        rtype(**base, **{name: bad})
    good = rtype.ALLOWED[name][-1]
    assert getattr(rtype(**base, **{name: good}), name) == good


def test_arrow_batches_are_checked_too():
    batch = pa.table({"question_id": ["q", "r"], "check_name": ["c", "c"],
                      "status": ["pass", "PASS"]})
    with pytest.raises(ValueError, match="VerdictRecord.status: \\[\"'PASS'\"\\] not allowed"):
        conform(batch, VerdictRecord)


def test_every_record_field_is_a_column_of_its_arrow_schema_in_order():
    for name, rtype in RECORD_TYPES.items():
        assert [f.name for f in dataclasses.fields(rtype)] == rtype.SCHEMA.names, name
