"""Pass-rate estimates with uncertainty, bands by thresholds, and the empirical-Bayes prior.

Two estimates, each for what it is good at:
- `beta_interval(n, k)`: the Jeffreys Beta(n + 1/2, k - n + 1/2) posterior's equal-tailed
  interval, a per-question statement that needs nothing but the question's own counts
  (stored as pass_rate_low/high);
- `GridPrior`: a prior over the pass rate on a grid that includes exactly 0 and 1, fitted
  to the run's own outcomes by EM (the nonparametric maximum-likelihood prior of
  Kiefer-Wolfowitz). Its posterior gives each question's band probabilities, from which
  the band is chosen and the adaptive rule decides whether to sample more. Real question
  sets have many questions a solver never or always answers; a grid with point masses
  learns that from the data instead of being told.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from difficulty.records import BANDS

# Lower edges of too_hard..too_easy on the pass rate: band = the last edge <= p.
# Pinned defaults; written into the run config and the dataset card.
DEFAULT_THRESHOLDS = (0.1, 0.4, 0.7, 0.9)  # hard >= 0.1, medium >= 0.4, easy >= 0.7, too_easy >= 0.9
ASCENDING = tuple(reversed(BANDS))          # too_hard, hard, medium, easy, too_easy


def check_thresholds(thresholds: Sequence[float]) -> tuple[float, ...]:
    """Four strictly increasing cut points inside (0, 1]; raise ValueError saying how to fix."""
    t = tuple(float(x) for x in thresholds)
    if len(t) != 4 or not all(0 <= a < b <= 1 for a, b in zip((0.0,) + t, t)):
        raise ValueError(f"band thresholds must be 4 increasing numbers in (0, 1], e.g. "
                         f"{list(DEFAULT_THRESHOLDS)} (hard, medium, easy, too_easy lower edges); "
                         f"got {list(t)}")
    return t


def band_of(p: float, thresholds: Sequence[float] = DEFAULT_THRESHOLDS) -> str:
    """The band whose [lower, upper) pass-rate interval holds p (too_easy includes 1)."""
    return ASCENDING[int(np.searchsorted(np.asarray(thresholds), p, side="right"))]


def band_index(p: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
    """Vectorised band_of as indices into ASCENDING."""
    return np.searchsorted(np.asarray(thresholds), p, side="right")


@lru_cache(maxsize=4096)
def beta_interval(n: int, k: int, level: float = 0.9) -> tuple[float, float]:
    """Equal-tailed Jeffreys interval (numeric CDF on a fine grid: numpy only, ~1e-4 exact);
    the ends are clamped to 0 / 1 when n is 0 / k, as Brown, Cai and DasGupta advise."""
    if k <= 0:
        return 0.0, 1.0
    x = np.linspace(0.0, 1.0, 20001)[1:-1]
    logd = (n - 0.5) * np.log(x) + (k - n - 0.5) * np.log1p(-x)
    cdf = np.cumsum(np.exp(logd - logd.max()))
    cdf /= cdf[-1]
    tail = (1 - level) / 2
    low = 0.0 if n == 0 else float(x[np.searchsorted(cdf, tail)])
    high = 1.0 if n == k else float(x[min(np.searchsorted(cdf, 1 - tail), len(x) - 1)])
    return round(low, 4), round(high, 4)


@dataclass
class GridPrior:
    """A discrete prior on a pass-rate grid; `fit` is EM on the binomial likelihood."""

    grid: np.ndarray
    weights: np.ndarray
    kernel: float = 3.0   # EMS smoothing of the interior, in grid steps (0 = plain EM)

    @classmethod
    def flat(cls, points: int = 201) -> "GridPrior":
        grid = np.linspace(0.0, 1.0, points)
        return cls(grid, np.full(points, 1.0 / points))

    def log_likelihood(self, n: np.ndarray, k: np.ndarray) -> np.ndarray:
        """[questions, grid] log p^n (1-p)^(k-n), with 0^0 = 1 at the grid's ends."""
        n = np.asarray(n, float)[:, None]
        f = np.asarray(k, float)[:, None] - n
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = np.where(n > 0, n * np.log(self.grid), 0.0)
            lq = np.where(f > 0, f * np.log1p(-self.grid), 0.0)
        return lp + lq

    def posterior(self, n: np.ndarray, k: np.ndarray) -> np.ndarray:
        """[questions, grid] posterior weights."""
        with np.errstate(divide="ignore"):
            logw = self.log_likelihood(n, k) + np.log(self.weights)
        logw -= logw.max(axis=1, keepdims=True)
        w = np.exp(logw)
        return w / w.sum(axis=1, keepdims=True)

    def fit(self, n: np.ndarray, k: np.ndarray, iters: int = 300, smoothing: float = 1.0,
            tol: float = 1e-6) -> "GridPrior":
        """EM towards the maximum-likelihood prior for these outcomes, warm-started from this
        prior. Outcomes are grouped by distinct (n, k) first (few with k <= max_k), so a fit
        costs the same for 100 or 100,000 questions. `smoothing` adds that many
        pseudo-questions spread evenly over the grid, so a small run keeps a broad prior."""
        pairs, counts = np.unique(np.stack([np.asarray(n, int), np.asarray(k, int)], 1),
                                  axis=0, return_counts=True)
        like = np.exp(self.log_likelihood(pairs[:, 0], pairs[:, 1]))
        w = self.weights.copy()
        flat = np.full_like(w, 1.0 / len(w))
        total = counts.sum()
        for _ in range(iters):
            post = like * w
            post /= post.sum(axis=1, keepdims=True)
            new = _smooth_interior((counts @ post + smoothing * flat) / (total + smoothing),
                                   self.kernel)
            done = np.abs(new - w).max() < tol
            w = new
            if done:
                break
        return GridPrior(self.grid, w, self.kernel)

    def band_probabilities(self, post: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
        """[questions, 5] posterior mass of each band, in ASCENDING order."""
        idx = band_index(self.grid, thresholds)
        out = np.zeros((post.shape[0], len(ASCENDING)))
        for b in range(len(ASCENDING)):
            out[:, b] = post[:, idx == b].sum(axis=1)
        return out


def _smooth_interior(w: np.ndarray, width: float) -> np.ndarray:
    """The S step of EMS (Silverman et al. 1990): a Gaussian blur of the interior weights.
    Plain EM piles the mass of 'never solved' onto the smallest interior grid points as
    readily as onto 0 (a few attempts cannot tell them apart), which then drags one-success
    questions into too_hard; the blur keeps the interior smooth and the ends as point masses."""
    if width <= 0:
        return w
    inner = w[1:-1]
    x = np.arange(-int(3 * width), int(3 * width) + 1)
    kern = np.exp(-0.5 * (x / width) ** 2)
    mass = np.convolve(np.ones_like(inner), kern, mode="same")
    out = w.copy()
    out[1:-1] = np.convolve(inner, kern, mode="same") / mass
    out[1:-1] *= inner.sum() / out[1:-1].sum()
    return out
