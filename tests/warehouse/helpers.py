"""Builders for warehouse tests: train-ready questions (question + passing verdicts + band)."""

from __future__ import annotations

from warehouse.schema import BANDS, DifficultyRecord, QuestionRecord, VerdictRecord

CHECKS = ("grounding", "uniqueness")


def ready_batch(ids, band_of=None, run_id="test-run"):
    """Records that make each id a train_ready question, as (questions, verdicts, difficulty)."""
    band_of = band_of or (lambda i: BANDS[1 + hash(i) % 3])
    qs = [QuestionRecord(question_id=i, question=f"What is {i}?", answer=f"ans-{i}",
                         answer_aliases=(f"alias-{i}",), hops=2, run_id=run_id) for i in ids]
    vs = [VerdictRecord(question_id=i, check_name=c, status="pass", run_id=run_id)
          for i in ids for c in CHECKS]
    ds = [DifficultyRecord(question_id=i, solver="s", k=4, n_correct=2, pass_rate=0.5,
                           band=band_of(i), run_id=run_id) for i in ids]
    return qs, vs, ds


def add_ready(wh, ids, band_of=None, run_id="test-run"):
    """Commit ids as train_ready questions in one atomic commit."""
    qs, vs, ds = ready_batch(ids, band_of, run_id)
    with wh.transaction() as tx:
        tx.append(qs)
        tx.append(vs)
        tx.append(ds)
