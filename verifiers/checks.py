"""Question checks: each decides pass / fail for every question, with a reason.

A check is an object with a ``name`` and ``run(questions, ctx) -> list[CheckResult]``
(one result per question, same order). Per-question checks subclass
:class:`QuestionCheck` and implement ``check_one``; batch checks (near
duplicates, decontamination) implement ``run`` directly. The runner turns an
exception or a timeout into an ``error`` verdict, never a pass.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from warehouse import QuestionRecord

if TYPE_CHECKING:
    from warehouse import Warehouse

from verifiers.equivalence import is_equivalent, references
from verifiers.names import looks_like_name, names_match
from verifiers.normalize import canonical_tokens, yes_or_no

log = logging.getLogger(__name__)

WH_WORDS = ("who", "whom", "whose", "what", "which", "when", "where", "why", "how", "in which",
            "name", "identify", "give", "list", "is", "are", "was", "were", "do", "does", "did",
            "can", "could", "has", "have", "had", "on what", "at what", "for which", "by what",
            "from which", "to which", "of which", "during which", "after which", "in what")


@dataclass(frozen=True)
class CheckResult:
    status: str  # pass | fail | error
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def details_json(self) -> str:
        return json.dumps(self.details, sort_keys=True, default=str) if self.details else ""


PASS = CheckResult("pass")


def fail(reason: str, **details: Any) -> CheckResult:
    return CheckResult("fail", reason, details)


class PageHitLike(Protocol):
    url: str
    title: str


class PageSearch(Protocol):
    """A search over the stored pages (datagen's `PageTools`, the warehouse's `StoredPages`)."""

    def search(self, query: str, k: int) -> Sequence[PageHitLike]: ...

    def search_many(self, queries: list[str], k: int) -> Sequence[Sequence[PageHitLike]]:
        """`search` of each query, batched."""
        ...

    def page(self, url: str) -> tuple[str, str]: ...


class AlternativesJudge(Protocol):
    """An LLM judge that names other correct answers (`verifiers.LLMJudge`)."""

    def alternatives(self, question: str, answer: str) -> list[str]: ...


@dataclass
class CheckContext:
    """What checks may need beyond the questions, injected by the caller (verifiers import no
    other stage): the warehouse, an optional LLM judge, the page search the unique-answer
    check uses (without one it opens the warehouse's index), and the texts of the cited pages
    (the grounded check reads them once per batch)."""

    wh: "Warehouse | None" = None
    judge: AlternativesJudge | None = None
    pages: PageSearch | None = None
    page_texts: dict[str, str] | None = None


class Check(Protocol):
    """A question check: one result per question, in order (see the module docstring)."""

    name: str

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        ...


class QuestionCheck:
    """A check that looks at one question at a time."""

    name = "question_check"

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        return [self._guarded(q, ctx) for q in questions]

    def _guarded(self, q: QuestionRecord, ctx: CheckContext) -> CheckResult:
        try:
            return self.check_one(q, ctx)
        except Exception as exc:  # one bad question is an error verdict, not a failed batch
            log.warning("check %s raised on %s: %s", self.name, q.question_id, exc)
            return CheckResult("error", f"{type(exc).__name__}: {exc}")

    def check_one(self, q: QuestionRecord, ctx: CheckContext) -> CheckResult:
        raise NotImplementedError


@dataclass
class WellFormed(QuestionCheck):
    """A question (wh-word or ends with '?'), of sensible length, asking for one answer."""

    min_words: int = 4
    max_words: int = 80
    max_answer_words: int = 12
    name: str = "well_formed"

    def check_one(self, q: QuestionRecord, ctx: CheckContext) -> CheckResult:
        text = " ".join(q.question.split())
        words = text.split()
        if not (self.min_words <= len(words) <= self.max_words):
            return fail(f"question has {len(words)} words; expected {self.min_words}-{self.max_words}")
        lowered = text.lower()
        if not text.endswith("?") and not lowered.startswith(WH_WORDS):
            return fail("not phrased as a question (no '?' and no question word)")
        if text.count("?") > 1:
            return fail("asks more than one question (several '?')")
        if re.search(r"\b(and|also)\s+(who|what|when|where|which|how)\b.*\?$", lowered):
            return fail("asks for more than one answer ('... and who/what ...')")
        answer_words = q.answer.split()
        if not answer_words:
            return fail("empty answer")
        if len(answer_words) > self.max_answer_words:
            return fail(f"answer has {len(answer_words)} words; at most {self.max_answer_words}")
        return PASS


@dataclass
class AnswerNotLeaked(QuestionCheck):
    """The answer (or an alias) must not appear in the question after normalisation. A
    comparison may name it as one of the two it sets side by side ('Who was born first,
    Krzysztof Zanussi or Thom Andersen?'): choosing between them is the question."""

    name: str = "answer_not_leaked"

    def check_one(self, q: QuestionRecord, ctx: CheckContext) -> CheckResult:
        qwords = canonical_tokens(q.question).words
        comparison = q.hop_kind == "comparison"
        for ref in references(q.answer, q.answer_aliases):
            words = canonical_tokens(ref).words
            if yes_or_no(ref) or not words or (comparison and names_an_option(q.question, ref)):
                continue  # a yes/no answer cannot leak by wording; an option is no leak
            if _contains(qwords, words):
                return fail(f"answer {ref!r} appears in the question", leaked=ref)
            if looks_like_name(ref) and names_match(q.question, ref):
                return fail(f"answer {ref!r} is named in the question", leaked=ref)
        return PASS


def choice_options(question: str) -> tuple[str, ...]:
    """The two alternatives a question sets side by side: '..., A or B?' (after its last
    ' or ', and before it back to the last comma) or 'Which of A and B ...?' (around its last
    ' and'; B runs on to the end); () for neither."""
    q = question.strip().rstrip("?")
    head, sep, tail = q.rpartition(" or ")
    if sep:
        return head.rpartition(",")[2], tail
    which_of = re.match(r"(?i)which of (.+) and (.+)", q)
    return which_of.groups() if which_of else ()


def names_an_option(question: str, answer: str) -> bool:
    """Whether `answer` is one of the two alternatives `question` sets side by side."""
    return any(_names(o, answer) for o in choice_options(question))


def _names(option: str, ref: str) -> bool:
    """Whether an option of a choice is `ref`: holds its words, or names it (a surname)."""
    return _contains(canonical_tokens(option).words, canonical_tokens(ref).words) \
        or (looks_like_name(ref) and names_match(option, ref))


def _contains(hay: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return any(hay[i:i + n] == needle for i in range(len(hay) - n + 1))


@dataclass
class Grounded(QuestionCheck):
    """Every evidence quote is verbatim in its page's stored text, and the last one supports the answer.

    "Verbatim" allows only differences in whitespace (extraction re-flows lines).
    """

    name: str = "grounded"

    def run(self, questions: Sequence[QuestionRecord], ctx: CheckContext) -> list[CheckResult]:
        """Every cited page read once per batch (a query per question cost ~0.1 s each)."""
        if ctx.wh is None:
            return super().run(questions, ctx)  # each question an `error` verdict saying why
        urls = sorted({e.url for q in questions for e in q.evidence})
        batch_ctx = replace(ctx, page_texts=_page_texts(ctx.wh, urls))
        return super().run(questions, batch_ctx)

    def check_one(self, q: QuestionRecord, ctx: CheckContext) -> CheckResult:
        if ctx.wh is None:
            raise RuntimeError("grounded check needs a warehouse in the context")
        if not q.evidence:
            return fail("no evidence")
        texts = ctx.page_texts
        if texts is None:
            texts = _page_texts(ctx.wh, sorted({e.url for e in q.evidence}))
        for i, ev in enumerate(q.evidence):
            if ev.url not in texts:
                return fail(f"evidence {i}: page {ev.url} is not in the warehouse", url=ev.url)
            if _squash(ev.quote) not in texts[ev.url]:
                return fail(f"evidence {i}: quote is not verbatim in {ev.url}", url=ev.url,
                            quote=ev.quote[:200])
        if q.answer_type == "yes_no":
            return _judged(q)
        last = q.evidence[-1].quote
        if not is_equivalent(last, q.answer, q.answer_aliases):
            return fail("the final evidence does not state the answer", quote=last[:200])
        return PASS


def _judged(q: QuestionRecord) -> CheckResult:
    """A yes or no is no span of a page: it is grounded as a judgement over the quotes of the
    two pages a comparison compares (the composer derives it from the dates they state), and
    only there."""
    if not yes_or_no(q.answer):
        return fail(f"answer type yes_no, but the answer is {q.answer!r}")
    if q.hop_kind != "comparison" or len({e.url for e in q.evidence}) < 2:
        return fail("a yes/no answer is grounded only as a comparison of two pages' quotes")
    return PASS


def _squash(text: str) -> str:
    return " ".join(text.split())


def _page_texts(wh: "Warehouse", urls: list[str]) -> dict[str, str]:
    """Latest stored text of each page (by url or final_url), whitespace-squashed."""
    if not urls:
        return {}
    marks = ", ".join("?" for _ in urls)
    table = wh.sql(
        f"select url, final_url, text from pages where url in ({marks}) or final_url in ({marks}) "
        "order by fetched_at", list(urls) + list(urls))
    out: dict[str, str] = {}
    for row in table.to_pylist():
        for key in (row["url"], row["final_url"]):
            if key in urls:
                out[key] = _squash(row["text"] or "")
    return out
