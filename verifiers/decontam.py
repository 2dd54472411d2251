"""Benchmark decontamination: is a question a copy or light edit of a benchmark question?

Benchmark questions come from a folder of JSONL files (offline; any of the
fields ``question``, ``Question``, ``problem``, ``Prompt``) or, with network,
from the public dataset ids in :data:`DEFAULT_BENCHMARKS`, fetched once and
cached as JSONL. Every run records which sets it checked; with none, every
verdict is ``error`` and a warning is logged — never a silent pass.

Matching is lexical, in the spirit of the n-gram decontaminators (open-r1's
8-gram, lm-eval's 13-gram) but sized for one-sentence questions, where a
single swapped word breaks every long n-gram:

* word 3-gram containment: the share of the question's 3-grams found in the
  benchmark question (catches copies and reordered clauses);
* content-word overlap on truncated stems (first 6 letters, so
  "directed"/"director" agree), both ways: nearly all of the question's
  content words appear in the benchmark question, and nearly all of the
  benchmark question's content words that are not names appear in the
  question (catches rewording, and a name swapped for a pronoun, which drops
  a name but not what is asked about it).

Both require every named entity of the question (its capitalised words) to
be in the benchmark question: template siblings such as 2Wiki's "Which film
has the director born later, X or Y?" share most words but ask about other
entities. Candidates come from an inverted index over content stems, so a check costs
a few set operations per candidate, not a scan of every benchmark question.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from warehouse import QuestionRecord

from verifiers.checks import CheckContext, CheckResult, fail
from verifiers.normalize import STOPWORDS, canonical_tokens

log = logging.getLogger(__name__)
QUESTION_FIELDS = ("question", "Question", "problem", "Prompt", "query")
CACHE_DIR = Path.home() / ".cache" / "hardqa" / "benchmarks"


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    dataset_id: str
    split: str
    config: str | None = None
    field: str = "question"


# Standard multi-hop and search QA benchmarks, by their public Hugging Face ids.
DEFAULT_BENCHMARKS = (
    BenchmarkSpec("hotpotqa", "hotpotqa/hotpot_qa", "validation", "distractor"),
    BenchmarkSpec("2wikimultihopqa", "framolfese/2WikiMultihopQA", "validation"),
    BenchmarkSpec("musique", "dgslibisey/MuSiQue", "validation"),
    BenchmarkSpec("bamboogle", "chiayewken/bamboogle", "test", field="Question"),
    BenchmarkSpec("frames", "google/frames-benchmark", "test", field="Prompt"),
    BenchmarkSpec("nq_open", "google-research-datasets/nq_open", "validation"),
    BenchmarkSpec("triviaqa", "mandarjoshi/trivia_qa", "validation", "rc.nocontext"),
    BenchmarkSpec("popqa", "akariasai/PopQA", "test"),
    BenchmarkSpec("simpleqa", "basicv8vc/SimpleQA", "test", field="problem"),
)


def _question_of(row: dict) -> str | None:
    for key in QUESTION_FIELDS:
        if isinstance(row.get(key), str) and row[key].strip():
            return row[key]
    return None


def load_folder(folder: str | Path) -> dict[str, list[str]]:
    """{set name (file stem): questions} from every ``*.jsonl`` file in ``folder``."""
    sets: dict[str, list[str]] = {}
    for path in sorted(Path(folder).glob("*.jsonl")):
        qs = _read_questions(path)
        if qs:
            sets[path.stem] = qs
    return sets


def load_hub(specs: Iterable[BenchmarkSpec] = DEFAULT_BENCHMARKS,
             cache_dir: Path | None = None) -> dict[str, list[str]]:
    """Fetch each benchmark once (needs network) and cache its questions as JSONL.

    Sets already cached are used offline; the hub is probed once (3 s) so a
    machine without network does not sit through the hub client's retries."""
    cache_dir = cache_dir or CACHE_DIR
    sets: dict[str, list[str]] = {}
    online: bool | None = None
    for spec in specs:
        cached = cache_dir / f"{spec.name}.jsonl"
        if not cached.exists():
            online = hub_reachable() if online is None else online
            if not online:
                log.warning("benchmark %s (%s) not cached and the hub is unreachable",
                            spec.name, spec.dataset_id)
                continue
            try:
                _fetch(spec, cached)
            except Exception as exc:  # any hub/network failure: report the set as unavailable
                log.warning("benchmark %s (%s) unavailable: %s", spec.name, spec.dataset_id, exc)
                continue
        sets[spec.name] = _read_questions(cached)
    return sets


def hub_missing(specs: Iterable[BenchmarkSpec] = DEFAULT_BENCHMARKS,
                cache_dir: Path | None = None) -> list[str]:
    """The benchmark sets `load_hub` would have to fetch (not cached yet)."""
    cache_dir = cache_dir or CACHE_DIR
    return [s.name for s in specs if not (cache_dir / f"{s.name}.jsonl").exists()]


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """False when the user said offline (the hub clients' own variables), else a TCP probe."""
    import os
    from urllib.parse import urlparse
    if os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1":
        return False
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    return tcp_reachable(host, 443, timeout_s)


