"""EmbeddedSolver: answers from the stored pages with search/open and extraction, no model.

It sees the question text only. Per question (once, cached): search the pages, open the best
hits, split them into sentences, and collect candidate answers of the type the question asks
for (a year, a date, a number, or a name), each scored by how much of the question its
sentence covers and how well its page ranked. Each attempt then *samples* one candidate with
probability growing with its score (seeded by the attempt seed), so k attempts can differ
and the pass rate reflects how clearly the pages single out one answer. Questions whose
wording points at an intermediate entity get a second search from that entity (one hop
followed), which is why deeper questions are harder for it, as for any search agent. A
yes/no question (it opens with 'was', 'did', ... and asks no wh-word) asks it to weigh what
two pages state, which it cannot: it offers no answer (not a coin's), so such a question is
too_hard to it, as a multi-page question one search cannot find is.
"""

from __future__ import annotations

import math
import random
import re
from itertools import accumulate
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from difficulty.records import SolverAttempt, Solver, SolverQuestion
from difficulty.solvers.base import attempt_seed

if TYPE_CHECKING:
    from datagen.tools import PageTools

_WORD = re.compile(r"[A-Za-z0-9]+")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])|\n+")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
           "December")
_MONTH_SET = frozenset(_MONTHS.split("|"))
_DATE = re.compile(rf"\b(\d{{1,2}} (?:{_MONTHS}) \d{{3,4}}|(?:{_MONTHS}) \d{{1,2}}, \d{{3,4}})\b")
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b|\b\d+(?:\.\d+)?\b")
_YES_NO = re.compile(r"(is|are|was|were|did|does|do|has|have|had|can|could)\b")
_WH = re.compile(r"\b(who|whom|whose|what|which|when|where|how)\b")
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


def asked_answer_type(question: str) -> str:
    """year | date | number | name | yes_no: what shape of answer the question asks for."""
    q = question.lower()
    if _YES_NO.match(q) and not _WH.search(q):
        return "yes_no"
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


def match_words(text: str) -> set[str]:
    """The lower-cased words of `text` a question is matched on (STOP words dropped)."""
    return {w.lower() for w in _WORD.findall(text)} - STOP


