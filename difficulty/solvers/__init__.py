"""Solvers: `questions, k -> attempts` (see difficulty.records.Solver).

    base.py      attempt seeds from (question id, run seed, attempt index)
    embedded.py  EmbeddedSolver: search/open over the stored pages, no model
    llm.py       LLMSolver: n samples per call through datagen.llm
    policy.py    PolicySolver: a trainer checkpoint behind a generate callable (built by the CLI)
"""

from difficulty.solvers.base import attempt_seed

__all__ = ["attempt_seed"]
