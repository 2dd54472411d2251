"""What the question import takes and reports (no logic): the shape of a person's question
it reads, its config, the gold pages it found, and its summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol

from pydantic import BaseModel, ConfigDict, field_validator

# Why a question of the file was not imported (the summary's `skipped` keys)
NO_GOLD_PAGES = "no_gold_pages"          # the row names no gold paragraph (gold_pids, titles)
GOLD_PAGE_MISSING = "gold_page_missing"  # a gold paragraph's page is not in the warehouse


class HumanQuestion(Protocol):
    """A person's question as `datagen eval` reads it (training.evaluation.questions'
    EvalQuestion): its id in the file, gold answer first then aliases, the gold pages' titles
    and its type (bridge, comparison, or "" when it has none)."""

    question_id: str
    question: str
    answers: tuple[str, ...]
    support_titles: tuple[str, ...]
    kind: str


class ImportConfig(BaseModel):
    """`datagen import-questions`: the JSONL file and the split whose rows are imported
    (None: every row)."""

    model_config = ConfigDict(extra="forbid")
    questions: Path
    split: Optional[str] = None

    @field_validator("questions")
    @classmethod
    def _exists(cls, v: Path) -> Path:
        if not v.is_file():
            raise ValueError(f"no such file: {v} (give a JSONL file of id, question, "
                             "answers, gold_pids or support_titles)")
        return v


@dataclass(frozen=True)
class GoldPage:
    """A gold paragraph's stored page: its latest text and the pages it links, by url, with
    the anchor text that names each."""

    url: str
    title: str
    text: str
    links: dict[str, str] = field(default_factory=dict)


@dataclass
class ImportSummary:
    run_id: str = ""
    questions: int = 0                 # rows of the split read from the file
    imported: int = 0                  # new question rows written
    existing: int = 0                  # already in the warehouse (an earlier import)
    skipped: Counter = field(default_factory=Counter)     # reason -> questions
    by_hops: Counter = field(default_factory=Counter)     # of imported + existing
    by_kind: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        return {"run_id": self.run_id, "questions": self.questions, "imported": self.imported,
                "existing": self.existing, "skipped": dict(self.skipped),
                "by_hops": {str(k): v for k, v in sorted(self.by_hops.items())},
                "by_kind": dict(self.by_kind)}

    def line(self) -> str:
        """What `datagen import-questions` prints: imported, already stored, skipped by
        reason, hops and kind."""
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(self.skipped.items())) or "none"
        hops = ", ".join(f"{k}: {v}" for k, v in sorted(self.by_hops.items()))
        kinds = ", ".join(f"{k}: {v}" for k, v in sorted(self.by_kind.items()))
        return (f"read {self.questions} questions: imported {self.imported}, already stored "
                f"{self.existing}, skipped {skipped}; hops {{{hops}}}; kind {{{kinds}}} "
                f"(run {self.run_id})")
