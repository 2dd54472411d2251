"""The build summary (flows/report.py) counts the shortcut check's latest verdicts by hops, in
its printed table and in its markdown."""

from __future__ import annotations

from flows.build import BuildResult, StageRun
from flows.config import BuildConfig
from flows.report import build_report, markdown, print_build_report
from flows.stages import StageResult
from warehouse import QuestionRecord, VerdictRecord


def _verdict(qid: str, status: str, at: int) -> VerdictRecord:
    import datetime as dt
    return VerdictRecord(question_id=qid, check_name="shortcut", status=status,
                         reason="shortcut" if status == "fail" else "",
                         created_at=dt.datetime(2026, 1, 1, at, tzinfo=dt.timezone.utc))


def _build() -> BuildResult:
    """A finished build's outcome as the report reads it: one run per stage."""
    out = BuildResult(run_id="build-1")
    for stage in ("crawl", "compose", "verify", "band"):
        out.stages[stage] = StageRun(StageResult(stage, f"{stage}-1", "k", 0), 1.0, False)
    return out


def test_the_summary_has_the_share_of_shortcuts_by_hops(wh, capsys, tmp_path):
    hops = {"a": 2, "b": 2, "c": 2, "d": 3, "one": 1}
    wh.append([QuestionRecord(question_id=q, question=f"{q}?", answer="x", hops=h)
               for q, h in hops.items()], run_id="compose-1")
    # b failed, then passed a later check: its latest verdict counts; one-hop questions do not
    wh.append([_verdict("a", "fail", 1), _verdict("b", "fail", 1), _verdict("b", "pass", 2),
               _verdict("c", "pass", 1), _verdict("d", "fail", 1), _verdict("one", "pass", 1)],
              run_id="verify-1")
    report = build_report(wh, BuildConfig(), _build())
    assert report["shortcuts_by_hops"] == {"2": {"judged": 3, "shortcuts": 1},
                                           "3": {"judged": 1, "shortcuts": 1}}
    text = markdown(report)
    assert "| 2 | 1 of 3 (0.333) |" in text and "| 3 | 1 of 1 (1.000) |" in text
    print_build_report(report, tmp_path)
    printed = capsys.readouterr().out
    assert "shortcuts, 2 hops" in printed and "1 of 3 (0.333)" in printed