class EmbeddedSolver(Solver):
    """Retrieval + extraction over `datagen.tools.PageTools` (see the module docstring)."""

    def __init__(self, tools: "PageTools", *, name: str = "embedded", search_k: int = 5,
                 open_pages: int = 3, temperature: float = 0.25, follow: int = 2):
        self.tools = tools
        self.name = name
        self.search_k, self.open_pages = search_k, open_pages
        self.temperature, self.follow = temperature, follow
        self._cache: dict[str, tuple[list[Candidate], tuple[str, ...]]] = {}
        self._hits: dict[str, list[Any]] = {}  # prepare's batched searches
        self._firsts: dict[str, _FirstSearch] = {}
        self._draws: dict[str, tuple[list[str], list[float]]] = {}
        self._words: dict[str, frozenset[str]] = {}
        self._pages: dict[str, _Page] = {}

    replayable = True  # attempt i depends only on the question and i (difficulty.prefetch)

    @property
    def invocation(self) -> str:
        """The rerun key leaves out the code version (`embedded@<version>`)."""
        return self.name.split("@")[0]

    def warm(self) -> None:
        """Read every page now (before worker processes fork; they must not open the store)."""
        self.tools.load_texts()

    def solve(self, questions: Sequence[SolverQuestion], k: int) -> list[list[SolverAttempt]]:
        self.prepare(questions)
        return [self._attempts(q, k) for q in questions]

    def _attempts(self, q: SolverQuestion, k: int) -> list[SolverAttempt]:
        if q.question not in self._cache:
            self._cache[q.question] = self.candidates(q.question)
        cands, calls = self._cache[q.question]
        texts, cum = self._draw(q.question, cands)
        out = []
        for i in range(q.first_attempt, q.first_attempt + k):
            seed = attempt_seed(q.question_id, q.run_seed, i)
            if not cands:
                out.append(SolverAttempt(q.question_id, i, seed, "", "", calls, "no_candidate"))
                continue
            pick = random.Random(seed).choices(texts, cum_weights=cum)[0]
            out.append(SolverAttempt(q.question_id, i, seed, f"Answer: {pick}", pick, calls))
        return out

    def _draw(self, question: str, cands: list[Candidate]) -> tuple[list[str], list[float]]:
        """The texts of a question's candidates and their cumulative sampling weights (a
        probability growing with the score), once per question: `random.choices` with these
        `cum_weights` draws what it draws from the `weights` they accumulate."""
        if question not in self._draws:
            top = cands[0].score if cands else 1.0
            weights = [math.exp((c.score / top - 1.0) / self.temperature) for c in cands]
            self._draws[question] = ([c.text for c in cands], list(accumulate(weights)))
        return self._draws[question]

    def prepare(self, questions: Sequence[SolverQuestion]) -> None:
        """Find the candidates of every question not seen yet before the attempts are
        sampled, their searches batched in two BM25 calls (`StoredPages.search_many`): every
        first search, then every follow-up search those first hits call for."""
        todo = sorted({q.question for q in questions} - set(self._cache))
        if not todo:
            return
        for question, hits in zip(todo, self.tools.search_many(todo, self.search_k)):
            self._hits.setdefault(question, hits)
        follows = sorted({f"{name} {question}" for question in todo
                          for name in self._first(question).names} - set(self._hits))
        self._hits.update(zip(follows, self.tools.search_many(follows, self.search_k)))
        for question in todo:
            self._cache[question] = self.candidates(question)
        self._hits.clear()

    def candidates(self, question: str) -> tuple[list[Candidate], tuple[str, ...]]:
        """Scored candidate answers (best first) and the tool calls that found them."""
        first = self._first(question)
        if first.kind == "yes_no":   # it cannot weigh what two pages state (module doc)
            self._firsts.pop(question, None)
            return [], tuple(first.calls)
        scores, calls = dict(first.scores), list(first.calls)
        for name in first.names:  # follow the likeliest intermediate entities one hop
            query = f"{name} {question}"
            hits = self._search(query)
            calls += self._calls(query, hits)
            [found] = self._harvest(hits, question, (first.kind,), first.qwords, 0.5)
            for cand, extra in found.items():
                scores[cand] = scores.get(cand, 0.0) + extra
        ranked = sorted((Candidate(c, s) for c, s in scores.items() if s > 0),
                        key=lambda c: (-c.score, c.text))
        self._firsts.pop(question, None)
        return ranked[:10], tuple(calls)

    def _first(self, question: str) -> "_FirstSearch":
        """The question's own search: its candidates of the asked type and the names worth
        following, harvested from its hits in one pass (kept until `candidates` is done)."""
        if question not in self._firsts:
            kind, qwords = asked_answer_type(question), self._match_words(question)
            hits = self._search(question)
            kinds = (kind,) if kind == "name" else (kind, "name")
            found = self._harvest(hits, question, kinds, qwords, 1.0)
            names = sorted(found[-1].items(), key=lambda kv: -kv[1])[: self.follow]
            self._firsts[question] = _FirstSearch(kind, qwords, found[0], [n for n, _ in names],
                                                  self._calls(question, hits))
        return self._firsts[question]

    def _search(self, query: str) -> list[Any]:
        """The hits of `query` (from `prepare`'s batches when it searched it), without the
        snippets the solver does not read where the tools can leave them out."""
        if query in self._hits:
            return self._hits[query]
        return self.tools.search_many([query], self.search_k)[0]

    def _calls(self, query: str, hits: Sequence[Any]) -> list[str]:
        """The tool calls of one search and the pages it opens."""
        return [f"search({query!r})", *(f"open({h.url!r})" for h in hits[: self.open_pages])]

    def _harvest(self, hits: Sequence[Any], question: str, kinds: tuple[str, ...],
                 qwords: frozenset[str], weight: float) -> list[dict[str, float]]:
        """For each of `kinds`, the score of each candidate in the opened hits' statements
        (one pass over the statements for all kinds)."""
        scores: list[dict[str, float]] = [{} for _ in kinds]
        qlow = question.lower()
        for rank, hit in enumerate(hits[: self.open_pages]):
            weight_page = weight / (1 + rank) * (1 + len(self._match_words(hit.title) & qwords))
            for st, overlap in self._page(hit.url).matching(qwords):
                for kind, into in zip(kinds, scores):
                    for cand in st.candidates(kind, question, qlow):
                        # a candidate that repeats the question's words counts for less
                        echo = 0.2 if self._match_words(cand) & qwords else 1.0
                        into[cand] = into.get(cand, 0.0) + weight_page * overlap * echo
        return scores

    def _match_words(self, text: str) -> frozenset[str]:
        """`match_words` of a title or candidate, once per text: the same few recur."""
        if text not in self._words:
            self._words[text] = frozenset(match_words(text))
        return self._words[text]

    def _page(self, url: str) -> "_Page":
        """The statements of the part of a page `open` shows, split once per page: the same
        pages are opened for many questions."""
        if url not in self._pages:
            view = self.tools.open(url)
            self._pages[url] = _Page.of(list(_statements(view.text, view.title)))
        return self._pages[url]