def tcp_reachable(host: str, port: int, timeout_s: float) -> bool:
    """One TCP connect within `timeout_s`: does the host answer at all (the hub, a model
    server), without the retries of a client."""
    import socket
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
        return True
    except OSError:
        return False


def _read_questions(path: Path) -> list[str]:
    with open(path) as fh:
        return [q for q in (_question_of(json.loads(line)) for line in fh if line.strip()) if q]


def _fetch(spec: BenchmarkSpec, target: Path) -> None:
    import datasets
    ds = datasets.load_dataset(spec.dataset_id, spec.config, split=spec.split)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        for row in ds:
            fh.write(json.dumps({"question": row[spec.field]}) + "\n")
    tmp.rename(target)


def _stems(words: Sequence[str]) -> frozenset[str]:
    return frozenset(w[:6] for w in words if w not in STOPWORDS and w not in _QUESTION_WORDS)


# Words that frame a question rather than say what it asks (incl. polite lead-ins).
_QUESTION_WORDS = frozenset({"name", "called", "known", "many", "much", "year", "person", "can",
                             "could", "would", "tell", "know", "wonder", "please", "question"})


_CAPITALISED = re.compile(r"(?<!^)(?<![.?!:] )\b[A-Z][\w'’-]+")


def _name_stems(question: str) -> frozenset[str]:
    """Stems of the capitalised words that are not sentence-initial: the named entities."""
    words = " ".join(_CAPITALISED.findall(question.strip()))
    return _stems(canonical_tokens(words).words)


def _trigrams(words: Sequence[str]) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(words[i:i + 3]) for i in range(len(words) - 2))


@dataclass
class ContaminationIndex:
    """Benchmark questions indexed for overlap search."""

    sets: dict[str, list[str]]
    ngram_min: float = 0.5
    stem_contained_min: float = 0.8
    stem_covered_min: float = 0.8
    _entries: list[tuple[str, str, frozenset, frozenset, frozenset]] = field(default_factory=list, repr=False)
    _postings: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list), repr=False)

    def __post_init__(self) -> None:
        for name, questions in self.sets.items():
            for q in questions:
                words = canonical_tokens(q).words
                stems = _stems(words)
                k = len(self._entries)
                self._entries.append((name, q, stems, _trigrams(words), stems - _name_stems(q)))
                for s in stems:
                    self._postings[s].append(k)

    def match(self, question: str) -> dict[str, Any] | None:
        """The best-matching benchmark question when contaminated, else None."""
        words = canonical_tokens(question).words
        stems, grams, names = _stems(words), _trigrams(words), _name_stems(question)
        if not stems:
            return None
        limit = max(50, len(self._entries) // 20)  # skip words common to many questions
        counts = Counter(k for s in stems if len(self._postings.get(s, ())) <= limit
                         for k in self._postings.get(s, ()))
        best = None
        for k, _ in counts.most_common(50):
            name, text, b_stems, b_grams, b_plain = self._entries[k]
            shared = len(stems & b_stems)
            contained = shared / len(stems)
            # Of the benchmark question's words that are not names, how many we kept: an
            # edit may drop a name (swapped for a pronoun) but not what is asked about it.
            covered = len(stems & b_plain) / len(b_plain) if b_plain else 1.0
            ngram = len(grams & b_grams) / len(grams) if grams else 0.0
            # A question about other named entities is another question, however
            # much of its template it shares ("Which film has the director born later, X or Y?").
            same_names = names <= b_stems
            hit = same_names and (ngram >= self.ngram_min or (
                contained >= self.stem_contained_min and covered >= self.stem_covered_min))
            score = max(ngram, min(contained, covered))
            if hit and (best is None or score > best["score"]):
                best = {"set": name, "benchmark_question": text, "score": round(score, 3),
                        "ngram_containment": round(ngram, 3), "stem_contained": round(contained, 3),
                        "stem_covered": round(covered, 3)}
        return best


@dataclass
class Decontamination:
    """Fail questions that copy or lightly edit a benchmark question (see module docstring).

    ``source``: a folder of JSONL files, or "hub" for :data:`DEFAULT_BENCHMARKS`.
    """

    source: str | Path = "hub"
    index: ContaminationIndex | None = None
    name: str = "decontamination"

    def load(self) -> ContaminationIndex:
        if self.index is None:
            sets = load_hub() if str(self.source) == "hub" else load_folder(self.source)
            self.index = ContaminationIndex(sets)
        return self.index

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        index = self.load()
        checked = sorted(index.sets)
        if not checked:
            log.warning("DECONTAMINATION CHECKED AGAINST NO BENCHMARK SETS (source=%s): "
                        "every question gets an 'error' verdict", self.source)
            return [CheckResult("error", f"no benchmark sets available from {self.source}",
                                {"sets_checked": []}) for _ in questions]
        out = []
        for q in questions:
            hit = index.match(q.question)
            if hit:
                out.append(fail(f"matches a {hit['set']} question: {hit['benchmark_question'][:120]!r}",
                                sets_checked=checked, **hit))
            else:
                out.append(CheckResult("pass", "", {"sets_checked": checked}))
        return out
