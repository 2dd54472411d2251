"""The verify stage in the build's flow: the stage itself is `verifiers.stage` (its library
code lives in its package, as every stage's does); here, only the Dask runner's shard of it,
which hands the checks the page search the flow builds (`flows.stages.page_tools`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from verifiers.config import VerifyConfig
from warehouse.views import shortcut_share
from verifiers.stage import (
    WHOLE_SET_CHECKS, StageError, VerifySummary, build_checks, in_ids, run_verify, select,
)

if TYPE_CHECKING:
    from warehouse import Warehouse

__all__ = ["StageError", "VerifySummary", "run_verify", "run_verify_part", "in_ids"]


def run_verify_part(wh: "Warehouse", cfg: VerifyConfig, part: dict[str, Any],
                    parent_run_id: str) -> VerifySummary:
    """One Dask shard: a range's questions (`part["ids"]`) through the per-question checks, or
    (`part["whole_set"]`) every question through the checks over the whole set; either skips
    the questions that hold those checks' verdicts (a rerun skips them, as the whole stage
    does)."""
    from flows.stages import page_tools
    whole = bool(part.get("whole_set"))
    names = [c.name for c in build_checks(cfg) if (c.name in WHOLE_SET_CHECKS) == whole]
    if whole:
        return run_verify(wh, cfg, parent_run_id=parent_run_id, only=names)
    mine = set(part["ids"])
    todo = [q.question_id for q in select(wh, names, None) if q.question_id in mine]
    return run_verify(wh, cfg, where=in_ids(todo) if todo else "false",
                      parent_run_id=parent_run_id, pages=page_tools(wh), only=names)


def summary_lines(summary: VerifySummary) -> list[str]:
    """What `datagen verify` prints: the totals, pass/fail/error counts per check, and the
    shortcuts by hops (the warehouse's latest shortcut verdicts)."""
    lines = [f"checked {summary.questions} questions: {summary.passed_all} passed every check, "
             f"{summary.verdicts} verdicts written (run {summary.run_id})"]
    lines += [f"  {name}: pass {c['pass']} fail {c['fail']} error {c['error']}"
              for name, c in summary.by_check.items()]
    return lines + [f"  shortcuts, {h} hops: {shortcut_share(c)}"
                    for h, c in summary.shortcuts_by_hops.items()]
