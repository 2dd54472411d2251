"""The closed loop: re-banding during training vs bands fixed before it (real trainer).

Both runs train the same initial model (the tiny model after a supervised head start on the
task, made once) with the same seed, band weights (easy, medium, hard: too_easy and too_hard
excluded), initial bands (every question `medium`) and number of optimizer steps, on the same
pool of mixed difficulty:

    learnable:    the built-in fact_copy task ("How many bridges does Varno have? Fact: Varno
                  has bridges: 7" -> "7"); after the supervised warm start some questions are
                  nearly always right, others often wrong, and the policy keeps improving;
    unanswerable: the same questions with the fact removed and a two-digit answer, which the
                  policy (one digit, then EOS) never gives: too hard, every group all wrong.

    baseline: loop.reband_every = 0: questions keep the band they were given before training.
    project:  loop.reband_every = K: every K steps the trainer re-bands the questions it rolled
              out (difficulty rows source = 'training'), and the reader streams by those bands
              from its next epoch on, with an exploration share ε = 0.1 of the excluded bands.

Everything goes through `datagen train`: the reader, the controller (dynamic sampling drops
groups with no signal), the `rollouts` table, re-banding (difficulty/reband.py) and
`train_ready`. Reported: the share of finished groups dropped for having no signal (the
controller's counters) and the evaluation reward on held-out questions (names never trained
on) at equal steps; `no_signal_ratio` = that share with re-banding / without. Both runs must
cover at least 3 epochs of the reader (checked from the last checkpoint's reader cursor).

    python benchmarks/bench_loop.py [--quick] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
GROUP, BATCH, EVAL = 8, 64, 192


def unanswerable(n: int, seed: int) -> list:
    """fact_copy questions with the fact cut off and a two-digit answer (never produced)."""
    from training.tasks import fact_copy_questions
    from warehouse.reader import TrainItem
    from warehouse.schema import content_id

    out = []
    for i, q in enumerate(fact_copy_questions(n, "train", seed + 1000)):
        text = q.question.split(" Fact:")[0] + f" (count {i})"
        out.append(TrainItem(content_id("loop_unanswerable", text), text, str(10 + i % 90)))
    return out


def build_warehouse(path: Path, n_copy: int, n_hard: int, seed: int) -> None:
    """The pool, every question `medium`: the task's questions and the unanswerable ones."""
    import warehouse
    from training.tasks import load_task
    from warehouse.admit import admit
    from warehouse.schema import QuestionRecord

    hard = unanswerable(n_hard, seed)
    with warehouse.open(path) as wh:
        load_task(wh, "fact_copy", n_copy, seed)
        with wh.transaction() as tx:
            tx.append([QuestionRecord(question_id=q.question_id, question=q.question,
                                      answer=q.answer, composer="bench:loop", backend="builtin")
                       for q in hard])
            admit(tx, [q.question_id for q in hard], check="builtin_task", solver="builtin",
                  pass_rate=0.1)


def initial_model(out: Path, n_copy: int, seed: int, steps: int = 150) -> Path:
    """The one initial model of both runs: the tiny model after a supervised head start on
    the task (150 steps: the gold digit gets probability ~0.55 on held-out questions), so
    that the pool holds questions of every difficulty for the policy from the first step."""
    from training.models import build_tiny_model, load_causal_lm, load_tokenizer
    from training.tasks import task_questions, warm_start_pairs
    from training.workflow import QAWorkflow

    build_tiny_model(out, hidden=128, layers=2, heads=4, kv_heads=2, seed=seed)
    tok, model = load_tokenizer(out), load_causal_lm(out)
    qa = QAWorkflow(tok)
    # other questions than the pool's (same names, other facts): skill, not memorised answers
    pairs = warm_start_pairs(task_questions("fact_copy", 512, "train", seed + 7), seed, True)
    seqs = [(qa.prompt_ids(q), tok.encode(a, add_special_tokens=False) + [tok.eos_token_id],
             None) for q, a in pairs]
    supervised(model, seqs, steps, 32, tok.pad_token_id, seed)
    model.save_pretrained(out, safe_serialization=True)
    return out


def supervised(model, seqs: list, steps: int, batch: int, pad_id: int, seed: int) -> None:
    """Plain-torch SFT (seconds, one thread) on (prompt ids, output ids, output mask or None):
    the loss is on the masked-in output tokens."""
    import torch

    from training.engines.batching import pack_sequences

    torch.set_num_threads(1)   # OpenMP spinning on a shared, busy machine: many times slower
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        chosen = [seqs[i] for i in torch.randperm(len(seqs), generator=gen)[:batch].tolist()]
        t = pack_sequences([c[0] for c in chosen], [c[1] for c in chosen], pad_id=pad_id,
                           output_masks=[c[2] for c in chosen])
        logits = model(input_ids=t["input_ids"], attention_mask=t["attention_mask"]).logits
        logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, t["input_ids"][:, 1:, None])
        mask = t["loss_mask"][:, 1:].float()
        loss = -(logp[..., 0] * mask).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()


