"""Adaptive k: sample in rounds, stop a question once its band is decided.

After every round the prior is refitted to the outcomes of this run so far (empirical
Bayes, `GridPrior.fit`), and each question still open gets its band posterior. A question
stops when
- `decided`: one band holds at least `confidence` of the posterior;
- `futile`: sampling up to `lookahead` more attempts is expected to raise the probability
  of choosing the right band by less than `min_gain` per attempt (the question sits on a
  band edge where a few more attempts will not settle it);
- `max_k`: it has had `max_k` attempts.
The band is always the posterior's most probable band (the choice that maximises expected
band accuracy), whatever the reason for stopping. All of it is vectorised over the open
questions of a batch, so a round is one `solver.solve` call.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from difficulty.estimate import ASCENDING, GridPrior, beta_interval, check_thresholds
from difficulty.records import SolverAttempt, BandDecision, JudgedAttempt, Solver, SolverQuestion

# judge(attempt, item) -> (reward, rule)
RewardJudge = Callable[[SolverAttempt, "BandItem"], "tuple[float, str]"]


@dataclass(frozen=True)
class BandItem:
    """A question to band: what the solver sees, plus what only the judge may see."""

    question: SolverQuestion
    answer: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class StoppingRule:
    thresholds: tuple[float, ...]
    confidence: float = 0.95
    max_k: int = 16
    first_round: int = 3
    round_size: int = 2
    lookahead: int = 4
    min_gain: float = 0.01


class AdaptiveBander:
    """Bands batches of questions; keeps the outcomes of finished questions for the prior."""

    def __init__(self, rule: StoppingRule, judge: RewardJudge, grid_points: int = 201):
        check_thresholds(rule.thresholds)
        self.rule = rule
        self.judge = judge
        self.prior = GridPrior.flat(grid_points)
        self._done_n: list[int] = []
        self._done_k: list[int] = []

    def observe(self, n: Sequence[int], k: Sequence[int]) -> None:
        """Count outcomes banded elsewhere (e.g. a resumed run) towards the prior."""
        self._done_n.extend(int(x) for x in n)
        self._done_k.extend(int(x) for x in k)

    def band(self, items: Sequence[BandItem], solver: Solver) -> list[BandDecision]:
        """Run rounds until every item has stopped; one decision per item, in order."""
        q = len(items)
        n, k = np.zeros(q, int), np.zeros(q, int)
        judged: list[list[JudgedAttempt]] = [[] for _ in range(q)]
        reason = np.full(q, "", dtype=object)
        rounds = np.zeros(q, int)
        while (open_ := np.flatnonzero(reason == "")).size:
            size = self.rule.first_round if rounds[open_[0]] == 0 else self.rule.round_size
            size = int(min(size, self.rule.max_k - k[open_].max()))
            self._round([items[i] for i in open_], open_, size, solver, n, k, judged)
            rounds[open_] += 1
            self._fit(n, k)
            reason[open_] = self._stop_reasons(n[open_], k[open_])
        self.observe(n, k)
        probs = self.band_probabilities(n, k)
        return [self._decision(items[i], n[i], k[i], probs[i], rounds[i], reason[i], judged[i])
                for i in range(q)]

    def _round(self, items, idx, size, solver, n, k, judged) -> None:
        qs = [dataclasses.replace(it.question, first_attempt=int(k[i]))
              for it, i in zip(items, idx)]
        results = solver.solve(qs, size)
        for it, i, attempts in zip(items, idx, results):
            for a in attempts:
                reward, rule = self.judge(a, it)
                judged[i].append(JudgedAttempt(a, float(reward), rule))
                n[i] += int(reward >= 1.0)
                k[i] += 1

    def _fit(self, n: np.ndarray, k: np.ndarray) -> None:
        all_n = np.concatenate([np.asarray(self._done_n, int), n])
        all_k = np.concatenate([np.asarray(self._done_k, int), k])
        self.prior = self.prior.fit(all_n, all_k)

    def band_probabilities(self, n: np.ndarray, k: np.ndarray) -> np.ndarray:
        """[questions, 5] band posterior (ASCENDING order) under the current prior."""
        post = self.prior.posterior(n, k)
        return self.prior.band_probabilities(post, self.rule.thresholds)

    def _stop_reasons(self, n: np.ndarray, k: np.ndarray) -> np.ndarray:
        """'' (go on), 'decided', 'futile' or 'max_k' for each open question."""
        post = self.prior.posterior(n, k)
        top = self.prior.band_probabilities(post, self.rule.thresholds).max(axis=1)
        left = self.rule.max_k - k
        horizon = np.minimum(left, self.rule.lookahead)
        gain = np.zeros(len(n))
        for h in np.unique(horizon[horizon > 0]):
            sel = horizon == h
            gain[sel] = (self._lookahead_accuracy(post[sel], int(h)) - top[sel]) / h
        out = np.full(len(n), "", dtype=object)
        out[gain < self.rule.min_gain] = "futile"
        out[top >= self.rule.confidence] = "decided"
        out[left <= 0] = "max_k"
        return out

    def _lookahead_accuracy(self, post: np.ndarray, h: int) -> np.ndarray:
        """E over the next h outcomes of the top band probability afterwards."""
        g = self.prior.grid
        from math import comb
        j = np.arange(h + 1)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            like = np.array([comb(h, x) for x in range(h + 1)])[:, None] * \
                np.where(j > 0, g ** j, 1.0) * np.where(h - j > 0, (1 - g) ** (h - j), 1.0)
        joint = post[:, None, :] * like[None, :, :]           # [q, j, grid]
        idx = np.searchsorted(np.asarray(self.rule.thresholds), g, side="right")
        bands = np.stack([joint[:, :, idx == b].sum(axis=2) for b in range(len(ASCENDING))], 2)
        return bands.max(axis=2).sum(axis=1)

    def _decision(self, item, n, k, probs, rounds, reason, judged) -> BandDecision:
        b = int(np.argmax(probs))
        low, high = beta_interval(int(n), int(k))
        return BandDecision(
            question_id=item.question.question_id, k=int(k), n_correct=int(n),
            pass_rate=float(n / k) if k else 0.0, pass_rate_low=low, pass_rate_high=high,
            band=ASCENDING[b], band_probability=round(float(probs[b]), 4), rounds=int(rounds),
            stop_reason=str(reason),
            band_posterior={ASCENDING[i]: round(float(p), 4) for i, p in enumerate(probs)},
            attempts=tuple(judged))


def decide_counts(rule: StoppingRule, ids: Sequence[str], n: Sequence[int], k: Sequence[int],
                  reason: str, grid_points: int = 201) -> list[BandDecision]:
    """Band questions from counts alone (no more sampling possible, e.g. training rollouts),
    with the prior fitted to these counts: the same band choice as adaptive banding."""
    bander = AdaptiveBander(rule, judge=lambda a, i: (0.0, ""), grid_points=grid_points)
    n_arr, k_arr = np.asarray(n, int), np.asarray(k, int)
    bander._fit(n_arr, k_arr)
    probs = bander.band_probabilities(n_arr, k_arr)
    return [bander._decision(BandItem(SolverQuestion(q, ""), ""), n_arr[i], k_arr[i], probs[i],
                             1, reason, ()) for i, q in enumerate(ids)]
