"""Question sets for `datagen eval`: a JSONL file (shared/data/qa_benchmarks layout, or
hotpotqa_dev685's with its `split` and `gold_pids`), the warehouse's train_ready rows, and
HotpotQA converted to that JSONL layout; a question's type (bridge or comparison) is the
file's, or derived (`derive_kind`) where the file has none."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from warehouse import Warehouse


# Words that set two named things side by side ("X or Y", "both", "in common", "share")
_COMPARING = re.compile(r"\b(or|both|common|shares?|shared|same)\b", re.I)
_DISAMBIGUATION = re.compile(r"\s*\([^)]*\)\s*$")   # "Ed Wood (film)" is named "Ed Wood"


@dataclass(frozen=True)
class EvalQuestion:
    question_id: str
    question: str
    answers: tuple[str, ...]          # gold first, then aliases
    band: str = ""
    hops: int = 0
    support_titles: tuple[str, ...] = ()
    kind: str = ""                    # bridge | comparison: the file's `type`, else derive_kind
    answer_in_support: bool | None = None   # the gold is verbatim in a supporting page


def load_questions_jsonl(path: str | Path, split: str | None = None) -> list[EvalQuestion]:
    """{id|question_id, question, answers | answer (+ answer_aliases), band?, hops?,
    support_titles? | gold_pids?, type?, split?} per line (the layout of shared/data's
    qa_benchmarks and hotpotqa_dev685); `split` keeps the rows of that split only. A row's
    `gold_pids` name its support titles through the corpus.jsonl beside the file."""
    rows = select_split(path, list(_rows(path)), split)
    titles = corpus_titles(path) if any(r.get("gold_pids") for _, r in rows) else {}
    return [_question(path, n, r, titles) for n, r in rows]


def _rows(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, row) of a JSONL file, blank lines skipped; a line that is not a JSON
    object is a user error naming it."""
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{n}: a row must be a JSON object, not "
                             f"{type(row).__name__}")
        yield n, row


def select_split(path: str | Path, rows: list[tuple[int, dict]],
                 split: str | None) -> list[tuple[int, dict]]:
    """The rows whose `split` field is `split` (all of them for None), so a file holding a
    train and an eval split is evaluated on one; a row without the field, or a split no row
    has, is a user error (ValueError, one line)."""
    if split is None:
        return rows
    bare = next((n for n, r in rows if "split" not in r), None)
    if bare is not None:
        raise ValueError(f"{path}:{bare}: the row has no `split` field, so --split {split} "
                         "cannot select it: leave --split out for this file")
    kept = [(n, r) for n, r in rows if r["split"] == split]
    if not kept:
        found = ", ".join(sorted({str(r["split"]) for _, r in rows}))
        raise ValueError(f"--split {split}: no row of {path} has it (its splits: {found})")
    return kept


def corpus_titles(questions: str | Path) -> dict[str, str]:
    """pid -> title of the corpus.jsonl beside a questions file (hotpotqa_dev685's layout),
    so that `gold_pids` give the oracle its support titles and derive_kind its two gold
    entities; {} when there is none."""
    corpus = Path(questions).with_name("corpus.jsonl")
    if not corpus.is_file():
        return {}
    return {r["pid"]: r["title"] for _, r in _rows(corpus)}


def _question(path: str | Path, n: int, r: dict, titles: dict[str, str]) -> EvalQuestion:
    """One row as an EvalQuestion; a row without a question or an answer is a user error."""
    answers = r.get("answers") or [r.get("answer")] + list(r.get("answer_aliases") or [])
    answers = tuple(str(a) for a in (answers if isinstance(answers, list) else [answers]) if a)
    if "question" not in r or not answers:
        raise ValueError(f"{path}:{n}: a question needs `question` and `answers`")
    support = tuple(r.get("support_titles") or _gold_titles(path, n, r, titles))
    kind = r.get("type") or derive_kind(r["question"], answers, support)
    return EvalQuestion(str(r.get("id", r.get("question_id", n))), r["question"], answers,
                        str(r.get("band") or ""), int(r.get("hops") or 0), support, str(kind),
                        r.get("answer_in_support"))


def _gold_titles(path: str | Path, n: int, r: dict, titles: dict[str, str]) -> list[str]:
    """The titles of a row's `gold_pids` (none without a corpus beside the file); a pid the
    corpus lacks is a user error: the file and the corpus do not belong together."""
    pids = (r.get("gold_pids") or []) if titles else []
    missing = [p for p in pids if p not in titles]
    if missing:
        raise ValueError(f"{path}:{n}: gold_pids {missing} are not in the corpus.jsonl "
                         "beside it")
    return [titles[p] for p in pids]