def config(steps: int, n_copy: int, eval_size: int, reband_every: int, seed: int,
           model: Path) -> dict:
    return {
        "steps": steps, "eval_every": steps, "checkpoint_every": steps, "keep_checkpoints": 1,
        "seed": seed,
        "model": {"path": str(model)},
        "data": {"task": "fact_copy", "task_size": n_copy, "seed": seed, "eval_size": eval_size,
                 "band_weights": {"easy": 1.0, "medium": 1.0, "hard": 1.0}},
        "rollout": {"inference": "hf", "batch_size": BATCH, "group_size": GROUP,
                    "max_in_flight": BATCH, "max_staleness": 1, "max_new_tokens": 4,
                    "reward": "strict"},
        "loss": {"ppo_minibatches": 1},
        "engine": {"lr": 0.0005, "micro_batch_size": BATCH},
        "reband": {"reband_every": reband_every, "explore_share": 0.1},
    }


def run(name: str, cfg: dict, work: Path, n_hard: int) -> dict:
    """Train `cfg` with `datagen train` on a fresh pool; the figures of the run."""
    wh_path, run_dir = work / f"wh_{name}", work / name
    build_warehouse(wh_path, cfg["data"]["task_size"], n_hard, cfg["data"]["seed"])
    (work / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "datagen", "train", "--config",
                           str(work / f"{name}.yaml"), "--run-dir", str(run_dir),
                           "--warehouse", str(wh_path)], cwd=ROOT, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        sys.exit(f"{name} run failed:\n{proc.stderr[-3000:]}")
    return {**figures(wh_path, run_dir), "wall_s": time.monotonic() - t0}


def figures(wh_path: Path, run_dir: Path) -> dict:
    import warehouse

    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    with warehouse.open(wh_path, create=False, read_only=True) as wh:
        summary = json.loads(wh.sql("select summary from runs where kind = 'train'")
                             .to_pylist()[0]["summary"])
        hard_groups = wh.sql("select count(*) as n from rollouts r join questions q using "
                             "(question_id) where q.composer = 'bench:loop'").to_pylist()[0]["n"]
        training_rows = wh.sql("select count(*) as n from difficulty where source = "
                               "'training'").to_pylist()[0]["n"]
        bands = {r["band"]: r["n"] for r in wh.sql(
            "select band, count(*) as n from train_ready group by band").to_pylist()}
    finished = (summary.get("groups_accepted", 0) + summary.get("dropped_no_signal", 0)
                + summary.get("dropped_rejected_episode", 0) + summary.get("dropped_late", 0)
                + sum(v for k, v in summary.items() if k.startswith("dropped_failed/")))
    ckpt = max((run_dir / "checkpoints").iterdir(), key=lambda p: int(p.name.split("_")[1]))
    reader = json.loads((ckpt / "trainer_state.json").read_text())["reader"]
    return {"steps": summary["steps"], "no_signal": summary.get("dropped_no_signal", 0),
            "finished": finished, "share": summary.get("dropped_no_signal", 0) / finished,
            "eval_start": rows[0]["eval_reward"], "eval_end": rows[-1]["eval_reward"],
            "epochs": reader["epoch"], "unanswerable_groups": hard_groups // GROUP,
            "training_rows": training_rows, "bands": bands}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller pool, same code path")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--reband-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder")
    args = ap.parse_args(argv)
    n_copy, n_hard = (64, 32) if args.quick else (192, 96)
    steps = args.steps or (26 if args.quick else 80)
    with tempfile.TemporaryDirectory(prefix="bench_loop_") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        model = initial_model(work / "initial_model", n_copy, args.seed)
        without = run("without", config(steps, n_copy, EVAL, 0, args.seed, model), work, n_hard)
        with_ = run("with", config(steps, n_copy, EVAL, args.reband_every, args.seed, model),
                    work, n_hard)
    report(without, with_, n_copy, n_hard)
    return 0


def report(without: dict, with_: dict, n_copy: int, n_hard: int) -> None:
    print(f"pool: {n_copy} learnable + {n_hard} unanswerable questions; groups of {GROUP}, "
          f"batches of {BATCH}; held-out evaluation: {EVAL} questions")
    print(f"{'':16}{'steps':>6}{'epochs':>7}{'finished':>9}{'no_signal':>10}{'share':>7}"
          f"{'unans.grp':>10}{'train_rows':>11}{'eval_start':>11}{'eval_end':>9}{'wall_s':>8}")
    for name, r in (("fixed bands", without), ("re-banded", with_)):
        print(f"{name:16}{r['steps']:6d}{r['epochs']:7d}{r['finished']:9d}{r['no_signal']:10d}"
              f"{r['share']:7.3f}{r['unanswerable_groups']:10d}{r['training_rows']:11d}"
              f"{r['eval_start']:11.3f}{r['eval_end']:9.3f}{r['wall_s']:8.1f}")
    print(f"train_ready bands at the end: fixed {without['bands']}; re-banded {with_['bands']}")
    if min(without["epochs"], with_["epochs"]) < 3:
        print("warning: a run covered fewer than 3 reader epochs (pass more --steps)")
    print(f"RESULT loop no_signal_ratio={with_['share'] / max(without['share'], 1e-9):.3f} "
          f"eval_with={with_['eval_end']:.3f} eval_without={without['eval_end']:.3f} "
          f"share_with={with_['share']:.3f} share_without={without['share']:.3f} "
          f"epochs_with={with_['epochs']} epochs_without={without['epochs']} "
          f"steps={with_['steps']}")


if __name__ == "__main__":
    sys.exit(main())
