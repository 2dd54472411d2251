"""`datagen eval`: run a policy over a question set and score it.

    questions (JSONL {question, answers} or the warehouse's train_ready --where SQL)
        └─► policy.attempt(question) k times ─► Attempt(answer, turns, tool calls, transcript)
              └─► scores: EM, F1 (SQuAD), verifiers judge and reward modes
                    └─► summary: avg@k, pass@k, turns, tool calls; by band and hops; trajectories

Policies, all with the same tag format as the training agent (training/agent.py):
- `checkpoint:PATH`: a trained HF model dir, through the inference engine (the agent workflow);
- `endpoint`: an OpenAI-compatible server through `datagen.llm.ChatClient`, the same agent
  loop (`SearchAgentWorkflow.run_chat`: tool results come back as user messages);
- `--no-tools` turns either into the single-turn baseline;
- `random`: random searches (words of the question), random opens, a random word as answer;
- `oracle`: scripted; reads the question's supporting page *titles*, finds each page with
  `search`, reads it with `open`, and answers with the shortest span of the text it opened
  that passes a membership probe. The probe says yes/no for a span and is the only thing the
  oracle learns about the answer (it never sees the gold string); so the oracle measures
  whether the tools surface the answer, not whether a model can find it.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Protocol

from training.search_env.agent import SearchAgentWorkflow
from training.api import InferenceEngine
from training.workflow import answer_reward

if TYPE_CHECKING:
    from warehouse import Warehouse

_WORD = re.compile(r"\d[\d,.]*\d(?![\w'’-])|[\w'’.-]+")   # "6,960" one word; "19th" too


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


@dataclass
class Attempt:
    answer: str | None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: dict = field(default_factory=dict)
    transcript: str = ""
    finished: bool = True     # False: the answer was cut by the token budget (scores 0)


class Policy(Protocol):
    """What `run_eval` runs: `attempt(question, sample)`, scored in `reward_mode`."""

    reward_mode: str

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt: ...


# ---- question sets --------------------------------------------------------------------------

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


# ---- scoring --------------------------------------------------------------------------------

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


def summarize(rows: list[dict], k: int) -> dict:
    """Overall and by band / hops / kind: avg@k and pass@k for every score, turns, tool calls."""
    def block(rs: list[dict]) -> dict:
        per_q: dict[str, list[dict]] = defaultdict(list)
        for r in rs:
            per_q[r["question_id"]].append(r)
        out: dict[str, float] = {"questions": len(per_q)}
        for m in ("em", "f1", "judge", "reward"):
            out[f"{m}_avg@{k}"] = _mean(_mean(a[m] for a in v) for v in per_q.values())
            out[f"{m}_pass@{k}"] = _mean(max(a[m] for a in v) for v in per_q.values())
        out["turns"] = _mean(r["turns"] for r in rs)
        out["tool_calls"] = _mean(r["tool_calls"] for r in rs)
        out["answer_rate"] = _mean(r["answer"] is not None for r in rs)
        return out

    summary: dict[str, Any] = {"all": block(rows)}
    for key in ("band", "hops", "kind", "answer_in_support"):
        groups: dict[str, list[dict]] = defaultdict(list)
        for r in rows:
            g = _group_key(r.get(key))
            if g is not None:
                groups[g].append(r)
        if groups:
            summary[f"by_{key}"] = {g: block(v) for g, v in sorted(groups.items())}
    return summary


def _group_key(v: Any) -> str | None:
    """None where a question lacks the field (band "", hops 0, None); False is a group."""
    if v is None or v == "" or (v == 0 and not isinstance(v, bool)):
        return None
    return str(v)


def _mean(xs: Iterable[float]) -> float:
    xs = [float(x) for x in xs]
    return round(sum(xs) / len(xs), 4) if xs else 0.0


async def run_eval(questions: list[EvalQuestion], policy: Policy, k: int = 1,
                   concurrency: int = 8) -> list[dict]:
    """One trajectory row per (question, sample): the attempt and its scores."""
    gate = asyncio.Semaphore(concurrency)

    async def one(q: EvalQuestion, i: int) -> dict:
        async with gate:
            a = await policy.attempt(q, i)
        return {"question_id": q.question_id, "sample": i, "band": q.band, "hops": q.hops,
                "kind": q.kind, "answer_in_support": q.answer_in_support, **asdict(a),
                **score_attempt(a, q, policy.reward_mode)}

    return list(await asyncio.gather(*(one(q, i) for q in questions for i in range(k))))


def write_trajectories(rows: list[dict], path: str | Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return Path(path)


# ---- policies -------------------------------------------------------------------------------

def find_page(tools: Any, title: str) -> str | None:
    """The URL of the stored page titled `title`, found with `search` (then by title)."""
    for hit in tools.search(title, 10):
        if hit.title.strip() == title.strip():
            return hit.url
    return next((u for u in tools.urls if tools.page(u)[0].strip() == title.strip()), None)


def make_probe(answers: tuple[str, ...]) -> Callable[[str], bool]:
    """A yes/no membership test for a span's normalised key (SQuAD-normalised gold)."""
    from verifiers import squad_normalize

    keys = {squad_normalize(a) for a in answers}
    return keys.__contains__


