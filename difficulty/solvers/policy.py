"""PolicySolver: a trainer checkpoint as a solver, behind a plain generate callable.

`difficulty` never imports `training`: the CLI builds `generate` from training's inference
engine and hands it in. `generate(prompts, n, seeds) -> list[list[str]]` returns n
completions per prompt; seeds are the attempt seeds of each prompt's n attempts.
"""

from __future__ import annotations

from typing import Callable, Sequence

from difficulty.records import SolverAttempt, Solver, SolverQuestion
from difficulty.solvers.base import attempt_seed

Generate = Callable[[list[str], int, list[list[int]]], list[list[str]]]


class PolicySolver(Solver):
    """`questions, k -> attempts` from a policy's completions (see the module docstring)."""

    def __init__(self, generate: Generate, name: str, close: Callable[[], None] | None = None):
        self.generate = generate
        self.name = name  # policy:<run>@v<N>
        self._close = close

    def close(self) -> None:
        """Stop what serves `generate` (the CLI's inference engine), if anything."""
        if self._close is not None:
            self._close()

    def solve(self, questions: Sequence[SolverQuestion], k: int) -> list[list[SolverAttempt]]:
        seeds = [[attempt_seed(q.question_id, q.run_seed, q.first_attempt + j) for j in range(k)]
                 for q in questions]
        texts = self.generate([q.question for q in questions], k, seeds)
        return [[SolverAttempt(q.question_id, q.first_attempt + j, s[j], t[j] if j < len(t) else "",
                         "", (), "" if j < len(t) else "no_completion") for j in range(k)]
                for q, s, t in zip(questions, seeds, texts)]
