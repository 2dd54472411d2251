"""A crawl's summary: the counts `datagen crawl` prints and the crawl run's row stores."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


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