def spans(text: str, max_words: int = 12) -> Iterable[tuple[str, str]]:
    """(span, SQuAD-normalised key) of `text`'s word spans, shortest first (so the oracle
    answers as briefly as it can); words are normalised once, not once per span."""
    from verifiers import squad_normalize

    words = _WORD.findall(text)
    norm = [squad_normalize(w) for w in words]
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            yield " ".join(words[i:i + n]).rstrip(".,"), " ".join(w for w in norm[i:i + n] if w)


@dataclass
class OraclePolicy:
    tools: Any
    reward_mode: str = "reward"

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        probe, a, texts = make_probe(q.answers), Attempt(None), []
        for title in q.support_titles:
            url = find_page(self.tools, title)
            a.tool_calls += 1   # the search
            offset: int | None = 0
            while url and offset is not None:
                view = self.tools.open(url, offset)
                a.tool_calls += 1
                texts.append(view.text)
                a.transcript += f"<open>{url}#{offset}</open>\n"
                offset = view.next_offset
        a.turns = a.tool_calls + 1
        a.answer = next((s for t in texts for s, key in spans(t) if probe(key)), None)
        return a


@dataclass
class RandomPolicy:
    tools: Any
    max_turns: int = 4
    seed: int = 0
    reward_mode: str = "reward"

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        rng = random.Random(f"{self.seed}/{q.question_id}/{sample}")
        words, urls, a = _WORD.findall(q.question) or ["x"], [], Attempt(None)
        seen = list(words)
        for _ in range(self.max_turns - 1):
            a.turns += 1
            a.tool_calls += 1
            if urls and rng.random() < 0.5:
                text = self.tools.open(rng.choice(urls)).text
            else:
                hits = self.tools.search(" ".join(rng.sample(words, min(3, len(words)))), 3)
                urls += [h.url for h in hits]
                text = " ".join(h.snippet for h in hits)
            seen += _WORD.findall(text)
        a.turns += 1
        a.answer = rng.choice(seen)
        return a


@dataclass
class CheckpointPolicy:
    """A model dir through the inference engine and the training agent (or its no-tool form)."""

    agent: SearchAgentWorkflow
    engine: InferenceEngine

    @property
    def reward_mode(self) -> str:
        return self.agent.reward_mode

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        from warehouse.reader import TrainItem

        item = TrainItem(q.question_id, q.question, q.answers[0], q.answers[1:], q.band, None)
        t = await self.agent.run_episode(self.engine, item)
        a = t.info.agent
        return Attempt(a.answer, t.n_turns, a.n_tool_calls, dict(a.tool_errors), t.text,
                       t.info.finish_reason == "stop")


@dataclass
class EndpointPolicy:
    """An OpenAI-compatible model (a datagen.llm.ChatClient) in the training agent's loop."""

    client: Any
    agent: SearchAgentWorkflow

    @property
    def reward_mode(self) -> str:
        return self.agent.reward_mode

    async def attempt(self, q: EvalQuestion, sample: int) -> Attempt:
        ep = await self.agent.run_chat(self.client, q.question, q.question_id, sample)
        return Attempt(ep.answer, ep.turns, sum(ep.calls.values()), dict(ep.errors),
                       json.dumps(ep.messages[2:], ensure_ascii=False), ep.finished)
