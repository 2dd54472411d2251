"""The supervised warm start before RL: a qa run's steps on the output format (random
answers, training/tasks.py) or on the task (the warehouse's own questions with their gold);
an agent run's on scripted episodes (training/search_env/warm.py). A user agent is
warm-started only when `warm_start.search_scripts` says so (the scripts are the search
agent's: its prompt and tags)."""

from __future__ import annotations

import asyncio
import random
import threading
from dataclasses import replace

from training.config import TrainConfig
from training.setup import Parts, search_workflows


class _Stopped(Exception):
    """Ends the warm start's thread at its next step report, once its caller was stopped."""


async def stoppable_warm_start(p: Parts, cfg: TrainConfig, on_step=None) -> dict:
    """`warm_start` in a worker thread that a stop (the awaiting task cancelled) ends at its
    next step report. A thread cannot be interrupted and `asyncio.run` waits for its threads
    at exit, so a SIGTERM during the search agent's 32-step cold start waited out every step
    (seen: the run went on training for minutes, its inference engine already shut down)."""
    stop = threading.Event()

    def report(row: dict) -> None:
        if stop.is_set():
            raise _Stopped
        if on_step is not None:
            on_step(row)

    try:
        return await asyncio.to_thread(warm_start, p, cfg, report)
    except asyncio.CancelledError:
        stop.set()
        raise


def warm_start(p: Parts, cfg: TrainConfig, on_step=None) -> dict:
    """Supervised steps on the output format with random answers (see training/tasks.py).
    `on_step` gets `{"step": 0, "warm_start_step", "warm_start_steps", "nll"}` after each."""
    from training.engines.batching import pack_sequences
    from training.loss import sft_loss_fn
    from training.tasks import task_questions, warm_start_pairs

    if cfg.rollout.workflow != "qa":   # scripted agent episodes (training/search_env/warm.py)
        from training.search_env.warm import agent_warm_start
        if cfg.warm_start.search_scripts:   # a user's agent that asked for the search agent's
            p = replace(p, workflow=search_workflows(cfg, p.tokenizer, p.wh)[0])
        return agent_warm_start(p, cfg, on_step)
    if cfg.data.task:
        questions = task_questions(cfg.data.task, cfg.data.task_size, "train", cfg.seed)
        pairs = warm_start_pairs(questions, cfg.seed, cfg.warm_start.answers == "true")
    else:
        pairs = warehouse_pairs(p, cfg)
    rng = random.Random(cfg.seed)
    eos = p.tokenizer.eos_token_id
    stats: dict = {}
    p.train_engine.set_lr(cfg.warm_start.lr)
    try:
        for i in range(cfg.warm_start.steps):
            chosen = rng.sample(pairs, min(cfg.warm_start.batch_size, len(pairs)))
            prompts = [p.workflow.prompt_ids(q) for q, _ in chosen]
            outputs = [p.tokenizer.encode(a, add_special_tokens=False) + [eos]
                       for _, a in chosen]
            stats = p.train_engine.train_batch(
                pack_sequences(prompts, outputs, pad_id=p.pad_id), sft_loss_fn)
            report_warm_step(on_step, i + 1, cfg.warm_start.steps, stats)
    finally:
        p.train_engine.set_lr(None)
    return stats


def report_warm_step(on_step, step: int, steps: int, stats: dict) -> None:
    """Tell `on_step` (the CLI's progress bar) how far the warm start is."""
    if on_step is not None:
        on_step({"step": 0, "warm_start_step": step, "warm_start_steps": steps,
                 "nll": stats.get("nll")})


def warehouse_pairs(p: Parts, cfg: TrainConfig) -> list[tuple[str, str]]:
    """(question, gold answer) of training-split questions in the streamed bands: a supervised
    head start on the warehouse's own questions (never an evaluation one), so that RL on a
    tiny random model sees groups with signal at all."""
    from warehouse.reader import select_items

    if cfg.warm_start.answers != "true":
        raise ValueError("warm_start on warehouse questions needs warm_start.answers: true "
                         "(random answers teach a built-in task's format only)")
    bands = ", ".join(f"'{b}'" for b, w in cfg.data.band_weights.items() if w > 0)
    where = f"({p.split.train_where or 'true'}) AND band IN ({bands or 'NULL'})"
    limit = cfg.warm_start.batch_size * cfg.warm_start.steps
    pairs = [(i.question, i.answer) for i in select_items(p.wh, where, "md5(question_id)", limit)]
    if not pairs:
        raise ValueError("warm_start: no training-split question of train_ready in the bands "
                         "of data.band_weights")
    return pairs
