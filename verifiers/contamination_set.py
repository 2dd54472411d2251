"""A labelled set for measuring decontamination, built from benchmark question files.

How it is built (deterministic for a seed):

1. All questions of the folder's JSONL files, de-duplicated by normalised text,
   are shuffled and split in two halves: the *indexed* half plays the benchmark,
   the *held-out* half supplies realistic unrelated questions.
2. Positives (contaminated), from indexed questions, in equal numbers:
   ``copy`` (verbatim), ``reworded`` (common paraphrases: "Who" → "Which person",
   "film" → "movie", "What is" → "What's", … plus a lead-in such as "Can you
   tell me"), ``reordered`` (a trailing phrase moved to the front), and
   ``pronoun`` (a multi-word proper name replaced by "him"/"her"/"it").
3. Negatives (clean), in equal numbers: ``same_topic`` — held-out questions that
   share a rare content word (usually an entity) with some indexed question —
   and ``templated`` — a new question about an entity of an indexed question
   ("When was X founded?"), i.e. the same topic, a different question.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from verifiers.decontam import load_folder
from verifiers.normalize import STOPWORDS, canonical_tokens, squad_normalize

REWORDINGS = [
    (r"^Who\b", "Which person"), (r"\bfilm\b", "movie"), (r"\bmovie\b", "film"),
    (r"^What is\b", "What's"), (r"^What was\b", "Which was"), (r"\bborn\b", "brought into the world"),
    (r"\blocated\b", "situated"), (r"\bdirected\b", "was the director of"),
    (r"\bWhen\b", "At what time"), (r"\bcountry\b", "nation"), (r"\bsong\b", "track"),
    (r"\bwrote\b", "was the author of"), (r"\bdied\b", "passed away"),
]
LEAD_INS = ["Can you tell me ", "Do you know ", "Quick question: ", "I wonder, "]
# questions about a name taken from an indexed question, asking something else of it
UNRELATED_TEMPLATES = ["When was {} founded?", "What is the population of {}?",
                       "Who owns {} today?", "What language is spoken in {}?", "How tall is {}?",
                       "What colour is the logo of {}?"]
_NAME = re.compile(r"(?<!^)(?<![.?!] )\b([A-Z][a-z]+(?: [A-Z][a-z]+)+)")


@dataclass(frozen=True)
class LabelledQuestion:
    question: str
    contaminated: bool
    kind: str
    source: str  # the benchmark question it was made from (or a same-topic neighbour)


def _reword(q: str, rng: random.Random) -> str:
    out = q
    for pattern, repl in REWORDINGS:
        out = re.sub(pattern, repl, out, count=1)
    lead = rng.choice(LEAD_INS)
    return lead + out[0].lower() + out[1:]


def _reorder(q: str) -> str | None:
    body = q.rstrip("?").rstrip()
    cut = max(body.rfind(", "), max(body.rfind(f" {p} ") for p in ("in", "on", "at", "during")))
    if cut < len(body) // 3:
        return None
    head, tail = body[:cut].rstrip(","), body[cut:].lstrip(", ").strip()
    return f"{tail[0].upper()}{tail[1:]}, {head[0].lower()}{head[1:]}?"


def _pronoun(q: str, rng: random.Random) -> str | None:
    m = _NAME.search(q)
    if not m:
        return None
    return q[:m.start()] + rng.choice(["him", "her", "it", "them"]) + q[m.end():]


def _split(folder: Path, seed: int) -> tuple[list[str], list[str]]:
    seen, questions = set(), []
    for qs in load_folder(folder).values():
        for q in qs:
            key = squad_normalize(q)
            if key not in seen and 4 <= len(q.split()) <= 40:
                seen.add(key)
                questions.append(q)
    rng = random.Random(seed)
    rng.shuffle(questions)
    half = len(questions) // 2
    return questions[:half], questions[half:]


def build_labelled_set(folder: str | Path, n_per_kind: int = 75, seed: int = 0
                       ) -> tuple[dict[str, list[str]], list[LabelledQuestion]]:
    """(the benchmark sets to index, the labelled questions). See the module docstring."""
    rng = random.Random(seed)
    indexed, held_out = _split(Path(folder), seed)
    rows: list[LabelledQuestion] = []
    makers = {"copy": lambda q: q, "reworded": lambda q: _reword(q, rng),
              "reordered": _reorder, "pronoun": lambda q: _pronoun(q, rng)}
    for kind, make in makers.items():
        made = 0
        for q in rng.sample(indexed, len(indexed)):
            edited = make(q)
            if edited and made < n_per_kind:
                rows.append(LabelledQuestion(edited, True, kind, q))
                made += 1
    rows += _same_topic(indexed, held_out, n_per_kind * 2, rng)
    rows += _templated(indexed, n_per_kind * 2, rng)
    return {"indexed": indexed}, rows


def _content(q: str) -> set[str]:
    return {w for w in canonical_tokens(q).words if w not in STOPWORDS and len(w) > 3}


def _same_topic(indexed: list[str], held_out: list[str], n: int, rng: random.Random
                ) -> list[LabelledQuestion]:
    df = Counter(w for q in indexed for w in _content(q))
    by_word: dict[str, str] = {}
    for q in indexed:
        for w in _content(q):
            if 1 <= df[w] <= 3:
                by_word.setdefault(w, q)
    out = []
    for q in rng.sample(held_out, len(held_out)):
        shared = [w for w in _content(q) if w in by_word]
        if shared and len(out) < n:
            out.append(LabelledQuestion(q, False, "same_topic", by_word[shared[0]]))
    return out


def _templated(indexed: list[str], n: int, rng: random.Random) -> list[LabelledQuestion]:
    out = []
    for q in rng.sample(indexed, len(indexed)):
        m = _NAME.search(q)
        if m and len(out) < n:
            out.append(LabelledQuestion(rng.choice(UNRELATED_TEMPLATES).format(m.group(1)), False,
                                        "templated", q))
    return out


def precision_recall(index, rows: list[LabelledQuestion]) -> dict[str, float]:
    """Precision/recall of ``index.match`` on the labelled rows, plus recall per positive kind
    and false-positive rate per negative kind."""
    flagged = [(r, index.match(r.question) is not None) for r in rows]
    tp = sum(1 for r, f in flagged if f and r.contaminated)
    fp = sum(1 for r, f in flagged if f and not r.contaminated)
    fn = sum(1 for r, f in flagged if not f and r.contaminated)
    out = {"precision": round(tp / max(1, tp + fp), 4), "recall": round(tp / max(1, tp + fn), 4),
           "n": len(rows)}
    for kind in sorted({r.kind for r in rows}):
        sub = [f for r, f in flagged if r.kind == kind]
        out[f"flagged_{kind}"] = round(sum(sub) / max(1, len(sub)), 4)
    return out
