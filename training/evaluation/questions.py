"""Question sets for `datagen eval`: a JSONL file (shared/data/qa_benchmarks layout), the
warehouse's train_ready rows, and HotpotQA converted to that JSONL layout."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from warehouse import Warehouse


@dataclass(frozen=True)
class EvalQuestion:
    question_id: str
    question: str
    answers: tuple[str, ...]          # gold first, then aliases
    band: str = ""
    hops: int = 0
    support_titles: tuple[str, ...] = ()
    kind: str = ""                    # e.g. HotpotQA's bridge / comparison
    answer_in_support: bool | None = None   # the gold is verbatim in a supporting page


def load_questions_jsonl(path: str | Path) -> list[EvalQuestion]:
    """{id|question_id, question, answers | answer (+ answer_aliases), band?, hops?,
    support_titles?, type?} per line (the layout of shared/data/qa_benchmarks)."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        answers = r.get("answers") or [r.get("answer")] + list(r.get("answer_aliases") or [])
        answers = tuple(str(a) for a in (answers if isinstance(answers, list) else [answers]) if a)
        if "question" not in r or not answers:
            raise ValueError(f"{path}:{n}: a question needs `question` and `answers`")
        out.append(EvalQuestion(str(r.get("id", r.get("question_id", n))), r["question"], answers,
                                str(r.get("band") or ""), int(r.get("hops") or 0),
                                tuple(r.get("support_titles") or ()), str(r.get("type") or ""),
                                r.get("answer_in_support")))
    return out


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
