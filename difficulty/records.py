"""Records and the solver interface of the difficulty stage (its seam with solvers); no logic.

A solver sees a `SolverQuestion` (the question text and ids, never the answer, aliases,
hops, evidence or trace) and returns unjudged `SolverAttempt`s; difficulty judges each attempt
with the RL reward and turns the outcomes into a `BandDecision`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from warehouse.schema import BANDS  # the bands a difficulty row may hold: one list

__all__ = ["BANDS", "SolverQuestion", "SolverAttempt", "JudgedAttempt", "Solver",
           "BandDecision", "BandSummary"]


@dataclass(frozen=True)
class SolverQuestion:
    """What a solver may see. `first_attempt` numbers the next attempt for this question, so
    round r of adaptive sampling continues the seed sequence of round r-1."""

    question_id: str
    question: str
    run_seed: int = 0
    first_attempt: int = 0


@dataclass(frozen=True)
class SolverAttempt:
    """One unjudged solver attempt: the full response, the extracted answer, what it did."""

    question_id: str
    index: int                      # attempt index for this question (seed derivation)
    seed: int
    response: str                   # the text the reward judges
    answer: str = ""                # the solver's own final answer, for audit
    tool_calls: tuple[str, ...] = ()
    error: str = ""                 # non-empty: the attempt failed (reason code); judged wrong


@dataclass(frozen=True)
class JudgedAttempt:
    attempt: SolverAttempt
    reward: float
    rule: str


class Solver(ABC):
    """`questions, k -> attempts`: k attempts for every question, in question order.

    Every solver subclasses this: the hooks the band run calls have defaults here (nothing
    to do), so a solver overrides what it has and the run never probes for a name."""

    name: str = ""
    replayable: bool = False  # attempt i depends only on the question and i (difficulty.prefetch)

    @abstractmethod
    def solve(self, questions: Sequence[SolverQuestion], k: int) -> list[list[SolverAttempt]]: ...

    @property
    def invocation(self) -> str:
        """The name the rerun key uses (the row's `name` by default)."""
        return self.name

    def bind_run(self, run_id: str) -> None:
        """Account what follows (model calls) to this band run."""

    def warm(self) -> None:
        """Read what the solver needs before worker processes fork (replayable solvers)."""

    def close(self) -> None:
        """Release what the solver holds (a client, an engine); called once at the end."""


@dataclass(frozen=True)
class BandDecision:
    """The outcome of banding one question: counts, estimate, band and why it stopped."""

    question_id: str
    k: int
    n_correct: int
    pass_rate: float                # n_correct / k
    pass_rate_low: float            # Beta (Jeffreys) credible interval
    pass_rate_high: float
    band: str
    band_probability: float         # posterior probability of the chosen band
    rounds: int
    stop_reason: str                # decided | futile | max_k
    band_posterior: dict[str, float] = field(default_factory=dict)
    attempts: tuple[JudgedAttempt, ...] = ()


@dataclass
class BandSummary:
    """What `run_band` did, counted; `.as_dict()` for flows and the CLI."""

    run_id: str = ""
    solver: str = ""
    questions: int = 0
    banded: int = 0
    skipped_already_banded: int = 0
    attempts: int = 0
    failed_attempts: int = 0
    batches: int = 0
    by_band: dict[str, int] = field(default_factory=dict)
    by_band_hops: dict[str, dict[str, int]] = field(default_factory=dict)
    mean_pass_rate_by_hops: dict[str, float] = field(default_factory=dict)
    stop_reasons: dict[str, int] = field(default_factory=dict)
    plot_path: str = ""

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict
        return asdict(self)
