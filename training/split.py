"""The evaluation split: which questions evaluate a run, and the SQL that keeps them out of
its training stream.

One of, in this order of precedence (config.py's `DataConfig` allows one to be set):
- `data.eval_file`: JSONL of `{question, answers}`; training skips warehouse questions with
  the same id or the same text (case and outer spaces ignored);
- `data.eval_where`: SQL over `train_ready`; training streams the rows where it is not true;
- a built-in `data.task` without an explicit `eval_fraction`: the task's held-out questions
  (entity names never used in training); training streams the task's own `task_size`
  questions only, never other questions of the warehouse (a `datagen build` into the same
  warehouse, as the quick start does, left real questions in the medium band that the
  tiny model was then trained on: 0.5 % reward at the first step instead of 2 %);
- `data.eval_fraction` (default 0.05): the questions whose md5(question_id) falls in the
  lowest fraction of the hash range — stable as questions are added, and the same in DuckDB
  and Python (`in_eval_fraction`).

`data.train_where` (any kind): SQL over `train_ready` that a training question must also
satisfy (e.g. `hops = 1`); the cold start scripts the same stream.

The resolved split (kind, both SQL conditions, the evaluation question ids) goes into the
run's config, so a run says exactly what it held out.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from training.config import DataConfig

logger = logging.getLogger(__name__)
_HEX = 8   # hash digits compared: 2^32 buckets


@dataclass(frozen=True)
class EvalSplit:
    kind: str                    # "fraction" | "where" | "file" | "task"
    train_where: str | None      # the training stream's condition over train_ready
    items: tuple = ()            # warehouse.reader.TrainItem, at most data.eval_size
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """What the run's config records."""
        return {"kind": self.kind, "train_where": self.train_where, **self.detail,
                "n_eval": len(self.items),
                "eval_question_ids": [i.question_id for i in self.items]}


def fraction_threshold(fraction: float) -> str:
    """The hex prefix below which md5(question_id) is held out.

    >>> fraction_threshold(0.5), fraction_threshold(0.05)
    ('80000000', '0ccccccc')
    """
    return format(int(fraction * 16 ** _HEX), f"0{_HEX}x")


def in_eval_fraction(question_id: str, fraction: float) -> bool:
    """Python twin of the SQL condition of a fraction split (tests and tools use it)."""
    digest = hashlib.md5(question_id.encode()).hexdigest()[:_HEX]
    return digest < fraction_threshold(fraction)


def resolve_split(data: DataConfig, wh, seed: int = 0) -> EvalSplit:
    """The split `data` asks for, with its evaluation items read from `wh` (or the file),
    its training stream narrowed by `data.train_where`; `seed` (the run's) draws a built-in
    task's evaluation questions."""
    return _narrowed(_held_out(data, wh, seed), data.train_where, wh)


def _held_out(data: DataConfig, wh, seed: int) -> EvalSplit:
    if data.eval_file:
        return _file_split(data)
    if data.eval_where:
        return _where_split(data, wh)
    if data.task and "eval_fraction" not in data.model_fields_set:
        return _task_split(data, seed)
    return _fraction_split(data, wh)


def _narrowed(split: EvalSplit, train_where: str | None, wh) -> EvalSplit:
    """`split` whose training stream (and so the cold start, which scripts that stream's
    questions) also needs `train_where`: a study arm trained on one-page questions only."""
    if not train_where:
        return split
    _query_items(wh, train_where, 1, "question_id", "data.train_where")   # a typo fails here
    cond = f"coalesce(({train_where}), false)"
    both = f"({split.train_where}) AND {cond}" if split.train_where else cond
    return replace(split, train_where=both)


def _fraction_split(data: DataConfig, wh) -> EvalSplit:
    cond = f"substr(md5(question_id), 1, {_HEX}) < '{fraction_threshold(data.eval_fraction)}'"
    items = _query_items(wh, cond, data.eval_size, "md5(question_id)")
    return EvalSplit("fraction", f"NOT ({cond})", items,
                     {"eval_fraction": data.eval_fraction, "eval_where": cond})


def _where_split(data: DataConfig, wh) -> EvalSplit:
    cond = data.eval_where
    items = _query_items(wh, cond, data.eval_size, "question_id", "data.eval_where")
    return EvalSplit("where", f"NOT coalesce(({cond}), false)", items, {"eval_where": cond})


def _task_split(data: DataConfig, seed: int) -> EvalSplit:
    from training.tasks import task_questions
    from warehouse.reader import TrainItem

    qs = task_questions(data.task, data.eval_size, "eval", seed)
    items = tuple(TrainItem(q.question_id, q.question, q.answer, q.answer_aliases, "eval", None)
                  for q in qs)
    train = task_questions(data.task, data.task_size, "train", seed)   # what load_task wrote
    ids = ", ".join(_literal(q.question_id) for q in train)
    return EvalSplit("task", f"question_id IN ({ids})", items,
                     {"task": data.task, "task_size": data.task_size})


def _file_split(data: DataConfig) -> EvalSplit:
    path = Path(data.eval_file)
    items = tuple(read_eval_file(path))
    if not items:
        raise ValueError(f"data.eval_file {path} holds no questions")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return EvalSplit("file", exclude_sql(items), items[: data.eval_size],
                     {"eval_file": str(path.resolve()), "eval_file_sha256": digest,
                      "n_file_questions": len(items)})


def read_eval_file(path: Path) -> list:
    """TrainItems from a JSONL of `{question, answers}` (answers: the gold, then aliases;
    a plain string is one answer). An id comes from `question_id` or the question's hash."""
    from warehouse.reader import TrainItem
    from warehouse.schema import content_id

    if not path.is_file():
        raise FileNotFoundError(f"data.eval_file {path} not found")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            answers = row["answers"]
            answers = [answers] if isinstance(answers, str) else [str(a) for a in answers]
            question = str(row["question"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{n}: expected a JSON object with question and answers "
                             f"({type(exc).__name__}: {exc})") from None
        if not answers or not question.strip():
            raise ValueError(f"{path}:{n}: empty question or answers")
        qid = str(row.get("question_id") or content_id("eval_file", question))
        out.append(TrainItem(qid, question, answers[0], tuple(answers[1:]), "eval", None))
    return out


def exclude_sql(items) -> str:
    """A condition over train_ready that is false for these questions (by id or by text)."""
    ids = ", ".join(_literal(i.question_id) for i in items)
    texts = ", ".join(_literal(i.question.strip().lower()) for i in items)
    return f"question_id NOT IN ({ids}) AND lower(trim(question)) NOT IN ({texts})"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _query_items(wh, cond: str, limit: int, order: str, key: str = "") -> tuple:
    """Up to `limit` train_ready items where `cond`; a `key`'s condition that DuckDB refuses
    is one line naming the key."""
    from warehouse.reader import select_items

    try:
        items = select_items(wh, cond, order, int(limit))
    except Exception as exc:  # DuckDB's parser/binder errors have no common base class
        if not key:
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(f"{key} {cond!r} is not a valid condition over train_ready: "
                         f"{first}") from None
    if not items:
        logger.warning("%s (%s) selects no question of train_ready", key or "the evaluation "
                       "split", cond)
    return items
