"""EmbeddedSolver: answers from the stored pages with search/open and extraction, no model.

It sees the question text only. Per question (once, cached): search the pages, open the best
hits, split them into sentences, and collect candidate answers of the type the question asks
for (a year, a date, a number, or a name), each scored by how much of the question its
sentence covers and how well its page ranked. Each attempt then *samples* one candidate with
probability growing with its score (seeded by the attempt seed), so k attempts can differ
and the pass rate reflects how clearly the pages single out one answer. Questions whose
wording points at an intermediate entity get a second search from that entity (one hop
followed), which is why deeper questions are harder for it, as for any search agent.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

from difficulty.records import Attempt, SolverQuestion
from difficulty.solvers.base import attempt_seed

_WORD = re.compile(r"[A-Za-z0-9]+")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])|\n+")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
           "December")
_MONTH_SET = frozenset(_MONTHS.split("|"))
_DATE = re.compile(rf"\b(\d{{1,2}} (?:{_MONTHS}) \d{{3,4}}|(?:{_MONTHS}) \d{{1,2}}, \d{{3,4}})\b")
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+(?:\.\d+)?\b")
_NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:(?:of|the|de|la|von|and|on|upon)\s+)?[A-Z][\w'’-]*)*")
STOP = frozenset("""a an the of in on at to for from by with and or is was were are be been which
what who whom whose where when how many much did does do this that these those it its as into
than then there their his her they he she name named year date what's one ones""".split())
_ROW = re.compile(r"^\|\s*([^|\n]+?)\s*\|\s*([^|\n]+?)\s*\|", re.M)
MAX_SENTENCE_WORDS = 60  # longer "sentences" are lists (an index page), not statements
MAX_NAME_WORDS = 5
_LEAD = frozenset("The A An In On At By For From With Of And Its His Her Their This That".split())


@dataclass(frozen=True)
class Candidate:
    text: str
    score: float


def answer_type(question: str) -> str:
    """year | date | number | name: what shape of answer the question asks for."""
    q = question.lower()
    if re.search(r"\bwhat name\b|\bcalled\?|\bname\b|^who\b|\bwho\b|\bwhom\b", q):
        return "name"
    if re.search(r"\b(what|which) year\b|\byear\b.*\?$|\bin what year\b", q):
        return "year"
    if re.search(r"\bwhat date\b|\bwhich date\b|\bdate of\b|\bwhen was .* born\b|\bborn on\b", q):
        return "date"
    if re.search(r"\bhow (many|much|long|large)\b|\bpopulation\b|\bnumber of\b|\barea\b", q):
        return "number"
    if re.search(r"\bwhen\b", q):
        return "year"
    return "name"


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - STOP


