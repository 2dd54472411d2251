"""The build's summary: read from the warehouse (so a resumed or cached build reports the
same), printed as a table by the CLI and attached to the flow run as a markdown artifact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from warehouse.views import shortcut_share, shortcut_table, shortcuts_by_hops

NEXT_COMMANDS = [
    'datagen query "select band, count(*) from train_ready group by 1"',
    'datagen query "select hops, band, count(*) from train_ready group by all order by 1, 2"',
    "datagen export --format jsonl out/",
    "datagen train --config examples/train_build_cpu.yaml --run-dir runs/build",
]


def build_report(wh, cfg, out) -> dict[str, Any]:
    """Counts a user wants after a build, by stage, plus the time each stage took."""
    crawl_run = out.stages["crawl"].result.run_id
    return {
        "build_run_id": out.run_id,
        "pages": _one(wh, "select count(distinct url) from pages"),
        "fetches": _pairs(wh, "select outcome, count(*) from fetches where run_id = ? "
                          "group by 1 order by 1", [crawl_run]),
        "questions_by_hops": _pairs(wh, "select hops, count(distinct question_id) "
                                    "from questions group by 1 order by 1"),
        "seeds": _one(wh, "select count(distinct question_id) from questions where hops = 1"),
        "compose_rejected": _compose_rejections(out.stages["compose"].result.summary),
        "verify_failed": _pairs(wh, _FAILED_SQL),
        "shortcuts_by_hops": shortcuts_by_hops(wh),
        "train_ready_by_band": _pairs(wh, "select band, count(*) from train_ready "
                                      "group by 1 order by 1"),
        "train_ready": _one(wh, "select count(*) from train_ready"),
        "decontamination": cfg.verify.resolved(cfg.is_demo).decontamination,
        "stages": {name: {"run_id": s.result.run_id, "seconds": round(s.seconds, 1),
                          "cached": s.cached, "rows": s.result.rows}
                   for name, s in out.stages.items()},
    }


_FAILED_SQL = """
select check_name || ': ' || trim(regexp_replace(split_part(reason, ':', 1),
       '[0-9a-f]{16}|\\(.*?\\)|[0-9]+', '', 'g')) as what, count(*) from (
  select question_id, check_name, arg_max(status, created_at) as status,
         arg_max(reason, created_at) as reason
  from verdicts group by 1, 2)
where status <> 'pass' group by 1 order by 2 desc, 1 limit 20
"""


def _compose_rejections(summary: dict[str, Any]) -> dict[str, int]:
    """Rejected steps and seeds that could not be composed, by reason, commonest first."""
    counts: dict[str, int] = {}
    for key, prefix in (("rejected_steps", "step"), ("not_composed", "seed"),
                        ("seeds_rejected", "seed")):
        for reason, n in (summary.get(key) or {}).items():
            counts[f"{prefix}: {reason}"] = counts.get(f"{prefix}: {reason}", 0) + int(n)
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _one(wh, sql: str) -> int:
    return int(wh.sql(sql).to_pylist()[0].popitem()[1])


def _pairs(wh, sql: str, params: list[Any] | None = None) -> dict[str, int]:
    return {str(k): int(v) for k, v in (tuple(r.values()) for r in wh.sql(sql, params).to_pylist())}


def markdown(report: dict[str, Any]) -> str:
    """The summary as markdown tables (the Prefect artifact, and the run's record)."""
    lines = [f"# datagen build `{report['build_run_id']}`", "",
             f"Pages stored: **{report['pages']}**; seeds: **{report['seeds']}**; "
             f"train_ready: **{report['train_ready']}**; decontamination: "
             f"`{report['decontamination']}`", ""]
    for title, key in (("Fetches (this build's crawl)", "fetches"),
                       ("Questions by hops", "questions_by_hops"),
                       ("Compose: rejected steps by reason", "compose_rejected"),
                       ("Verify: failed by check and reason", "verify_failed"),
                       ("train_ready by band", "train_ready_by_band")):
        lines += [f"## {title}", "", "| | count |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in report[key].items()] or ["| (none) | 0 |"]
        lines.append("")
    lines += _shortcut_table(report["shortcuts_by_hops"])
    lines += ["## Stages", "", "| stage | seconds | cached | rows | run |", "|---|---:|---|---:|---|"]
    lines += [f"| {k} | {s['seconds']} | {s['cached']} | {s['rows']} | `{s['run_id']}` |"
              for k, s in report["stages"].items()]
    lines += ["", "## Next", ""] + [f"    {c}" for c in NEXT_COMMANDS]
    return "\n".join(lines) + "\n"


def _shortcut_table(shortcuts: dict[str, dict[str, int]]) -> list[str]:
    """Markdown: per hops, the questions one search gives away among those the check judged."""
    return (["## Verify: shortcuts by hops (one search finds the answer's page)", ""]
            + shortcut_table(shortcuts) + [""])


def publish(out) -> str:
    """Attach the summary to the running flow as a markdown artifact; return the markdown."""
    from prefect.artifacts import create_markdown_artifact
    text = markdown(out.report)
    create_markdown_artifact(markdown=text, key="build-summary",
                             description=f"datagen build {out.run_id}")
    return text


def print_build_report(report: dict[str, Any], root: Path) -> None:
    """The summary as `datagen build` prints it: a count table, stage times, next commands."""
    from datagen.tables import stdout_console
    console = stdout_console()
    console.print(_report_table(report))
    stages = ", ".join(f"{k} {v['seconds']:.0f} s{' (cached)' if v['cached'] else ''}"
                       for k, v in report["stages"].items())
    console.print(f"stages: {stages}; decontamination {report['decontamination']}; "
                  f"warehouse {root}")
    console.print("next: " + "\n      ".join(NEXT_COMMANDS))


def _report_table(report: dict[str, Any]):
    from datagen.tables import count_table
    table = count_table(f"datagen build {report['build_run_id']}", "what", "count>")
    rows = [("pages stored", report["pages"])]
    rows += [(f"fetches {k} (this build)", n) for k, n in report["fetches"].items()]
    rows += [("seed questions (1 hop)", report["seeds"])]
    rows += [(f"questions with {k} hops", n) for k, n in report["questions_by_hops"].items()]
    rows += [(f"compose rejected: {k}", n) for k, n in list(report["compose_rejected"].items())[:8]]
    rows += [(f"verify failed: {k}", n) for k, n in list(report["verify_failed"].items())[:8]]
    rows += [(f"shortcuts, {h} hops", shortcut_share(c))
             for h, c in report["shortcuts_by_hops"].items()]
    rows += [(f"train_ready {k}", n) for k, n in report["train_ready_by_band"].items()]
    for what, n in rows + [("train_ready", report["train_ready"])]:
        table.add_row(what, str(n))
    return table
