"""A search-agent training run wired through the library's API: the objects `datagen train`
builds (training/setup.py), in the order its step loop uses them (training/trainer.py),
without checkpoints, held-out evaluation or metrics files. A map to read, and it runs:

    python examples/search_agent_api.py CONFIG.yaml WAREHOUSE RUN_DIR

CONFIG names the model folder (model.path), `rollout.workflow: search` and the `agent:`
section; WAREHOUSE holds pages and banded questions (train_ready).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from pathlib import Path


async def train(cfg, warehouse_path: Path, run_dir: Path) -> list[float]:
    """`cfg.steps` RL steps of the search agent; each step's mean reward."""
    import warehouse
    from datagen.tools import PageTools
    from training.controller import RolloutController
    from training.loss import make_ppo_loss_fn
    from training.search_env import agent_workflows
    from training.setup import ReaderSource, make_inference_engine, make_train_engine
    from training.split import resolve_split
    from training.trainer import build_train_batch
    from warehouse.reader import StreamReader

    wh, r = warehouse.open(warehouse_path), cfg.rollout
    trainer = make_train_engine(cfg, cfg.model.path)        # the policy DeepSpeed trains
    trainer.export_weights(str(run_dir / "weights" / "v0"))
    engine = make_inference_engine(cfg, run_dir / "weights" / "v0", 0)   # rollouts: hf, vllm
    split = resolve_split(cfg.data, wh, cfg.seed)             # held-out questions stay out
    reader = StreamReader(wh.root, cfg.data.band_weights, seed=cfg.seed, where=split.train_where)
    agent, _ = agent_workflows(cfg, trainer.tokenizer, PageTools.open(wh))  # search env + policy
    controller = RolloutController(
        functools.partial(agent.run_episode, engine), ReaderSource(reader),
        batch_size=r.batch_size, group_size=r.group_size, max_in_flight=r.max_in_flight,
        eta=r.max_staleness, late_groups=r.late_groups, dynamic_sampling=r.dynamic_sampling)
    loss_fn = make_ppo_loss_fn(cfg.loss.eps_low, cfg.loss.eps_high, cfg.loss.behav_cap)
    rewards = []
    controller.fill()                                         # episodes start generating
    for version in range(cfg.steps):
        batch = await controller.get_batch()                  # GRPO groups within staleness η
        if batch is None:                                     # the question stream ran dry
            break
        tensors = build_train_batch(batch, trainer.tokenizer.pad_token_id)   # + advantages
        # in a thread, as the trainer does: episodes keep generating while it trains
        tensors["prox_logprobs"] = await asyncio.to_thread(trainer.forward_logprobs, tensors)
        await asyncio.to_thread(trainer.train_batch, tensors, loss_fn)   # decoupled PPO
        path = run_dir / "weights" / f"v{version + 1}"
        await asyncio.to_thread(trainer.export_weights, str(path))
        await engine.update_weights(version + 1, str(path))   # interrupts episodes in flight
        controller.set_version(version + 1)
        rewards.append(sum(t.reward for t in batch.trajectories) / len(batch.trajectories))
    await controller.aclose()
    engine.close()
    reader.close()
    wh.close()
    return rewards


def main(argv: list[str] | None = None) -> int:
    from training.config import load_config

    config, warehouse_path, run_dir = (argv if argv is not None else sys.argv[1:])[:3]
    rewards = asyncio.run(train(load_config(config), Path(warehouse_path), Path(run_dir)))
    print("reward per step:", " ".join(f"{x:.3f}" for x in rewards))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
