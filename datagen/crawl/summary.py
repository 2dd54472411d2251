"""A crawl's summary: the counts `datagen crawl` prints and the crawl run's row stores."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class CrawlSummary:
    """What one crawl did: URLs stored, skipped and failed, counted by reason code."""

    run_id: str = ""
    stored: int = 0
    skipped: int = 0
    failed: int = 0
    by_reason: Counter = field(default_factory=Counter)  # (outcome, reason code) -> count
    elapsed_s: float = 0.0
    bytes: int = 0
    discovered: int = 0  # URLs queued so far (grows as links are found)
    already_stored: int = 0  # resume: stored earlier, not requested again (links followed)

    @property
    def attempted(self) -> int:
        return self.stored + self.skipped + self.failed

    def as_dict(self) -> dict:
        return {"stored": self.stored, "skipped": self.skipped, "failed": self.failed,
                "already_stored": self.already_stored,
                "bytes": self.bytes, "elapsed_s": round(self.elapsed_s, 3),
                "by_reason": {f"{o}:{r}": n for (o, r), n in sorted(self.by_reason.items())}}


def reason_code(reason: str) -> str:
    """A fetch reason's code, what the summary counts by: 'duplicate_url: http://…' ->
    'duplicate_url'."""
    return reason.split(":", 1)[0].strip() if reason else ""


def crawl_with_progress(wh, demo: bool, overrides: dict) -> CrawlSummary:
    """`datagen crawl`'s run (the demo world or `overrides`' seeds) under a bar on stderr."""
    from datagen.crawl import CrawlConfig, crawl_demo, run_crawl
    from datagen.tables import progress_bar
    fields = ("stored {task.fields[stored]} skipped {task.fields[skipped]} "
              "failed {task.fields[failed]}")
    with progress_bar("crawl", fields) as bar:
        task = bar.add_task("crawl", total=None, stored=0, skipped=0, failed=0)

        def update(s: CrawlSummary) -> None:
            bar.update(task, completed=s.attempted, total=max(s.discovered, s.attempted),
                       stored=s.stored, skipped=s.skipped, failed=s.failed)
        if demo:
            return crawl_demo(wh, on_progress=update, **overrides)
        return run_crawl(CrawlConfig(**overrides), wh, on_progress=update)


def print_crawl_summary(summary: CrawlSummary, root: Path) -> None:
    """The outcome x reason table and the pages/s line `datagen crawl` prints."""
    from datagen.tables import count_table, stdout_console
    table = count_table(f"crawl {summary.run_id}", "outcome", "reason", "URLs>")
    for (outcome, reason), n in sorted(summary.by_reason.items(), key=lambda kv: (kv[0][0], -kv[1])):
        table.add_row(outcome, reason or "-", str(n))
    table.add_section()
    table.add_row("total", f"stored {summary.stored} / skipped {summary.skipped} / "
                  f"failed {summary.failed}", str(summary.attempted))
    console = stdout_console()
    console.print(table)
    rate = summary.stored / summary.elapsed_s if summary.elapsed_s else 0.0
    console.print(f"{summary.stored} pages stored in {summary.elapsed_s:.1f} s "
                  f"({rate:.0f} pages/s) -> warehouse {root}")
