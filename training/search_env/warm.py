"""Supervised warm start of the search agent, on training-split questions only.

Scripted episodes are played through the agent workflow itself with a teacher engine that
emits planned turns, so the warm-start sequences are token for token what RL episodes look
like (same template, same observations, same loss mask: no loss on tool output).

- `answers: random` (format only): `<search>` with the question itself, then `<answer>` with a
  random word of the result text the agent was shown: one of its distinct content words (no
  stop word) that the question does not already hold, as an answer never repeats its question.
  Teaches the tags and copying (the query out of the question, an answer out of the
  observation), not which word answers: a scripted episode is right about once per such word,
  and RL has to learn the rest. (Any shown word, stop words included, taught the frequent
  words "of" and "The" instead of copying: held-out reward 0.00.)
- `answers: true` (oracle trajectories, the real model's cold start, as ASearcher's and
  WebSailor's): each question's own evidence chain from the warehouse, page by page.
  `<search>` with the question; a multi-page question then, per page in chain order,
  `<search>`es its title (a bridge page's title is the entity the page before names; for the
  first page only when the question's results do not list it) and `<open>`s it at its quote
  (search, open, search the bridge entity, open, ..., answer); a one-page question does the
  same only when the results lack the gold. A script never opens a url it was not shown;
  then `<answer>gold</answer>`. Scripts that earn no task reward (out of turns: a three-page
  chain needs up to 8; a gold the reward refuses) are left out. Only training-split
  questions (the evaluation split's condition and `data.train_where` are applied), so no
  evaluation question or answer is seen.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import TYPE_CHECKING

from training.api import GenerationResult, Trajectory

if TYPE_CHECKING:
    from training.search_env.agent import SearchAgentWorkflow


# Format scripts per question, each with its own random answer: with one, a few hundred steps
# learn each question's random word by heart (NLL 0.03) and the policy answers that word.
FORMAT_PLAYS = 8


class TeacherEngine:
    """An InferenceEngine stand-in that plays planned turns, each ended by the request's stop
    token (the chat template's end-of-turn token), as the model is taught to end them."""

    max_model_len = None   # it serves any length

    def __init__(self, tokenizer, turns: list[str]):
        self.tok, self.turns, self.version = tokenizer, list(turns), 0

    async def agenerate(self, request):
        text = self.turns.pop(0) if self.turns else "<answer></answer>"
        end = request.stop_token_ids[0] if request.stop_token_ids else self.tok.eos_token_id
        ids = self.tok.encode(text, add_special_tokens=False) + [end]
        return GenerationResult(request.prompt_ids, ids, [0.0] * len(ids), [0] * len(ids), "stop")


_WORD = re.compile(r"\w(?:[\w,.'-]*\w)?")   # "32,052", "1.5", "O'Neil" stay one word


def _shown_words(snippets: list[str], question: str = "") -> list[str]:
    """The distinct content words of the snippets a search showed that are not in `question`;
    failing that their content words, then any word.

    >>> _shown_words(["The Varo bridge was built in 1934."], "When was Varo built?")
    ['bridge', '1934']
    >>> _shown_words(["The Varo bridge was built in 1934."], "When was it built?")
    ['Varo', 'bridge', '1934']
    """
    from training.search_env.observations import _STOP

    words = list(dict.fromkeys(_WORD.findall(" ".join(snippets))))
    asked = {w.lower() for w in _WORD.findall(question)}
    content = [w for w in words if w.lower() not in _STOP]
    return [w for w in content if w.lower() not in asked] or content or words or ["x"]


def format_plan(agent: "SearchAgentWorkflow", item, rng: random.Random) -> list[str]:
    """Search the question; answer a random word of the snippets shown."""
    from training.search_env.observations import cut_at_word

    env = agent.env
    snippets = [cut_at_word(h.snippet, env.settings.snippet_chars)
                for h in env.search_hits(item.question)] or ["no results"]
    guess = rng.choice(_shown_words(snippets, item.question))
    return [f"<search>{item.question}</search>", f"<answer>{guess}</answer>"]


class _Script:
    """A script's turns and what their tools show the agent (cut at max_observation_tokens, as
    the agent cuts it), so that it opens only urls it was shown."""

    def __init__(self, agent: "SearchAgentWorkflow"):
        self.agent, self.turns, self.urls, self.last = agent, [], set(), ""

    def play(self, kind: str, arg: str) -> None:
        """One tool turn: its text, what it shows, the urls it lists."""
        from training.search_env.env import Action

        agent = self.agent
        self.turns.append(f"<{kind}>{arg}</{kind}>")
        ids = agent.encode(agent.env.call(Action(kind, arg)))
        self.last = agent.tokenizer.decode(ids[:agent.env.settings.max_observation_tokens],
                                           skip_special_tokens=False)
        self.urls.update(self.last.split())   # a url stands alone: town1 is not in town12

    def shows(self, answer: str) -> bool:
        return answer.lower() in self.last.lower()


def _chain(evidence: list[dict]) -> dict[str, str]:
    """The evidence's pages in chain order, each with its first quote."""
    quotes: dict[str, str] = {}
    for e in evidence:
        quotes.setdefault(e["url"], e["quote"])
    return quotes


def oracle_plan(agent: "SearchAgentWorkflow", item, evidence: list[dict]) -> list[str]:
    """Follow the question's evidence chain page by page, then answer with the gold.

    Search the question; for each page, in chain order: search its title (always past the
    first page: a bridge page's title is the entity the page before names, a comparison's the
    next compared entity; for the first page only when the question's results do not list
    it) and open it at its quote. A one-page question keeps the short script: its page is
    opened only when what was shown lacks the gold. A url never listed is never opened; a
    chain with a page its searches do not list gets no script (an answer without the page's
    evidence would teach guessing)."""
    chain, script = _chain(evidence), _Script(agent)
    single = len(chain) == 1
    script.play("search", item.question)
    for n, (url, quote) in enumerate(chain.items()):
        if single and script.shows(item.answer):
            break
        title, text = agent.env.tools.page(url)
        if n or url not in script.urls:
            script.play("search", title)
        if not single and url not in script.urls:
            return []   # a page it could not reach: no script (an empty answer, left out)
        if url in script.urls and not (single and script.shows(item.answer)):
            at = max(0, text.find(quote[:40]))
            script.play("open", f"{url}#{at}" if at else url)
    return script.turns + [f"<answer>{item.answer}</answer>"]


def _evidence(wh, ids: list[str]) -> dict[str, list[dict]]:
    if not ids:
        return {}
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    rows = wh.sql(f"select question_id, evidence from questions where question_id in ({quoted})")
    return {r["question_id"]: list(r["evidence"] or []) for r in rows.to_pylist()}


def evidence_pages(wh) -> dict[str, frozenset[str]]:
    """Every train_ready question's evidence pages (agent.evidence_reward's denominators):
    one query at the start of a run, ~100 bytes a question."""
    rows = wh.sql("select question_id, list_distinct(list_transform(evidence, e -> e.url)) "
                  "as urls from questions where len(evidence) > 0 and question_id in "
                  "(select question_id from train_ready)")
    return {r["question_id"]: frozenset(r["urls"]) for r in rows.to_pylist()}


# Training-split questions scripted (the first by md5 of the id); RL streams all of them, so
# past this many the rest are new to the policy. Above every build the spike measured.
WARM_QUESTIONS = 4096


def warm_start_sequences(agent: "SearchAgentWorkflow", wh, train_where: str | None, n: int,
                         true_answers: bool, seed: int = 0, plays: int = 1) -> list[Trajectory]:
    """Scripted trajectories over up to `n` training-split questions (random order), `plays`
    per question (format scripts differ in their random answer)."""
    from warehouse.reader import select_items

    items = list(select_items(wh, train_where, "md5(question_id)", n))
    evidence = _evidence(wh, [i.question_id for i in items]) if true_answers else {}
    rng = random.Random(seed)

    async def play(item):
        plan = (oracle_plan(agent, item, evidence.get(item.question_id, [])) if true_answers
                else format_plan(agent, item, rng))
        return await agent.run_episode(TeacherEngine(agent.tokenizer, plan), item)

    async def play_all():
        return [await play(i) for _ in range(plays) for i in items]

    return asyncio.run(play_all())


def agent_warm_start(p, cfg, on_step=None) -> dict:
    """`warm_start.steps` supervised steps on scripted agent episodes (see module docstring)."""
    from training.engines.batching import pack_sequences
    from training.loss import sft_loss_fn
    from training.warm_start import report_warm_step

    ws = cfg.warm_start
    oracle = ws.answers == "true"
    bands = ", ".join(f"'{b}'" for b, w in cfg.data.band_weights.items() if w > 0)
    where = f"({p.split.train_where or 'true'}) AND band IN ({bands or 'NULL'})"  # streamed
    trajs = warm_start_sequences(p.workflow, p.wh, where, WARM_QUESTIONS,
                                 oracle, cfg.seed, plays=1 if oracle else FORMAT_PLAYS)
    if not trajs:
        raise ValueError("warm_start: no training-split question of train_ready in the bands "
                         "of data.band_weights")
    scripted = {"scripted": len(trajs),
                "reward_of_script": sum(t.reward for t in trajs) / len(trajs)}
    if oracle:   # a script that ran out of turns or whose gold the reward refuses teaches no task
        trajs = [t for t in trajs if t.info.agent.reward_task > 0] or trajs
    rng = random.Random(cfg.seed)
    weights = stream_weights(trajs, _bands(p.wh, where), cfg.data.band_weights)
    stats: dict = {}
    p.train_engine.set_lr(ws.lr)
    try:
        for i in range(ws.steps):
            chosen = rng.choices(trajs, weights, k=ws.batch_size)
            stats = p.train_engine.train_batch(pack_sequences(
                [t.prompt_ids for t in chosen], [t.output_ids for t in chosen], pad_id=p.pad_id,
                output_masks=[t.loss_mask for t in chosen]), sft_loss_fn)
            report_warm_step(on_step, i + 1, ws.steps, stats)
    finally:
        p.train_engine.set_lr(None)
    return {**stats, "sequences": len(trajs), **scripted}


def stream_weights(trajs: list[Trajectory], bands: dict[str, str],
                   band_weights: dict[str, float]) -> list[float]:
    """A draw weight per script such that the cold start's batches mix bands as the RL stream
    does (a band's weight shared among its scripts), not as the warehouse holds them: a
    band of a few hundred multi-page questions beside thousands of one-page ones still gets
    its weight's share of the scripts."""
    per_band: dict[str, int] = {}
    for t in trajs:
        per_band[bands[t.question_id]] = per_band.get(bands[t.question_id], 0) + 1
    return [band_weights[bands[t.question_id]] / per_band[bands[t.question_id]] for t in trajs]


def _bands(wh, where: str) -> dict[str, str]:
    """question_id -> band over the warm start's pool."""
    from warehouse.reader import select_items

    return {i.question_id: i.band for i in select_items(wh, where, "md5(question_id)",
                                                         WARM_QUESTIONS)}
