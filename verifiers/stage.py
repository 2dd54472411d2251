"""The verify stage: every question check of `verifiers`, in batches, one commit per batch.

A rerun skips questions that already hold a verdict from every check it runs (so a build
killed mid-verify resumes where it stopped); `where` re-checks the questions it selects.
The build's flow (flows/verify.py) calls `run_verify`, and hands it the page search.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from verifiers.config import VerifyConfig
from warehouse.views import shortcuts_by_hops

if TYPE_CHECKING:
    from verifiers import Check, ChecksSummary, PageSearch
    from verifiers.decontam import Decontamination
    from warehouse import QuestionRecord, Warehouse

log = logging.getLogger(__name__)
WHOLE_SET_CHECKS = ("near_duplicates",)  # compare each question with all the others


class StageError(Exception):
    """A stage cannot run at all (bad setting, unreachable dependency): one clear line."""


@dataclass
class VerifySummary:
    run_id: str = ""
    questions: int = 0
    skipped_verified: int = 0
    passed_all: int = 0
    verdicts: int = 0
    by_check: dict[str, Counter] = field(default_factory=dict)  # check -> status/reason counts
    # hops -> {judged, shortcuts}: the shortcut check's latest verdicts, whole warehouse
    shortcuts_by_hops: dict[str, dict[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"questions": self.questions, "skipped_verified": self.skipped_verified,
                "passed_all": self.passed_all, "verdicts": self.verdicts,
                "by_check": {k: dict(v) for k, v in self.by_check.items()},
                "shortcuts_by_hops": self.shortcuts_by_hops}


def build_checks(cfg: VerifyConfig) -> list["Check"]:
    """verifiers' default checks in their default order; near-duplicates also against the
    stored questions; decontamination as configured (`off` leaves it out)."""
    from verifiers import default_checks
    from verifiers.dedup import NearDuplicates
    source = cfg.decontamination
    checks = default_checks(benchmarks="hub" if source in ("off", "auto") else source,
                            threshold=cfg.near_dup_threshold)
    out = []
    for check in checks:
        if check.name == "decontamination" and source == "off":
            continue
        if isinstance(check, NearDuplicates):
            check.against_stored = True
        out.append(check)
    if source == "hub":
        _require_hub(next(c for c in out if c.name == "decontamination"))
    return out


def _require_hub(check: "Decontamination") -> None:
    """An unreachable hub must fail the stage, not turn every verdict into `error`."""
    if not check.load().sets:
        raise StageError("decontamination: no benchmark set could be loaded from the Hugging "
                         "Face hub (unreachable, nothing cached); set verify.decontamination to "
                         "a folder of benchmark JSONL files, or to off")


def select(wh: "Warehouse", check_names: list[str],
           where: str | None) -> list["QuestionRecord"]:
    """The questions to check: `where` if given, else those missing a verdict of some check."""
    from warehouse import QuestionRecord
    if where:
        ids = [r["question_id"] for r in wh.sql(
            f"select distinct question_id from questions where {where}").to_pylist()]
    else:
        placeholders = ", ".join("?" * len(check_names))
        ids = [r["question_id"] for r in wh.sql(
            "select q.question_id from (select distinct question_id from questions) q "
            "left join (select question_id, count(distinct check_name) as n from verdicts "
            f"where check_name in ({placeholders}) group by 1) v using (question_id) "
            "where coalesce(v.n, 0) < ? order by 1", [*check_names, len(check_names)]).to_pylist()]
    if not ids:
        return []
    rows = wh.read(QuestionRecord, where=in_ids(ids))
    newest: dict[str, QuestionRecord] = {}
    for q in sorted(rows, key=lambda r: r.created_at):
        newest[q.question_id] = q
    return [newest[i] for i in sorted(newest)]


def in_ids(ids: list[str]) -> str:
    """SQL: `question_id in (...)` for these ids."""
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    return f"question_id in ({quoted})"


def run_verify(wh: "Warehouse", cfg: VerifyConfig, *, where: str | None = None,
               parent_run_id: str = "", pages: "PageSearch | None" = None,
               progress: Callable[[int, int], None] | None = None,
               only: list[str] | None = None) -> VerifySummary:
    """Check the selected questions batch by batch, as one `verify` run (`only`: just these
    checks, by name — the Dask runner's shards split them). `pages`: the page search the
    unique-answer check uses (datagen's PageTools; without it the check opens the
    warehouse's own index)."""
    from verifiers import run_checks
    checks = [c for c in build_checks(cfg) if only is None or c.name in only]
    names = [c.name for c in checks]
    summary = VerifySummary()
    with wh.run("verify", {**cfg.model_dump(), "where": where, "checks": names},
                parent_run_id=parent_run_id) as run:
        summary.run_id = run.run_id
        todo = select(wh, names, where)
        summary.questions = len(todo)
        _embed_ahead(checks, todo, cfg.batch_size)
        for start in range(0, len(todo), cfg.batch_size):
            batch = todo[start:start + cfg.batch_size]
            out = run_checks(wh, batch, checks, run.run_id, timeout_s=cfg.timeout_s,
                             pages=pages)
            _count(summary, out)
            if progress:
                progress(start + len(batch), len(todo))
        if "shortcut" in names:
            summary.shortcuts_by_hops = shortcuts_by_hops(wh)
        run.summary = summary.as_dict()
    return summary


def _embed_ahead(checks: list["Check"], todo: list["QuestionRecord"], batch_size: int) -> None:
    """Start the near-duplicate check's embedding of every batch now, in the background: the
    model runs on one core while the other checks work through the batches on the other."""
    from verifiers.dedup import NearDuplicates
    batches = [[q.question for q in todo[i:i + batch_size]]
               for i in range(0, len(todo), batch_size)]
    for check in checks:
        if isinstance(check, NearDuplicates) and batches:
            check.encode_ahead(batches)


def _count(summary: VerifySummary, out: "ChecksSummary") -> None:
    summary.passed_all += out.passed_all
    summary.verdicts += out.verdicts_written
    for name, tally in out.checks.items():
        c = summary.by_check.setdefault(name, Counter())
        c["pass"] += tally.passed
        c["fail"] += tally.failed
        c["error"] += tally.errors
        for reason, n in tally.reasons.items():
            c[f"reason:{reason_kind(reason)}"] += n


def reason_kind(reason: str) -> str:
    """A verdict's reason without the ids and figures that make each one unique, so that
    reasons of one kind count together."""
    return re.sub(r"\s+", " ", re.sub(r"\b[0-9a-f]{16}\b|\(.*?\)|\d+(\.\d+)?", "", reason)).strip()
