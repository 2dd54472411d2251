"""Small worlds for the difficulty tests: a few pages, questions about them, scripted solvers."""

from __future__ import annotations

import pytest

from difficulty.records import SolverAttempt, Solver
from difficulty.solvers.base import attempt_seed

PAGES = {
    "http://t/zorbia": ("Zorbia", "Zorbia\nZorbia is a country. The capital of Zorbia is Kelm. "
                        "Zorbia was founded in 1204. The currency of Zorbia is the florin."),
    "http://t/kelm": ("Kelm", "Kelm\nKelm is a city in Zorbia. Kelm has a population of 40,000. "
                      "The mayor Ilsa Varn was born in Kelm."),
    "http://t/ilsa": ("Ilsa Varn", "Ilsa Varn\n| Born | 3 May 1950 |\n| Occupation | mayor |\n"
                      "Ilsa Varn was born in Kelm. Ilsa Varn studied at Tarn University."),
    "http://t/tarn": ("Tarn University", "Tarn University\nTarn University was founded in 1702 "
                      "by Odo Tarn. It lies in Vellmark."),
}


class RateSolver(Solver):
    """Right with a fixed rate per question (a deterministic draw per attempt seed)."""

    name = "rate"

    def __init__(self, rates: dict[str, float], fail_on: str | None = None):
        self.rates, self.fail_on = rates, fail_on

    def solve(self, questions, k):
        if self.fail_on and any(q.question_id == self.fail_on for q in questions):
            raise RuntimeError("solver crashed")
        out = []
        for q in questions:
            row = []
            for i in range(q.first_attempt, q.first_attempt + k):
                s = attempt_seed(q.question_id, q.run_seed, i)
                ok = s / 2.0**63 < self.rates.get(q.question_id, 0.0)
                row.append(SolverAttempt(q.question_id, i, s, "Answer: gold" if ok else "Answer: nope",
                                   "gold" if ok else "nope"))
            out.append(row)
        return out


def add_questions(wh, rates: dict[str, float], hops: int = 1, verdict: str | None = "pass"):
    from warehouse import QuestionRecord, VerdictRecord
    qs = [QuestionRecord(question_id=q, question=f"What is item {q}?", answer="gold", hops=hops)
          for q in rates]
    wh.append(qs)
    if verdict:
        wh.append([VerdictRecord(question_id=q, check_name="quality", status=verdict)
                   for q in rates])


@pytest.fixture
def rates():
    return {f"q{i:03d}": (0.0 if i % 3 == 0 else 1.0 if i % 3 == 1 else 0.5) for i in range(30)}
