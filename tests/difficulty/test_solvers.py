"""The embedded solver sees only the question text; the LLM solver on a loopback server."""

from __future__ import annotations

import json

import warehouse
from datagen.tools import PageTools
from difficulty import BandConfig, run_band
from difficulty.records import SolverQuestion
from difficulty.solvers.embedded import EmbeddedSolver, answer_type
from tests.difficulty.conftest import PAGES
from warehouse import Evidence, QuestionRecord, VerdictRecord

QUESTIONS = [
    ("c1", "What is the capital of Zorbia?", "Kelm", 1),
    ("c2", "In what year was Zorbia founded?", "1204", 1),
    ("c3", "Where was the mayor of the capital of Zorbia born?", "Kelm", 2),
    ("c4", "Who founded the university where Ilsa Varn studied?", "Odo Tarn", 2),
]


def _records(blank: bool) -> list[QuestionRecord]:
    return [QuestionRecord(
        question_id=q, question=text, answer="[blank]" if blank else ans,
        answer_aliases=() if blank else (ans.lower(),), hops=1 if blank else hops,
        evidence=() if blank else (Evidence("http://t/zorbia", "The capital of Zorbia is Kelm."),),
        source_urls=() if blank else tuple(PAGES), trace="" if blank else json.dumps({"s": ans}))
        for q, text, ans, hops in QUESTIONS]


def _attempts(root, blank: bool):
    """Attempts for the questions as run_band loads them from the warehouse (the blanked
    answer cannot be judged, so this stops short of judging)."""
    from difficulty.run import load_items
    wh = warehouse.open(root)
    try:
        wh.append(_records(blank))
        items, _ = load_items(wh, BandConfig())
        solver = EmbeddedSolver(PageTools.from_pages(PAGES), name="embedded@test")
        got = solver.solve([it.question for it in items], 6)
    finally:
        wh.close()
    return {a[0].question_id: [(x.index, x.seed, x.response, x.tool_calls) for x in a]
            for a in got}


def test_blanked_answer_hops_evidence_trace_give_identical_attempts(tmp_path):
    full = _attempts(tmp_path / "full", blank=False)
    blank = _attempts(tmp_path / "blank", blank=True)
    assert full == blank and len(full) == len(QUESTIONS)
    assert all(a[3] and a[3][0].startswith("search(") for v in full.values() for a in v)


def test_embedded_solver_answers_one_hop_through_run_band(wh):
    wh.append(_records(blank=False))
    wh.append([VerdictRecord(question_id=q[0], check_name="x", status="pass") for q in QUESTIONS])
    solver = EmbeddedSolver(PageTools.from_pages(PAGES), name="embedded@test")
    s = run_band(wh, BandConfig(first_round=6, max_k=6, plot=False), solver=solver)
    rows = wh.sql("select question_id, n_correct from difficulty").to_pylist()
    correct = {r["question_id"]: r["n_correct"] for r in rows}
    assert s.banded == len(QUESTIONS) and correct["c1"] >= 3 and correct["c2"] >= 3


def test_attempts_differ_by_sampling_and_replay_by_seed():
    tools = PageTools.from_pages(PAGES)
    q = SolverQuestion("c4", QUESTIONS[3][1], run_seed=3)
    a = EmbeddedSolver(tools).solve([q], 12)[0]
    b = EmbeddedSolver(tools).solve([q], 12)[0]
    assert [x.answer for x in a] == [x.answer for x in b]
    assert len({x.answer for x in a}) >= 2  # several candidates, sampled by score


def test_answer_types():
    assert answer_type("In what year was Zorbia founded?") == "year"
    assert answer_type("On what date was Ilsa Varn born?") == "date"
    assert answer_type("How many people live in Kelm?") == "number"
    assert answer_type("The mayor born on 3 May 1950 goes by what name?") == "name"
