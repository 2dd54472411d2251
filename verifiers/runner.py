"""Run question checks and write their verdicts to the warehouse.

Each check runs over the whole batch under a deadline; an exception or a
timeout becomes an ``error`` verdict for every question in the batch (with
the exception in the reason), never a silent pass. All verdicts of one call
are written in one commit.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from warehouse import QuestionRecord, VerdictRecord

from verifiers.checks import AlternativesJudge, Check, CheckContext, CheckResult, PageSearch

if TYPE_CHECKING:
    from verifiers.dedup import Embedder
    from warehouse import Warehouse

log = logging.getLogger(__name__)
CHECK_TIMEOUT_S = 600.0


def run_check(check: Check, questions: Sequence[QuestionRecord], ctx: CheckContext,
              timeout_s: float = CHECK_TIMEOUT_S) -> list[CheckResult]:
    """One check over a batch; crashes and timeouts become ``error`` results."""
    pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"check-{check.name}")
    future = pool.submit(check.run, list(questions), ctx)
    try:
        results = future.result(timeout=timeout_s)
    except cf.TimeoutError:
        log.error("check %s timed out after %.0fs", check.name, timeout_s)
        results = [CheckResult("error", f"timed out after {timeout_s:g}s")] * len(questions)
    except Exception as exc:  # a crashing check is data (an error verdict), not a crash of the run
        log.exception("check %s raised", check.name)
        results = [CheckResult("error", f"{type(exc).__name__}: {exc}")] * len(questions)
    finally:
        pool.shutdown(wait=False)  # a timed-out check's thread cannot be killed; do not wait on it
    if len(results) != len(questions):
        results = [CheckResult("error", f"check returned {len(results)} results for "
                                        f"{len(questions)} questions")] * len(questions)
    return results


@dataclass
class CheckTally:
    """One check's verdicts over a call: counts per status, the commonest failure reasons,
    and the benchmark sets it checked against (decontamination's lineage)."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    sets_checked: list[str] | None = None


@dataclass
class ChecksSummary:
    """What `run_checks` did: a tally per check, and how many questions passed every check."""

    questions: int
    checks: dict[str, CheckTally] = field(default_factory=dict)
    passed_all: int = 0
    verdicts_written: int = 0


def run_checks(wh: "Warehouse | None", questions: Sequence[QuestionRecord],
               checks: Sequence[Check], run_id: str, *, judge: AlternativesJudge | None = None,
               pages: PageSearch | None = None, timeout_s: float = CHECK_TIMEOUT_S,
               write: bool = True) -> ChecksSummary:
    """Run ``checks`` over ``questions``; write one verdict per (question, check) in one commit.

    ``judge`` and ``pages`` (the page search UniqueAnswer uses) go to the checks' context.
    """
    ctx = CheckContext(wh=wh, judge=judge, pages=pages)
    verdicts: list[VerdictRecord] = []
    summary = ChecksSummary(questions=len(questions))
    failed: set[str] = set()
    for check in checks:
        results = run_check(check, questions, ctx, timeout_s)
        summary.checks[check.name] = _tally(results)
        for q, r in zip(questions, results):
            if r.status != "pass":
                failed.add(q.question_id)
            verdicts.append(VerdictRecord(question_id=q.question_id, check_name=check.name,
                                          status=r.status, reason=r.reason,
                                          details=r.details_json(), run_id=run_id))
    if write and verdicts:
        if wh is None:
            raise ValueError("run_checks(write=True) needs a warehouse")
        wh.append(verdicts, run_id=run_id)
    summary.passed_all = len(questions) - len(failed)
    summary.verdicts_written = len(verdicts) if write else 0
    return summary


def _tally(results: Sequence[CheckResult]) -> CheckTally:
    counts = Counter(r.status for r in results)
    reasons = Counter(r.reason.split(":")[0] for r in results if r.status != "pass")
    tally = CheckTally(counts["pass"], counts["fail"], counts["error"],
                       dict(reasons.most_common(10)))
    if any("sets_checked" in r.details for r in results):
        tally.sets_checked = sorted({s for r in results for s in r.details.get("sets_checked", ())})
    return tally


def default_checks(benchmarks: str = "hub", threshold: float | None = None,
                   embedder: "Embedder | None" = None) -> list[Check]:
    """The standard set, in the order they run."""
    from verifiers.checks import AnswerNotLeaked, Grounded, WellFormed
    from verifiers.decontam import Decontamination
    from verifiers.dedup import DEFAULT_THRESHOLD, NearDuplicates
    from verifiers.shortcut import Shortcut
    from verifiers.uniqueness import UniqueAnswer
    return [WellFormed(), AnswerNotLeaked(), Grounded(), UniqueAnswer(), Shortcut(),
            NearDuplicates(threshold=threshold or DEFAULT_THRESHOLD, embedder=embedder),
            Decontamination(source=benchmarks)]
