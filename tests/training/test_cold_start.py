"""The agent's cold start (warm_start.answers: true) is scripted on training-split questions
only: no evaluation question, nor an answer only an evaluation question has, is ever in a
model turn of its trajectories; each script searches the question, opens the page that
states the answer when the results do not show it, answers with the gold, and ends every
turn with the template's end-of-turn token."""

from __future__ import annotations

from datagen.tools import PageTools
from tests.training.agent_helpers import make_agent
from training.search_env.warm import warm_start_sequences
from training.config import TrainConfig
from training.split import resolve_split

N = 60


def _town(i: int) -> tuple[str, str, str]:
    """(url, page text, answer) of town i: a distinct year per town, stated first (even i:
    a search snippet shows it) or after a long text (odd i: the page must be opened)."""
    year = str(1500 + 7 * i)
    filler = " ".join(f"Town{i} has a market on day {d}." for d in range(12))
    fact = f"The Town{i} bridge was built in {year}."
    text = f"{fact} {filler}" if i % 2 == 0 else f"Town{i} is a river town. {filler} {fact}"
    return f"http://w/town{i}", text, year


def _warehouse(wh) -> None:
    import datetime as dt

    from warehouse import Evidence, PageRecord, QuestionRecord
    from warehouse.admit import admit

    towns = [_town(i) for i in range(N)]
    now = dt.datetime.now(dt.timezone.utc)
    with wh.transaction() as tx:
        tx.append([PageRecord(url=u, title=f"Town{i}", text=t, content_hash=u, fetched_at=now)
                   for i, (u, t, _) in enumerate(towns)])
        tx.append([QuestionRecord(
            question_id=f"q{i}", question=f"When was the Town{i} bridge built?", answer=y,
            evidence=(Evidence(u, f"The Town{i} bridge was built in {y}."),), source_urls=(u,))
            for i, (u, _, y) in enumerate(towns)])
        admit(tx, [f"q{i}" for i in range(N)], check="test", solver="test", band="medium")


def test_cold_start_scripts_only_training_split_questions(wh, tiny_model_dir):
    from training.models import load_tokenizer

    _warehouse(wh)
    cfg = TrainConfig(data={"eval_fraction": 0.3, "eval_size": N,
                            "band_weights": {"medium": 1.0}})
    split = resolve_split(cfg.data, wh)
    tok = load_tokenizer(tiny_model_dir)
    agent = make_agent(tok, PageTools.open(wh), search_k=1, snippet_chars=60,
                                max_observation_tokens=400, context_tokens=1024)
    trajs = warm_start_sequences(agent, wh, split.train_where, 4096, true_answers=True)
    held_out = {i.question_id for i in split.items}
    trained = {t.question_id for t in trajs}
    assert held_out and trained and not held_out & trained
    assert len(trained) + len(held_out) == N
    answers = {i: _town(int(i[1:]))[2] for i in held_out}
    for t in trajs:
        said = tok.decode([i for i, m in zip(t.output_ids, t.loss_mask) if m])
        assert not any(f"Town{q[1:]} " in said or a in said for q, a in answers.items())
        assert said.startswith("<search>When was the Town") and t.reward == 1.0
        ends = [i for i, m in zip(t.output_ids, t.loss_mask) if m].count(agent.eot_id)
        assert ends == t.n_turns
    opened = [t for t in trajs if t.info.agent.n_open]
    assert opened   # the snippet of 60 characters rarely shows the year: the page is opened


class _RecordingEngine:
    """A train engine stand-in that keeps the batches of the supervised steps."""

    def __init__(self):
        self.batches, self.lrs = [], []

    def set_lr(self, lr):
        self.lrs.append(lr)

    def train_batch(self, batch, loss_fn):
        self.batches.append(batch)
        return {"nll": 1.0}


def test_agent_cold_start_trains_on_rewarded_scripts_of_streamed_bands(wh, tiny_model_dir):
    """`agent_warm_start` scripts the streamed bands' training-split questions only, and
    leaves out the scripts that earn no task reward (two turns are too few for search, open,
    answer); none rewarded, it keeps them all."""
    from types import SimpleNamespace

    from training.search_env.warm import agent_warm_start
    from training.models import load_tokenizer
    from warehouse.admit import admit

    _warehouse(wh)
    with wh.transaction() as tx:   # q0-q9 re-banded out of the streamed bands
        admit(tx, [f"q{i}" for i in range(10)], check="test", solver="test", band="too_hard")
    cfg = TrainConfig(data={"eval_fraction": 0.3, "band_weights": {"medium": 1.0}},
                      warm_start={"steps": 2, "batch_size": 64, "answers": "true", "lr": 1e-5})
    tok = load_tokenizer(tiny_model_dir)
    engine = _RecordingEngine()
    parts = SimpleNamespace(wh=wh, split=resolve_split(cfg.data, wh), train_engine=engine,
                            pad_id=tok.pad_token_id, workflow=make_agent(
                                tok, PageTools.open(wh), search_k=1, snippet_chars=60))
    stats = agent_warm_start(parts, cfg)
    trained = {tok.decode(row).split("When was the ")[-1].split(" bridge")[0]
               for b in engine.batches for row in b["input_ids"].tolist()}
    streamed = {f"Town{i}" for i in range(10, N)} - {
        f"Town{i.question_id[1:]}" for i in parts.split.items}
    assert trained and trained <= streamed and stats["sequences"] == stats["scripted"]
    assert engine.lrs == [1e-5, None] and len(engine.batches) == 2
    env = parts.workflow.env
    env.settings = env.settings.model_copy(update={"max_turns": 2})
    mixed = agent_warm_start(parts, cfg)
    assert 0 < mixed["reward_of_script"] < 1
    assert mixed["sequences"] == round(mixed["scripted"] * mixed["reward_of_script"])
    env = parts.workflow.env
    env.settings = env.settings.model_copy(update={"max_turns": 1})
    none = agent_warm_start(parts, cfg)
    assert none["reward_of_script"] == 0.0 and none["sequences"] == none["scripted"]


def test_cold_start_draws_scripts_with_the_streams_band_weights():
    """90 easy scripts beside 10 too_hard ones, weighted 1 : 3: three draws in four are
    too_hard, as in the RL stream, not one in ten as in the warehouse."""
    import random

    from training.api import Trajectory
    from training.search_env.warm import stream_weights

    trajs = [Trajectory(f"q{i}", [1], [2], [0.0], [0], 1.0) for i in range(100)]
    bands = {f"q{i}": "easy" if i < 90 else "too_hard" for i in range(100)}
    weights = stream_weights(trajs, bands, {"easy": 1.0, "too_hard": 3.0})
    drawn = random.Random(0).choices(trajs, weights, k=4000)
    share = sum(bands[t.question_id] == "too_hard" for t in drawn) / len(drawn)
    assert 0.72 < share < 0.78
