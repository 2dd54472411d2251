"""Scoring `datagen eval`'s attempts: EM and F1 (SQuAD), the verifiers judge, the reward
training pays; avg@k and pass@k, searches and pages seen per episode, overall and by band,
hops, type (bridge, comparison, yes/no apart) and answer_in_support; of the comparisons that
set two candidates side by side, how often the answer was one of them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from training.evaluation.questions import EvalQuestion, type_group
from training.workflow import answer_reward

SCORES = ("reward", "judge", "em", "f1")
GROUPS = ("band", "hops", "type", "answer_in_support")   # summary keys by_<group>


@dataclass
class Attempt:
    """What a policy did on a question: its answer (None: none given) and how it got there."""

    answer: str | None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: dict[str, int] = field(default_factory=dict)
    transcript: str = ""
    finished: bool = True     # False: the answer was cut by the token budget (scores 0)
    searches: int = 0
    pages_seen: int = 0       # distinct pages whose text it was shown (hits, opened pages)
    error: str | None = None  # 'Type: message' of an episode that raised (it scores 0)


def score_attempt(attempt: Attempt, q: EvalQuestion, mode: str = "reward") -> dict[str, float]:
    """EM and F1 (SQuAD, best over the golds), the verifiers judge, and `reward`: the task
    reward training pays (`answer_reward` in the run's `rollout.reward` mode; an answer cut
    by the token budget earns 0), so a checkpoint scores here what it scored in training.

    >>> q = EvalQuestion("1", "Who?", ("Marie Curie", "Curie"))
    >>> score_attempt(Attempt("curie"), q)["em"], score_attempt(Attempt(None), q)["reward"]
    (1.0, 0.0)
    >>> score_attempt(Attempt("Marie Curie", finished=False), q)["reward"]
    0.0
    """
    from verifiers import is_equivalent, squad_normalize, token_f1

    a = attempt.answer
    if a is None:
        return {"em": 0.0, "f1": 0.0, "judge": 0.0, "reward": 0.0}
    gold, aliases = q.answers[0], q.answers[1:]
    reward, _ = answer_reward(a, gold, aliases, q.question, mode, finished=attempt.finished)
    return {"em": float(any(squad_normalize(a) == squad_normalize(g) for g in q.answers)),
            "f1": max(token_f1(a, g) for g in q.answers),
            "judge": float(is_equivalent(a, gold, aliases, q.question)), "reward": reward}


def chose_an_option(attempt: Attempt, q: EvalQuestion) -> bool | None:
    """For a comparison that names its two candidates ('Who was born first, A or B?'):
    whether the answer is one of them (a wrong one still is); None for any other question.
    An agent that answers something else has not understood the question."""
    from verifiers.checks import choice_options, names_an_option

    if type_group(q) != "comparison" or not choice_options(q.question):
        return None
    return attempt.answer is not None and names_an_option(q.question, attempt.answer)


def summarize(rows: list[dict], k: int) -> dict:
    """Overall and by band / hops / type / answer_in_support: avg@k and pass@k for every
    score; turns, tool calls, searches and pages seen per episode."""
    summary: dict[str, dict] = {"all": _block(rows, k)}
    for key in GROUPS:
        groups: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            g = _group_key(r.get(key))
            if g is not None:
                groups[g].append(r)
        if groups:
            summary[f"by_{key}"] = {g: _block(v, k) for g, v in sorted(groups.items())}
    return summary


def _block(rows: list[dict], k: int) -> dict[str, float]:
    """One group's scores: the mean (avg@k) and best (pass@k) of each question's k samples."""
    per_q: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        per_q[r["question_id"]].append(r)
    out: dict[str, float] = {"questions": len(per_q)}
    for m in ("em", "f1", "judge", "reward"):
        out[f"{m}_avg@{k}"] = _mean(_mean(a[m] for a in v) for v in per_q.values())
        out[f"{m}_pass@{k}"] = _mean(max(a[m] for a in v) for v in per_q.values())
    out["turns"] = _mean(r["turns"] for r in rows)
    out["tool_calls"] = _mean(r["tool_calls"] for r in rows)
    out["searches"] = _mean(r["searches"] for r in rows)
    out["pages_seen"] = _mean(r["pages_seen"] for r in rows)
    out["answer_rate"] = _mean(r["answer"] is not None for r in rows)
    out["episodes_failed"] = sum(r.get("error") is not None for r in rows)
    choices = [r["option"] for r in rows if r.get("option") is not None]
    if choices:
        out["option_rate"] = _mean(choices)   # comparisons answered with a candidate named
    return out


def _group_key(v: str | int | bool | None) -> str | None:
    """None where a question lacks the field (band "", hops 0, None); False is a group."""
    if v is None or v == "" or (v == 0 and not isinstance(v, bool)):
        return None
    return str(v)


def _mean(xs: Iterable[float]) -> float:
    xs = [float(x) for x in xs]
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def summary_table(summary: dict, k: int) -> str:
    """The summary as a tab-separated table (`datagen eval`): all questions, then each group
    (type=yes/no: the yes/no answers, apart from the bridge and comparison rows)."""
    cols = [f"{s}_avg@{k}" for s in SCORES] + [f"reward_pass@{k}", "turns", "tool_calls",
                                               "searches", "pages_seen"]
    lines = ["\t".join(["group", "questions", *cols])]
    groups = [("all", summary["all"])] + [
        (f"{key}={g}", b) for key in GROUPS for g, b in summary.get(f"by_{key}", {}).items()]
    for name, b in groups:
        lines.append("\t".join([name, str(b["questions"]), *(f"{b[c]:.3f}" for c in cols)]))
    return "\n".join(lines)
