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
from typing import Any, Sequence

from warehouse import QuestionRecord, VerdictRecord

from verifiers.checks import CheckContext, CheckResult

log = logging.getLogger(__name__)
DEFAULT_TIMEOUT_S = 600.0


def run_check(check: Any, questions: Sequence[QuestionRecord], ctx: CheckContext,
              timeout_s: float = DEFAULT_TIMEOUT_S) -> list[CheckResult]:
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


def run_checks(wh: Any, questions: Sequence[QuestionRecord], checks: Sequence[Any], run_id: str,
               *, judge: Any = None, timeout_s: float = DEFAULT_TIMEOUT_S,
               write: bool = True, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run ``checks`` over ``questions``; write one verdict per (question, check) in one commit.

    ``extra`` goes to the checks' context (e.g. ``page_tools``, the page index that
    UniqueAnswer searches). Returns a summary: counts per check and status, failure
    reasons, and which questions passed every check.
    """
    ctx = CheckContext(wh=wh, judge=judge, extra=dict(extra or {}))
    verdicts: list[VerdictRecord] = []
    summary: dict[str, Any] = {"questions": len(questions), "checks": {}}
    failed: set[str] = set()
    for check in checks:
        results = run_check(check, questions, ctx, timeout_s)
        counts = Counter(r.status for r in results)
        reasons = Counter(r.reason.split(":")[0] for r in results if r.status != "pass")
        summary["checks"][check.name] = {"pass": counts["pass"], "fail": counts["fail"],
                                         "error": counts["error"],
                                         "reasons": dict(reasons.most_common(10))}
        sets = {s for r in results for s in r.details.get("sets_checked", ())}
        if any("sets_checked" in r.details for r in results):
            summary["checks"][check.name]["sets_checked"] = sorted(sets)  # lineage
        for q, r in zip(questions, results):
            if r.status != "pass":
                failed.add(q.question_id)
            verdicts.append(VerdictRecord(question_id=q.question_id, check_name=check.name,
                                          status=r.status, reason=r.reason,
                                          details=r.details_json(), run_id=run_id))
    if write and verdicts:
        wh.append(verdicts, run_id=run_id)
    summary["passed_all"] = len(questions) - len(failed)
    summary["verdicts_written"] = len(verdicts) if write else 0
    return summary


def default_checks(benchmarks: str = "hub", threshold: float | None = None,
                   embedder: Any = None) -> list[Any]:
    """The standard set, in the order they run."""
    from verifiers.checks import AnswerNotLeaked, Grounded, WellFormed
    from verifiers.decontam import Decontamination
    from verifiers.dedup import DEFAULT_THRESHOLD, NearDuplicates
    from verifiers.uniqueness import UniqueAnswer
    return [WellFormed(), AnswerNotLeaked(), Grounded(), UniqueAnswer(),
            NearDuplicates(threshold=threshold or DEFAULT_THRESHOLD, embedder=embedder),
            Decontamination(source=benchmarks)]
