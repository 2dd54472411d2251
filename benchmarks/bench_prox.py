"""π_prox recomputed vs approximated (`loss.prox_logp`): train-step time on a tiny model.

The trainer's step on a batch is, with `recompute` (the default), a forward pass of the whole
batch for log π_prox and then the update (`training.loss.ppo_update`); with `loglinear` the
update alone (AReaL's log-linear approximation, training/loss.py). Two DeepSpeed engines
(fp32 on a CPU) start from the same tiny random model built here; each step both train on the
same batch (rows of staleness 0 and 1, behaviour log-probs from the engine shifted on the
stale rows), back to back in alternating order so that a busy machine slows both alike.
Reported: the median step time of each, the ratio loglinear / recompute as the median of
the steps' paired ratios (AReaL reports 1 / 1.27 = 0.79 on GPUs) and of the fastest steps
(`ratio_min`: on a machine busy with other work, the least disturbed), and the largest weight
difference between the two engines after the run (0 up to float noise with one minibatch:
the approximation is exact there). About a minute on 2 CPU cores.

    python benchmarks/bench_prox.py [--steps 10] [--rows 16] [--tokens 384] [--minibatches 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def engines(folder: Path, minibatches: int):
    """Two train engines over one tiny model (the recipe's shape, scaled down) and its config."""
    from training.config import TrainConfig
    from training.models import build_tiny_model
    from training.setup import make_train_engine

    model = build_tiny_model(folder / "model", hidden=128, heads=4, kv_heads=2,
                             intermediate=256, layers=2, vocab_size=512)
    cfg = TrainConfig(engine={"lr": 1e-3, "micro_batch_size": 4},
                      loss={"ppo_minibatches": minibatches})
    return make_train_engine(cfg, model), make_train_engine(cfg, model), cfg


def batch(engine, rows: int, tokens: int, seed: int) -> dict:
    """A step's batch: prompts of a quarter of `tokens`, completions of the rest (ragged)."""
    import torch

    from training.engines.batching import pack_sequences

    g = torch.Generator().manual_seed(seed)
    prompt = tokens // 4
    prompts = [torch.randint(3, 512, (prompt,), generator=g).tolist() for _ in range(rows)]
    outputs = [torch.randint(3, 512, (tokens - prompt - 8 * (i % 4),), generator=g).tolist()
               for i in range(rows)]
    staleness = [i % 2 for i in range(rows)]
    b = pack_sequences(prompts, outputs, pad_id=0,
                       seq_values={"staleness": staleness,
                                   "advantages": [(-1.0) ** i for i in range(rows)]})
    shift = -0.2 * b["staleness"][:, None] * b["loss_mask"]
    b["behav_logprobs"] = (engine.forward_logprobs(b) + shift) * b["loss_mask"]
    return b


def step(engine, tensors: dict, cfg, prox_logp: str, seed: int) -> float:
    """Seconds of one trainer step's π_prox and update, as `_Trainer._step` runs them."""
    from training.loss import make_ppo_loss_fn, ppo_update

    loss = cfg.loss.model_copy(update={"prox_logp": prox_logp})
    t0 = time.perf_counter()
    if prox_logp == "recompute":
        tensors = {**tensors, "prox_logprobs": engine.forward_logprobs(tensors)}
    ppo_update(engine, tensors, make_ppo_loss_fn(), loss, seed)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=384)
    ap.add_argument("--minibatches", type=int, default=1)
    args = ap.parse_args(argv)
    from training.engines.deepspeed_engine import lone_process_env

    os.environ.update(lone_process_env())      # an entry point: DeepSpeed's one-rank world
    with tempfile.TemporaryDirectory() as tmp:
        exact, approx, cfg = engines(Path(tmp), args.minibatches)
        times: dict[str, list[float]] = {"recompute": [], "loglinear": []}
        for i in range(args.steps + 1):           # step 0 warms both up, not counted
            tensors = batch(exact, args.rows, args.tokens, seed=i)
            order = [(exact, "recompute"), (approx, "loglinear")][:: 1 if i % 2 else -1]
            for engine, mode in order:
                took = step(engine, tensors, cfg, mode, seed=i)
                if i:
                    times[mode].append(took)
        drift = max(float((a - b).abs().max()) for a, b in
                    zip(exact.module.state_dict().values(), approx.module.state_dict().values()))
    rec, app = (statistics.median(times[m]) for m in ("recompute", "loglinear"))
    ratio = statistics.median(a / r for a, r in zip(times["loglinear"], times["recompute"]))
    print(f"{'mode':10}{'median_s':>10}  steps_s")
    for mode, ts in times.items():
        print(f"{mode:10}{statistics.median(ts):10.3f}  " + " ".join(f"{t:.3f}" for t in ts))
    fastest = min(times["loglinear"]) / min(times["recompute"])
    print(f"RESULT bench_prox ratio={ratio:.3f} speedup={1 / ratio:.2f}x ratio_min={fastest:.3f} "
          f"step_recompute_s={rec:.3f} step_loglinear_s={app:.3f} "
          f"max_weight_diff={drift:.2e} rows={args.rows} tokens={args.tokens} "
          f"minibatches={args.minibatches} steps={args.steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