def derive_kind(question: str, answers: tuple[str, ...], gold_titles: tuple[str, ...]) -> str:
    """HotpotQA's question type where a file has none (hotpotqa_dev685's `type` is null).
    Its comparison questions set two gold entities side by side, so a question is a
    comparison when its gold answer is yes or no, or when both gold titles (less a trailing
    "(film)"-style disambiguation) are named in it and it either uses a comparing word (or,
    both, common, share, same) or its answer names one of the two (the title's words within
    the answer's, or the answer's within the title's, or the same last word); any other is
    a bridge. Without gold titles only yes/no can be told: the rest get "" (no type).
    On hotpotqa_train100 (labelled) this agrees with HotpotQA's own type on 98 of 100.

    >>> derive_kind("Are Ila and Oru both lakes?", ("yes",), ())
    'comparison'
    >>> titles = ("Varo Bridge", "Kesto Dam (1934)")
    >>> derive_kind("Which of Varo Bridge and Kesto Dam opened first?", ("the Kesto Dam",), titles)
    'comparison'
    >>> derive_kind("Varo Bridge was built by whom?", ("Ada Krell",), ("Varo Bridge", "Ada Krell"))
    'bridge'
    """
    from verifiers import squad_normalize, yes_or_no

    if yes_or_no(answers[0]):
        return "comparison"
    if not gold_titles:
        return ""
    names = [squad_normalize(_DISAMBIGUATION.sub("", t)) for t in gold_titles]
    asked = f" {squad_normalize(question)} "
    if len(names) != 2 or not all(name and f" {name} " in asked for name in names):
        return "bridge"
    gold = squad_normalize(answers[0])
    if _COMPARING.search(question) or any(_names(gold, name) for name in names):
        return "comparison"
    return "bridge"


def _names(answer: str, title: str) -> bool:
    """Whether a (normalised) answer names the entity of a (normalised) title: "Paul Thomas
    Mann" names "Thomas Mann", "Levni Yilmaz" names "Lev Yilmaz"."""
    a, t = answer.split(), title.split()
    return bool(a and t) and (set(t) <= set(a) or set(a) <= set(t) or a[-1] == t[-1])


def type_group(q: EvalQuestion) -> str:
    """The group a question is reported in by type: yes/no answers apart ("yes/no"), else
    its kind (bridge, comparison; "" when it has none)."""
    from verifiers import yes_or_no

    return "yes/no" if yes_or_no(q.answers[0]) else q.kind


def load_questions_warehouse(wh: "Warehouse", where: str | None,
                             limit: int | None) -> list[EvalQuestion]:
    """train_ready rows matching `where`; support titles from the questions' source pages."""
    sql = ("select t.question_id, t.question, t.answer, t.answer_aliases, t.band, t.hops, "
           "(select list(p.title) from pages p where list_contains(q.source_urls, p.url)) "
           "as titles from (select * from train_ready t"
           + (f" where {where}" if where else "")  # the plain train_ready columns it documents
           + ") t join questions q using (question_id) order by t.question_id"
           + (f" limit {int(limit)}" if limit else ""))
    return [EvalQuestion(r["question_id"], r["question"],
                         (r["answer"], *(r["answer_aliases"] or ())), r["band"] or "",
                         int(r["hops"] or 0), tuple(dict.fromkeys(r["titles"] or ())))
            for r in wh.sql(sql).to_pylist()]


def write_hotpotqa_questions(with_context_json: str | Path, out: str | Path) -> Path:
    """HotpotQA's questions as eval JSONL: answers, type, hops 2, supporting titles, and
    `answer_in_support` (the answer is verbatim in a supporting paragraph)."""
    rows = json.loads(Path(with_context_json).read_text(encoding="utf-8"))
    lines = []
    for r in rows:
        support = list(dict.fromkeys(t for t, _ in r["supporting_facts"]))
        paras = {t: " ".join(s) for t, s in r["context"]}
        pattern = re.compile(rf"(?<!\w){re.escape(r['answer'])}(?!\w)")
        verbatim = any(pattern.search(paras.get(t, "")) for t in support)
        lines.append(json.dumps({"id": r["_id"], "question": r["question"],
                                 "answers": [r["answer"]], "type": r["type"], "hops": 2,
                                 "band": r.get("level", ""), "support_titles": support,
                                 "answer_in_support": verbatim}))
    Path(out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Path(out)