class EmbeddedSolver:
    """Retrieval + extraction over `datagen.tools.PageTools` (see the module docstring)."""

    def __init__(self, tools: Any, *, name: str = "embedded", search_k: int = 5,
                 open_pages: int = 3, temperature: float = 0.25, follow: int = 2):
        self.tools = tools
        self.name = name
        self.invocation = name.split("@")[0]  # the rerun key leaves out the code version
        self.search_k, self.open_pages = search_k, open_pages
        self.temperature, self.follow = temperature, follow
        self._cache: dict[str, tuple[list[Candidate], tuple[str, ...]]] = {}

    def solve(self, questions: Sequence[SolverQuestion], k: int) -> list[list[Attempt]]:
        return [self._attempts(q, k) for q in questions]

    def _attempts(self, q: SolverQuestion, k: int) -> list[Attempt]:
        if q.question not in self._cache:
            self._cache[q.question] = self.candidates(q.question)
        cands, calls = self._cache[q.question]
        out = []
        for i in range(q.first_attempt, q.first_attempt + k):
            seed = attempt_seed(q.question_id, q.run_seed, i)
            if not cands:
                out.append(Attempt(q.question_id, i, seed, "", "", calls, "no_candidate"))
                continue
            pick = self._sample(cands, random.Random(seed))
            out.append(Attempt(q.question_id, i, seed, f"Answer: {pick}", pick, calls))
        return out

    def _sample(self, cands: list[Candidate], rng: random.Random) -> str:
        top = cands[0].score
        weights = [math.exp((c.score / top - 1.0) / self.temperature) for c in cands]
        return rng.choices([c.text for c in cands], weights=weights)[0]

    def candidates(self, question: str) -> tuple[list[Candidate], tuple[str, ...]]:
        """Scored candidate answers (best first) and the tool calls that found them."""
        kind, qwords = answer_type(question), content_words(question)
        calls: list[str] = []
        scores = self._harvest(question, question, kind, qwords, calls, 1.0)
        names = sorted(self._harvest(question, question, "name", qwords, calls, 1.0, log=False)
                       .items(), key=lambda kv: -kv[1])[: self.follow]
        for name, s in names:  # follow the likeliest intermediate entities one hop
            for cand, extra in self._harvest(f"{name} {question}", question, kind, qwords,
                                             calls, 0.5).items():
                scores[cand] = scores.get(cand, 0.0) + extra
        ranked = sorted((Candidate(c, s) for c, s in scores.items() if s > 0),
                        key=lambda c: (-c.score, c.text))
        return ranked[:10], tuple(calls)

    def _harvest(self, query, question, kind, qwords, calls, weight, log=True) -> dict[str, float]:
        hits = self.tools.search(query, k=self.search_k)
        if log:
            calls.append(f"search({query!r})")
        scores: dict[str, float] = {}
        for rank, hit in enumerate(hits[: self.open_pages]):
            view = self.tools.open(hit.url)
            if log:
                calls.append(f"open({hit.url!r})")
            weight_page = weight / (1 + rank) * (1 + len(content_words(hit.title) & qwords))
            for text, cands in _statements(view.text, view.title, kind, question):
                overlap = len(content_words(text) & qwords)
                for cand in cands if overlap else ():
                    echo = 0.2 if content_words(cand) & qwords else 1.0  # repeats the question
                    scores[cand] = scores.get(cand, 0.0) + weight_page * overlap * echo
        return scores


def _statements(text: str, title: str, kind: str, question: str):
    """(words that must match the question, candidates) for each table row and sentence.
    A table row on a page states "<page title> <key> <value>" (an infobox), so its key and
    the title are matched against the question; a sentence is matched as it stands."""
    for key, value in _ROW.findall(text):
        cands = extract(value, kind, question) or ([value] if kind == "name" and
                                                   _plain_value(value, question) else [])
        yield f"{title} {key}", cands
    prose = _ROW.sub(" ", text)
    for sent in _SENT.split(prose):
        if len(sent.split()) <= MAX_SENTENCE_WORDS:
            yield sent, extract(sent, kind, question)


def _plain_value(value: str, question: str) -> bool:
    """A short table value (e.g. a lowercase genre) the question does not already contain."""
    return 0 < len(value.split()) <= MAX_NAME_WORDS and value.lower() not in question.lower() \
        and not value.startswith("-")


def extract(sentence: str, kind: str, question: str) -> list[str]:
    """Spans of `sentence` shaped like the answer, that the question does not already say."""
    if kind == "year":
        found = _YEAR.findall(sentence)
    elif kind == "date":
        found = _DATE.findall(sentence)
    elif kind == "number":
        found = [m for m in _NUMBER.findall(sentence) if not _YEAR.fullmatch(m)]
    else:
        found = [t for t in (_trim(m) for m in _NAME.findall(sentence))
                 if len(t.split()) <= MAX_NAME_WORDS and t not in _MONTH_SET]
    qlow = question.lower()
    return [f for f in found if f and f.lower() not in qlow]


def _trim(name: str) -> str:
    words = name.split()
    while words and words[0] in _LEAD:
        words = words[1:]
    return " ".join(words)
