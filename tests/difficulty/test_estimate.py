"""Estimates, bands and the adaptive stopping rule on known attempts (no warehouse, no tools)."""

from __future__ import annotations

import numpy as np
import pytest

from difficulty import BandConfig, band_of, beta_interval
from difficulty.adaptive import AdaptiveBander, BandItem
from difficulty.estimate import GridPrior, check_thresholds
from difficulty.records import SolverAttempt, Solver, SolverQuestion
from difficulty.solvers.base import attempt_seed


@pytest.mark.parametrize("p,band", [(0.0, "too_hard"), (0.099, "too_hard"), (0.1, "hard"),
                                    (0.39, "hard"), (0.4, "medium"), (0.7, "easy"),
                                    (0.9, "too_easy"), (1.0, "too_easy")])
def test_band_of_default_thresholds(p, band):
    assert band_of(p) == band


def test_thresholds_validated_with_a_fix():
    with pytest.raises(ValueError, match="increasing"):
        check_thresholds((0.4, 0.1, 0.7, 0.9))
    with pytest.raises(ValueError):
        BandConfig(thresholds=(0.1, 0.4, 0.7, 1.2))
    with pytest.raises(ValueError):
        BandConfig(bogus=1)


@pytest.mark.parametrize("n,k", [(0, 4), (3, 8), (8, 8), (1, 16), (5, 10)])
def test_beta_interval_holds_the_rate_and_narrows(n, k):
    low, high = beta_interval(n, k)
    assert low <= n / k <= high
    assert (low == 0.0) == (n == 0) and (high == 1.0) == (n == k)
    wider = beta_interval(n, k, level=0.99)
    assert wider[0] <= low and wider[1] >= high
    more = beta_interval(4 * n, 4 * k)
    assert more[1] - more[0] < high - low


def test_beta_interval_matches_jeffreys_quantiles():
    # Beta(3.5, 5.5) 5% / 95% quantiles (reference values from scipy.stats.beta.ppf)
    low, high = beta_interval(3, 8)
    assert low == pytest.approx(0.1501, abs=2e-3) and high == pytest.approx(0.6572, abs=2e-3)


def test_grid_prior_learns_point_masses():
    n = np.array([0] * 60 + [6] * 30 + [3] * 10)
    k = np.full(100, 6)
    prior = GridPrior.flat().fit(n, k)
    assert prior.weights[0] > 0.4 and prior.weights[-1] > 0.2
    assert prior.weights.sum() == pytest.approx(1.0)


class ScriptedSolver(Solver):
    """Answers right for the ids in `right`, wrong otherwise; counts calls."""

    name = "scripted"

    def __init__(self, rates):
        self.rates = rates
        self.calls = 0

    def solve(self, questions, k):
        self.calls += sum(k for _ in questions)
        out = []
        for q in questions:
            row = []
            for i in range(q.first_attempt, q.first_attempt + k):
                s = attempt_seed(q.question_id, q.run_seed, i)
                row.append(SolverAttempt(q.question_id, i, s,
                                   "yes" if s / 2.0**63 < self.rates[q.question_id] else "no"))
            out.append(row)
        return out


def judge(a, item):
    return float(a.response == item.answer), "exact"


def _items(rates):
    return [BandItem(SolverQuestion(q, f"text {q}"), "yes") for q in rates]


def test_adaptive_stops_early_on_all_right_and_all_wrong():
    rng = np.random.default_rng(1)
    rates = {f"z{i}": 0.0 for i in range(40)} | {f"o{i}": 1.0 for i in range(20)} | \
        {f"u{i}": float(rng.uniform(0.2, 0.8)) for i in range(40)}
    cfg = BandConfig()
    bander = AdaptiveBander(cfg.stopping_rule(), judge)
    out = {d.question_id: d for d in bander.band(_items(rates), ScriptedSolver(rates))}
    ks_extreme = [d.k for q, d in out.items() if q[0] in "zo"]
    ks_mid = [d.k for q, d in out.items() if q[0] == "u"]
    assert max(ks_extreme) < cfg.max_k and np.mean(ks_extreme) < np.mean(ks_mid)
    assert all(out[q].band == "too_hard" for q in rates if q[0] == "z")
    assert all(out[q].band == "too_easy" for q in rates if q[0] == "o")
    assert all(len(d.attempts) == d.k and d.stop_reason for d in out.values())
    assert [a.attempt.index for a in out["u0"].attempts] == list(range(out["u0"].k))


def test_fixed_k_is_one_round_and_seeds_are_reproducible():
    rates = {f"u{i}": 0.5 for i in range(10)}
    cfg = BandConfig(first_round=6, max_k=6)
    a = AdaptiveBander(cfg.stopping_rule(), judge).band(_items(rates), ScriptedSolver(rates))
    b = AdaptiveBander(cfg.stopping_rule(), judge).band(_items(rates), ScriptedSolver(rates))
    assert all(d.k == 6 and d.rounds == 1 for d in a)
    assert [d.n_correct for d in a] == [d.n_correct for d in b]
    assert attempt_seed("q", 0, 1) != attempt_seed("q", 0, 2) != attempt_seed("q", 1, 1)