@dataclass(frozen=True)
class _FirstSearch:
    """What a question's own search found: the answer type asked for, the question's content
    words, the candidates' scores, the names to follow and the tool calls."""

    kind: str
    qwords: frozenset[str]
    scores: dict[str, float]
    names: list[str]
    calls: list[str]


@dataclass(frozen=True)
class _Page:
    """An opened page's statements, in page order, and which statements hold each word."""

    statements: list["_Statement"]
    where: dict[str, list[int]]

    @classmethod
    def of(cls, statements: list["_Statement"]) -> "_Page":
        where: dict[str, list[int]] = {}
        for i, st in enumerate(statements):
            for w in st.words:
                where.setdefault(w, []).append(i)
        return cls(statements, where)

    def matching(self, qwords: frozenset[str]) -> list[tuple["_Statement", int]]:
        """(statement, how many of `qwords` it holds) of each statement holding any, in page
        order: the words' lists of statements, not every statement of the page, are walked."""
        overlap: dict[int, int] = {}
        for w in qwords:
            for i in self.where.get(w, ()):
                overlap[i] = overlap.get(i, 0) + 1
        return [(self.statements[i], n) for i, n in sorted(overlap.items())]


@dataclass
class _Statement:
    """A table row or sentence of a page: the words that must match the question, and the
    spans of each answer type found in it (before the question's own words are dropped)."""

    text: str
    value: str  # a table row's value ('' for a sentence): where its candidates come from
    words: frozenset[str]
    _found: dict[str, list[str]] = field(default_factory=dict)

    def candidates(self, kind: str, question: str, qlow: str) -> list[str]:
        if kind not in self._found:
            self._found[kind] = answer_spans(self.value or self.text, kind)
        cands = [f for f in self._found[kind] if f and f.lower() not in qlow]
        if self.value and not cands and kind == "name" and _plain_value(self.value, question):
            return [self.value]
        return cands


def _statements(text: str, title: str):
    """A `_Statement` for each table row and sentence. A table row on a page states "<page
    title> <key> <value>" (an infobox), so its key and the title are matched against the
    question; a sentence is matched as it stands."""
    for key, value in _ROW.findall(text):
        match = f"{title} {key}"
        yield _Statement(match, value, frozenset(match_words(match)))
    prose = _ROW.sub(" ", text)
    for sent in _SENT.split(prose):
        if len(sent.split()) <= MAX_SENTENCE_WORDS:
            yield _Statement(sent, "", frozenset(match_words(sent)))


def _plain_value(value: str, question: str) -> bool:
    """A short table value (e.g. a lowercase genre) the question does not already contain."""
    return 0 < len(value.split()) <= MAX_NAME_WORDS and value.lower() not in question.lower() \
        and not value.startswith("-")


def extract(sentence: str, kind: str, question: str) -> list[str]:
    """Spans of `sentence` shaped like the answer, that the question does not already say."""
    qlow = question.lower()
    return [f for f in answer_spans(sentence, kind) if f and f.lower() not in qlow]


def answer_spans(sentence: str, kind: str) -> list[str]:
    """Every span of `sentence` shaped like an answer of `kind`."""
    if kind == "year":
        return _YEAR.findall(sentence)
    if kind == "date":
        return _DATE.findall(sentence)
    if kind == "number":
        return [m for m in _NUMBER.findall(sentence) if not _YEAR.fullmatch(m)]
    return [t for t in (_trim(m) for m in _NAME.findall(sentence))
            if len(t.split()) <= MAX_NAME_WORDS and t not in _MONTH_SET]


def _trim(name: str) -> str:
    words = name.split()
    while words and words[0] in _LEAD:
        words = words[1:]
    return " ".join(words)
