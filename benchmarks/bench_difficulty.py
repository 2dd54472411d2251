"""Benchmark adaptive k against fixed k: solver calls per question vs band accuracy.

    python benchmarks/bench_difficulty.py [--quick] [--n 10000] [--plot PATH]

A synthetic population (fixed seeds) whose true pass rates are 40 % exactly 0, 20 % exactly
1 and 40 % uniform on (0, 1); a simulated solver answers right with the true rate, one
deterministic draw per (question id, run seed, attempt index) — the seeds production
solvers use. Every configuration runs through the production code: the Solver protocol,
`AdaptiveBander` (rounds, empirical-Bayes prior, stopping rule, band choice) with
`BandConfig()`'s shipped thresholds, confidence and max k, in `BandConfig().batch_size`
batches. Fixed k is the same code with one round of k attempts (first_round = max_k = k),
so the band decision is the same posterior rule; the naive n/k banding is printed beside it.
The judge is exact match (the reward on the words "right"/"wrong" would say the same, slower).
The last line is ``RESULT difficulty ...``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from difficulty import BandConfig  # noqa: E402
from difficulty.adaptive import AdaptiveBander, BandItem  # noqa: E402
from difficulty.estimate import band_of  # noqa: E402
from difficulty.records import SolverAttempt, Solver, SolverQuestion  # noqa: E402
from difficulty.solvers.base import attempt_seed  # noqa: E402

FIXED_K = (4, 6, 8, 12, 16)
REPO = Path(__file__).resolve().parent.parent


class SimulatedSolver(Solver):
    """Right with the question's true rate: uniform draw = the attempt seed / 2^63."""

    name = "simulated"

    def __init__(self, rates: dict[str, float]):
        self.rates = rates

    def solve(self, questions, k):
        out = []
        for q in questions:
            row = []
            for i in range(q.first_attempt, q.first_attempt + k):
                seed = attempt_seed(q.question_id, q.run_seed, i)
                right = seed / 2.0**63 < self.rates[q.question_id]
                row.append(SolverAttempt(q.question_id, i, seed, "right" if right else "wrong"))
            out.append(row)
        return out


def exact_judge(attempt, item) -> tuple[float, str]:
    return float(attempt.response == item.answer), "exact"


def population(n: int, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    n0, n1 = int(0.4 * n), int(0.2 * n)
    rates = np.concatenate([np.zeros(n0), np.ones(n1), rng.uniform(0, 1, n - n0 - n1)])
    rng.shuffle(rates)
    return {f"q{i:06d}": float(p) for i, p in enumerate(rates)}


def run(rates: dict[str, float], cfg: BandConfig) -> tuple[list, float]:
    bander = AdaptiveBander(cfg.stopping_rule(), exact_judge)
    solver = SimulatedSolver(rates)
    items = [BandItem(SolverQuestion(q, f"question {q}", run_seed=cfg.seed), "right")
             for q in rates]
    t0 = time.perf_counter()
    decisions = []
    for s in range(0, len(items), cfg.batch_size):
        decisions += bander.band(items[s:s + cfg.batch_size], solver)
    return decisions, time.perf_counter() - t0


def score(decisions, rates, thresholds) -> dict[str, float]:
    truth = np.array([band_of(rates[d.question_id], thresholds) for d in decisions])
    got = np.array([d.band for d in decisions])
    naive = np.array([band_of(d.pass_rate, thresholds) for d in decisions])
    uni = np.array([0 < rates[d.question_id] < 1 for d in decisions])
    return {"calls": float(np.mean([d.k for d in decisions])),
            "acc": float(np.mean(got == truth)), "acc_uniform": float(np.mean((got == truth)[uni])),
            "acc_naive": float(np.mean(naive == truth)),
            "acc_naive_uniform": float(np.mean((naive == truth)[uni])),
            "calls_uniform": float(np.mean([d.k for d, u in zip(decisions, uni) if u]))}


def plot(rows: dict[str, dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    fixed = [rows[f"fixed-{k}"] for k in FIXED_K]
    ax.plot([r["calls"] for r in fixed], [r["acc"] for r in fixed], "o-", label="fixed k")
    for k, r in zip(FIXED_K, fixed):
        ax.annotate(f"k={k}", (r["calls"], r["acc"]), textcoords="offset points", xytext=(4, -10))
    a = rows["adaptive"]
    ax.plot([a["calls"]], [a["acc"]], "r*", markersize=14, label="adaptive")
    ax.set_xlabel("solver calls per question")
    ax.set_ylabel("band accuracy")
    ax.set_title("difficulty: calls vs band accuracy")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="same population size; skips nothing "
                    "(the whole benchmark takes well under a minute)")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--plot", type=Path, default=REPO / "difficulty" / "docs" / "bench_frontier.png")
    args = ap.parse_args()
    base = BandConfig()
    rates = population(args.n)
    rows: dict[str, dict] = {}
    configs = {f"fixed-{k}": base.model_copy(update={"first_round": k, "max_k": k})
               for k in FIXED_K}
    configs["adaptive"] = base
    print(f"population: {args.n} questions; thresholds {list(base.thresholds)}, confidence "
          f"{base.confidence}, max_k {base.max_k}, rounds {base.first_round}+{base.round_size}...")
    print(f"\n{'config':<10} {'calls/q':>8} {'calls/q(unif)':>14} {'accuracy':>9} "
          f"{'acc(unif)':>10} {'acc(n/k)':>9} {'n/k(unif)':>10} {'seconds':>8}")
    for name, cfg in configs.items():
        decisions, secs = run(rates, cfg)
        r = rows[name] = score(decisions, rates, base.thresholds)
        print(f"{name:<10} {r['calls']:>8.2f} {r['calls_uniform']:>14.2f} {r['acc']:>9.4f} "
              f"{r['acc_uniform']:>10.4f} {r['acc_naive']:>9.4f} {r['acc_naive_uniform']:>10.4f} "
              f"{secs:>8.1f}")
    plot(rows, args.plot)
    print(f"\nfrontier plot: {args.plot}")
    f8, ad = rows["fixed-8"], rows["adaptive"]
    print(f"RESULT difficulty calls_ratio={ad['calls'] / f8['calls']:.4f} "
          f"accuracy_ratio={ad['acc'] / f8['acc']:.4f} "
          f"accuracy_ratio_uniform={ad['acc_uniform'] / f8['acc_uniform']:.4f} "
          f"accuracy_fixed8={f8['acc']:.4f} accuracy_adaptive={ad['acc']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
