"""Agreement of the equivalence rules with human labels on public answer-equivalence sets.

Loaders turn each set into ``LabelledPair`` rows; :func:`agreement` reports
the share of pairs where the judge agrees with the human label, overall and
per answering system. Used by the tests and ``benchmarks/bench_verifiers.py``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

EVOUNA_SYSTEMS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")


@dataclass(frozen=True)
class LabelledPair:
    question: str
    gold: str
    aliases: tuple[str, ...]
    prediction: str
    label: bool
    system: str


def load_evouna(path: str | Path) -> list[LabelledPair]:
    """EVOUNA (Wang et al. 2023): gold aliases are '/'-separated; ``improper`` rows and
    null labels are skipped."""
    rows = json.loads(Path(path).read_text())
    out = []
    for row in rows:
        if row.get("improper"):
            continue
        golds = [g.strip() for g in row["golden_answer"].split("/") if g.strip()]
        for system in EVOUNA_SYSTEMS:
            label = row.get(f"judge_{system}")
            if label is None or row.get(f"answer_{system}") is None:
                continue
            out.append(LabelledPair(row["question"], golds[0], tuple(golds[1:]),
                                    row[f"answer_{system}"], bool(label), system))
    return out


def load_nq301(path: str | Path) -> list[LabelledPair]:
    """NQ301 (Kamalloo et al. 2023): majority human label per (question, candidate)."""
    out = []
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            golds = row["gold_answers"]
            out.append(LabelledPair(row["question"], golds[0], tuple(golds[1:]), row["candidate"],
                                    bool(row["label"]), "all"))
    return out


LabelJudge = Callable[[LabelledPair], bool]


def agreement(pairs: Iterable[LabelledPair], judge: LabelJudge) -> dict[str, float]:
    """Share of pairs where ``judge`` agrees with the human label: ``{"all": …, system: …}``."""
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pair in pairs:
        ok = int(judge(pair) == pair.label)
        for key in ("all", pair.system):
            hits[key][0] += ok
            hits[key][1] += 1
    return {k: round(h / n, 4) for k, (h, n) in hits.items()}


def rules_judge(pair: LabelledPair) -> bool:
    from verifiers.equivalence import is_equivalent
    return is_equivalent(pair.prediction, pair.gold, pair.aliases, pair.question)
