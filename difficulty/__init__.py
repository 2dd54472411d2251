"""difficulty: solver attempts -> pass rates with uncertainty -> bands, adaptively.

See difficulty/README.md for the file tree.
"""

from difficulty.config import BandConfig
from difficulty.estimate import DEFAULT_THRESHOLDS, band_of, beta_interval
from difficulty.run import run_band
from difficulty.records import (
    BANDS, SolverAttempt, BandDecision, BandSummary, JudgedAttempt, Solver, SolverQuestion,
)

__all__ = [
    "run_band", "BandConfig", "DEFAULT_THRESHOLDS", "band_of", "beta_interval",
    "BANDS", "SolverAttempt", "BandDecision", "BandSummary", "JudgedAttempt", "Solver",
    "SolverQuestion",
]
