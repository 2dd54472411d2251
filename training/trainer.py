"""The asynchronous RL loop: rollouts generate while the trainer trains (AReaL style).

    questions (warehouse StreamReader) ─► RolloutController ─► workflow.run_episode ─► engine
                                                 │ batches (staleness ≤ η)
                                                 ▼
      train engine (DeepSpeed): π_prox = forward_logprobs (or loglinear), train_batch
                                                 │ export_weights → update_weights (interrupts)
                                                 ▼
      metrics.jsonl / TensorBoard, rollouts rows, checkpoints (model, optimizer, RNG,
      reader cursor, policy version, controller counters and untrained items)

Training runs in a worker thread, so generation never waits for it; the event loop only
waits for a batch when the staleness bound requires it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from training.search_env.agent import agent_metrics
from training.api import TrainingFailed, Trajectory
from training.config import TrainConfig
from training.controller import RolloutBatch
from training.failures import engine_unreachable, unreachable_message
from training.loss import grpo_advantages, make_ppo_loss_fn, ppo_update
from training.metrics import (MetricsLogger, checkpoint_dirs, gradient_metrics, plot_reward_curve,
                              rotate_checkpoints)
from training.setup import build_parts, rollout_records, write_resolved_config
from training.warm_start import stoppable_warm_start

if TYPE_CHECKING:
    from warehouse.reader import TrainItem

logger = logging.getLogger(__name__)


def run_train(cfg: TrainConfig, run_dir: str | Path, *, warehouse: str | Path | None = None,
              resume: bool = False, on_step: Callable[[dict], None] | None = None) -> dict:
    """Train per `cfg` into `run_dir`; returns the summary (also stored on the run row).
    A SIGTERM stops it as Ctrl-C does (KeyboardInterrupt; see `_stopped_by_sigterm`)."""
    return asyncio.run(_stopped_by_sigterm(
        _Trainer(cfg, Path(run_dir), warehouse, resume, on_step).run()))


async def _stopped_by_sigterm(run: Awaitable[dict]) -> dict:
    """SIGTERM cancels the run, so its `finally` blocks stop the rollouts and the inference
    engine (vLLM's processes), close the reader and mark the run `interrupted`, with the
    checkpoints and metrics it wrote kept; then KeyboardInterrupt, as for Ctrl-C. A raise in
    a signal handler instead lands in whatever code runs (an episode's tokenizer call), which
    the controller reports as a failed episode. In the main thread only (signals)."""
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    stop = asyncio.Event()

    def cancel() -> None:
        stop.set()
        task.cancel()

    handled = threading.current_thread() is threading.main_thread()
    if handled:
        loop.add_signal_handler(signal.SIGTERM, cancel)
    try:
        return await run
    except asyncio.CancelledError:
        if stop.is_set():
            raise KeyboardInterrupt from None
        raise
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGTERM)


def build_train_batch(batch: "RolloutBatch", pad_id: int) -> dict[str, Any]:
    """Controller batch → the [B, T] tensors of training/api.py, with GRPO advantages."""
    import torch

    from training.engines.batching import pack_sequences

    rewards = torch.tensor([[t.reward for t in g] for g in batch.groups], dtype=torch.float32)
    adv = grpo_advantages(rewards).reshape(-1)
    trajs = batch.trajectories
    seq_values = {"advantages": adv.tolist(), "staleness": batch.staleness}
    temperatures = [t.temperature for t in trajs]
    if None not in temperatures:   # the engine divides each row by what sampled it
        seq_values["temperature"] = temperatures
    return pack_sequences(
        [t.prompt_ids for t in trajs], [t.output_ids for t in trajs], pad_id=pad_id,
        token_values={"behav_logprobs": [t.output_logprobs for t in trajs]},
        seq_values=seq_values, output_masks=[t.loss_mask for t in trajs])


class _Trainer:
    def __init__(self, cfg: TrainConfig, run_dir: Path, warehouse, resume: bool, on_step):
        self.cfg, self.run_dir, self.resume, self.on_step = cfg, run_dir, resume, on_step
        self.warehouse_path = warehouse
        self.loss_fn = make_ppo_loss_fn(cfg.loss.eps_low, cfg.loss.eps_high, cfg.loss.behav_cap)

    async def run(self) -> dict:
        from training.engines.deepspeed_engine import init_distributed
        from training.ranks import rank_and_world

        cfg, run_dir = self.cfg, self.run_dir
        # First of all: under the DeepSpeed launcher the ranks must agree on who leads.
        init_distributed()
        rank, world = rank_and_world()
        if rank != 0:
            return await self._follow(rank)
        run_dir.mkdir(parents=True, exist_ok=True)
        ckpt = self._resume_checkpoint()
        p = await build_parts(cfg, run_dir, self.warehouse_path, ckpt, self._loss_fns())
        self.p = p
        write_resolved_config(cfg, run_dir)
        split = p.split.as_dict()
        (run_dir / "eval_split.json").write_text(json.dumps(split, indent=1))
        with p.wh.run("train", {**cfg.model_dump(), "run_dir": str(run_dir),
                                "resumed_from": str(ckpt) if ckpt else None,
                                "world_size": world, "eval_split": split},
                        resumed_from=p.state.get("run_id", "")) as run:
            self.run_id = run.run_id
            try:
                summary = await self._loop(ckpt)
            except TrainingFailed as exc:
                logger.error("training failed: %s", exc)
                raise
            finally:
                if world > 1:
                    await asyncio.to_thread(p.train_engine.stop)
                await p.controller.aclose()
                for close in p.closers:   # a user agent's endpoint
                    await close()
                p.inference.close()
                p.reader.close()
            run.summary = summary
        p.wh.close()
        return summary

    def _loss_fns(self) -> dict[str, Callable]:
        from training.loss import sft_loss_fn

        return {"ppo": self.loss_fn, "sft": sft_loss_fn}

    async def _follow(self, rank: int) -> dict:
        """A rank other than 0: hold an engine shard and replay rank 0's engine calls."""
        from training.ranks import broadcast, follow
        from training.setup import make_train_engine

        model_path, ckpt = await asyncio.to_thread(broadcast)
        engine = await asyncio.to_thread(make_train_engine, self.cfg, model_path)
        if ckpt:
            await asyncio.to_thread(engine.load, ckpt)
        calls = await asyncio.to_thread(follow, engine, self._loss_fns())
        logger.info("rank %d: replayed %d engine calls", rank, calls)
        return {"rank": rank, "engine_calls": calls}

    def _resume_checkpoint(self) -> Path | None:
        if not self.resume:
            if checkpoint_dirs(self.run_dir):
                raise ValueError(f"{self.run_dir} already holds checkpoints: pass --resume to "
                                 "continue that run, or choose another --run-dir")
            return None
        found = checkpoint_dirs(self.run_dir)
        if not found:
            raise FileNotFoundError(f"--resume: no complete checkpoint under "
                                    f"{self.run_dir / 'checkpoints'}")
        return found[-1]

    async def _loop(self, ckpt: Path | None) -> dict:
        p, cfg = self.p, self.cfg
        start_step = p.state.get("step", 0)
        metrics = MetricsLogger(self.run_dir, resume_step=start_step if ckpt else None)
        t_start = time.monotonic() - metrics.elapsed_before   # elapsed_s goes on after a resume
        if ckpt is None:
            ws: dict = {}
            if cfg.warm_start.steps:
                ws = await stoppable_warm_start(p, cfg, self.on_step)
                await self._publish(0)
                # kept (weights/v0 is pruned later): RL's gain is measured against it
                # (`datagen eval --policy checkpoint:RUN/warm_start`)
                await asyncio.to_thread(shutil.copytree, self.run_dir / "weights" / "v0",
                                        self.run_dir / "warm_start", dirs_exist_ok=True)
                logger.info("warm start: %s", ws)
            metrics.log({"step": 0, "policy_version": 0, "reward_mean": None,
                         **{f"warm_start/{k}": v for k, v in ws.items()
                            if isinstance(v, (int, float))},
                         **await self._evaluate(),
                         "elapsed_s": round(time.monotonic() - t_start, 3)})
        from training.reband import Rebander

        self.rebander = Rebander.attach(cfg.reband, p.reader, p.wh, self.run_id)
        p.controller.fill()
        last: dict[str, Any] = {}
        done, stopped = start_step, {}
        for step in range(start_step + 1, cfg.steps + 1):
            row = await self._step(step)
            if row is None:
                stopped = await self._stream_dry(done)
                break
            done = step
            row["elapsed_s"] = round(time.monotonic() - t_start, 3)
            metrics.log(row)
            last = row
            if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                await self._checkpoint(step)
            if self.on_step:   # after the checkpoint: a step reported is a step kept
                self.on_step(row)
        metrics.close()
        await asyncio.to_thread(p.train_engine.export_weights, str(self.run_dir / "final"))
        self._write_rollouts(p.controller.drain_finished(), trained=False)
        plot_reward_curve(self.run_dir)
        return {"steps": done, **stopped, "policy_version": p.controller.version,
                "final_reward_mean": last.get("reward_mean"),
                "final_eval_reward": last.get("eval_reward"),
                **dict(p.controller.counts), **p.controller.staleness_summary(),
                "final_model": str(self.run_dir / "final")}

    async def _step(self, step: int) -> dict | None:
        """One training step; None when the question stream ran dry."""
        p, cfg = self.p, self.cfg
        t0 = time.monotonic()
        batch = await p.controller.get_batch()
        if batch is None:
            return None
        t_wait = time.monotonic() - t0
        tensors = build_train_batch(batch, p.pad_id)
        p.controller.count_gradient(int((tensors["advantages"] != 0).sum()))
        t1 = time.monotonic()
        if cfg.loss.prox_logp == "recompute":
            tensors["prox_logprobs"] = await asyncio.to_thread(p.train_engine.forward_logprobs,
                                                               tensors)
        t2 = time.monotonic()
        stats = await asyncio.to_thread(ppo_update, p.train_engine, tensors, self.loss_fn,
                                        cfg.loss, cfg.seed * 100003 + batch.version)
        t3 = time.monotonic()
        finished = p.controller.drain_finished()
        self._write_rollouts([(t, None, False) for t, _, acc in finished if not acc],
                             trained=False)
        self._write_rollouts([(t, s) for t, s in zip(batch.trajectories, batch.staleness)],
                             trained=True)
        # Before the new weights open new groups, so their draws see the new bands.
        rebanded = (self.rebander.after_step(step, batch.version + 1) if self.rebander
                    else {})
        t_rec = time.monotonic()
        await self._publish(batch.version + 1)
        t4 = time.monotonic()
        evaluation = {"eval_reward": None}
        if step % cfg.eval_every == 0 or step == cfg.steps:
            evaluation = await self._evaluate()
        timings = {"wait_batch_s": t_wait, "prox_s": t2 - t1, "train_s": t3 - t2,
                   "record_s": t_rec - t3, "update_s": t4 - t_rec,
                   "step_s": time.monotonic() - t0}
        return {**self._row(step, batch, tensors, stats, finished, evaluation, timings),
                **rebanded}

    async def _stream_dry(self, done: int) -> dict:
        """The question stream ran dry: say so, keep what was trained, stop cleanly."""
        why = f"the question stream ran dry after step {done}: {self.p.reader.dry_message()}"
        logger.warning("%s; stopping", why)
        if done and done % self.cfg.checkpoint_every:
            await self._checkpoint(done)
        return {"stopped": "stream_empty", "stopped_reason": why}

    def _row(self, step, batch, tensors, stats, finished, evaluation, timings) -> dict:
        trajs = batch.trajectories
        rewards = [t.reward for t, _, _ in finished]
        lengths = [len(t.output_ids) for t in trajs]
        mask = tensors["loss_mask"].bool()
        row = {
            "step": step, "policy_version": batch.version + 1, "trained_version": batch.version,
            "reward_mean": sum(rewards) / len(rewards) if rewards else None,
            "episodes_finished": len(rewards),
            "episode_time_s": sum(t.info.episode_s for t, _, _ in finished),
            "reward_trained_mean": sum(t.reward for t in trajs) / len(trajs),
            **evaluation,
            "staleness_mean": sum(batch.staleness) / len(batch.staleness),
            "staleness_max": max(batch.staleness),
            "completion_len_mean": sum(lengths) / len(lengths), "completion_len_max": max(lengths),
            "prompt_len_mean": sum(len(t.prompt_ids) for t in trajs) / len(trajs),
            "kl_behav_prox": stats.get("kl_behav_prox"),   # on the trained tokens
            "throughput_tokens_s": float(mask.sum()) / max(timings["step_s"], 1e-9),
            "throughput_episodes_s": len(rewards) / max(timings["step_s"], 1e-9),
            # every token the forward/backward passes saw, over their seconds (incl. π_prox)
            "train_tokens_s": float(tensors["attention_mask"].sum())
            / max(timings["train_s"] + timings["prox_s"], 1e-9),
            # the policy's own tokens of the episodes finished this step (kept or dropped)
            "gen_tokens_s": sum(generated_tokens(t) for t, _, _ in finished)
            / max(timings["step_s"], 1e-9),
            "wait_share": timings["wait_batch_s"] / max(timings["step_s"], 1e-9),
            "groups_dropped_no_signal": self.p.controller.counts["dropped_no_signal"],
            "groups_dropped_rejected": self.p.controller.counts["dropped_rejected_episode"],
            "groups_dropped_late": self.p.controller.counts["dropped_late"],
            "groups_filler_kept": self.p.controller.counts["groups_filler_kept"],
            "groups_replayed_hotter": self.p.controller.counts["groups_replayed_hotter"],
            **gradient_metrics(self.p.controller.counts),
            "episode_time_cancelled_s": self.p.controller.cancelled_episode_s,
            "episodes_failed": self.p.controller.counts["episodes_failed"],
            **{k: v for k, v in self.p.controller.counts.items()
               if k.startswith("dropped_failed/")},
            **{f"reward_rule/{k}": v for k, v in sorted(Counter(
                t.info.reward_rule for t, _, _ in finished).items())},
        }
        row.update(agent_metrics([t for t, _, _ in finished]))  # multi-turn episodes only
        row.update({k: stats[k] for k in ("loss", "clip_fraction", "behav_capped_fraction",
                                          "ratio_mean", "grad_norm", "lr")
                    if k in stats})
        row.update({k: round(v, 4) for k, v in timings.items()})
        return row

    async def _publish(self, version: int) -> None:
        """Export the trained weights and load them into the inference engine (interrupts)."""
        p = self.p
        path = self.run_dir / "weights" / f"v{version}"
        await asyncio.to_thread(p.train_engine.export_weights, str(path))
        try:
            await p.inference.update_weights(version, str(path))
        except Exception as exc:
            if engine_unreachable(exc):
                raise TrainingFailed(f"{unreachable_message(exc)}: weights v{version} could "
                                     "not be loaded") from exc
            raise
        p.controller.set_version(version)
        for old in (self.run_dir / "weights").iterdir():
            if old.name != path.name and int(old.name[1:]) < version - 1:
                shutil.rmtree(old, ignore_errors=True)

    async def _evaluate(self) -> dict:
        """eval_reward over the held-out items (for agent episodes also `eval_agent/*`: search
        rate, turns, ...), and `eval_failed/<Type>` for the episodes that raised: a failed
        evaluation episode is counted, never fatal (an unreachable engine is)."""
        p = self.p
        results = await asyncio.gather(*(p.eval_workflow.run_episode(p.inference, it)
                                         for it in p.split.items), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        for exc in failed:
            if not isinstance(exc, Exception):
                raise exc
            if engine_unreachable(exc):
                raise TrainingFailed(f"{unreachable_message(exc)} during evaluation") from exc
        done = [r for r in results if isinstance(r, Trajectory)]
        return {"eval_reward": sum(r.reward for r in done) / len(done) if done else None,
                **agent_metrics(done, prefix="eval_agent/"),   # search rate etc. when held out
                **{f"eval_failed/{k}": v
                   for k, v in sorted(Counter(type(e).__name__ for e in failed).items())}}

    async def _checkpoint(self, step: int) -> None:
        p = self.p
        # Captured in one event-loop turn, so cursor, pending items and counters agree.
        state = {"step": step, "version": p.controller.version, "run_id": self.run_id,
                 "reader": p.reader.state_dict(),
                 "controller": _jsonable(p.controller.state_dict())}
        path = self.run_dir / "checkpoints" / f"step_{step}"
        await asyncio.to_thread(p.train_engine.save, str(path), state)
        (path / "DONE").write_text(json.dumps({"step": step}))
        rotate_checkpoints(self.run_dir, self.cfg.keep_checkpoints)

    def _write_rollouts(self, entries, trained: bool) -> None:
        records = rollout_records(entries, trained, self.run_id)
        if records:
            self.p.wh.append(records, run_id=self.run_id)


def _item_dict(item: "TrainItem") -> dict:
    """A pending question as JSON (its aliases a list)."""
    return {**item._asdict(), "answer_aliases": list(item.answer_aliases)}


def _jsonable(state: dict) -> dict:
    out = dict(state)
    out["pending_items"] = [_item_dict(i) for i in state["pending_items"]]
    return out


def generated_tokens(t) -> int:
    """The tokens the policy sampled in an episode (tool text excluded)."""
    return sum(t.loss_mask) if t.loss_mask is not None else len(t.output_ids)
