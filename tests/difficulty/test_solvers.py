"""The embedded solver sees only the question text; the LLM solver on a loopback server."""

from __future__ import annotations

import json

import warehouse
from datagen.tools import PageTools
from difficulty import BandConfig, run_band
from difficulty.records import SolverQuestion
from difficulty.solvers.embedded import EmbeddedSolver, asked_answer_type
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
    assert asked_answer_type("In what year was Zorbia founded?") == "year"
    assert asked_answer_type("On what date was Ilsa Varn born?") == "date"
    assert asked_answer_type("How many people live in Kelm?") == "number"
    assert asked_answer_type("The mayor born on 3 May 1950 goes by what name?") == "name"
    assert asked_answer_type("Was the mayor of Kelm born before Ilsa Varn?") == "yes_no"
    assert asked_answer_type("Was Kelm founded in which year?") == "year"


def test_a_yes_no_question_gets_no_answer_not_a_guess():
    """The solver cannot weigh two pages' dates: it offers no answer, rather than a coin's
    half right, so such a question bands too_hard to it."""
    tools = PageTools.from_pages(PAGES)
    q = SolverQuestion("yn", "Was the capital of Zorbia founded before Kelm?", run_seed=0)
    attempts = EmbeddedSolver(tools).solve([q], 4)[0]
    assert [(a.answer, a.error) for a in attempts] == [("", "no_candidate")] * 4


def _scripted(body):
    """Right for the capital question on 2 of 3 choices; 'Paris' otherwise."""
    text = body["messages"][-1]["content"]
    n = body.get("n", 1)
    if "capital of Zorbia" in text:
        return [("Answer: Kelm" if i % 3 else "Answer: Paris") for i in range(n)]
    return ["I think... Answer: Paris"] * n


def test_llm_solver_and_no_tool_check_on_a_loopback_server(tmp_path, capsys):
    from datagen.cli import main
    from tests.llm.loopback import LoopbackLLM
    from tests.difficulty.test_cli_demo import _small_world
    root = tmp_path / "wh"
    _small_world(root)
    with LoopbackLLM(_scripted, models=("scripted",)) as server:
        code = main(["band", "-w", str(root), "--solver", "llm", "--endpoint", server.base_url,
                     "--model", "scripted", "--max-k", "6", "--no-tool-check"])
        bodies = list(server.requests)
    assert code == 0, capsys.readouterr().err
    wh = warehouse.open(root, read_only=True)
    try:
        verdicts = {r["question_id"]: r["status"] for r in wh.sql(
            "select question_id, status from verdicts where check_name = 'no_tool_solvable'"
        ).to_pylist()}
        rows = wh.sql("select question_id, solver, k, n_correct from difficulty").to_pylist()
        calls = wh.scalar("select count(*) from llm_calls")
        band_calls = wh.scalar("select count(*) from llm_calls l join runs r using (run_id) "
                               "where r.kind = 'band'")
    finally:
        wh.close()
    # c1 and c3 (which ends on the same page) are answered without tools
    assert verdicts == {"c1": "fail", "c2": "pass", "c3": "fail", "c4": "pass"}
    assert {r["question_id"] for r in rows} == {"c2", "c4"}  # failing questions not banded
    assert all(r["solver"] == "llm:scripted" and r["n_correct"] == 0 for r in rows)
    assert any(b.get("n", 1) > 1 for b in bodies) and calls >= len(bodies) - 1
    assert band_calls > 0  # the band run's calls carry its run id
    assert any("Search results" in b["messages"][-1]["content"] for b in bodies)


def test_policy_solver_seam_and_name(tmp_path):
    from training.evaluation.policies import policy_name
    from difficulty.solvers.policy import PolicySolver
    seen = []

    def generate(prompts, n, seeds):
        seen.append((prompts, n, seeds))
        return [[f"Answer: {p[-5:]}"] * n for p in prompts]

    s = PolicySolver(generate, "policy:run7@v3")
    out = s.solve([SolverQuestion("a", "What is the capital of Zorbia?", first_attempt=2)], 3)
    assert [x.index for x in out[0]] == [2, 3, 4]
    assert seen[0][0] == ["What is the capital of Zorbia?"]
    assert [x.seed for x in out[0]] == seen[0][2][0]
    (tmp_path / "run7" / "weights" / "v3").mkdir(parents=True)
    assert policy_name(tmp_path / "run7" / "weights" / "v3") == "policy:run7@v3"


def test_policy_solver_prompts_a_page_bpe_checkpoint_with_its_own_tokenizer(tmp_path,
                                                                             monkeypatch):
    """`datagen band --solver policy:` builds its prompts with the checkpoint's tokenizer (a
    page BPE cutting numbers into digit pairs), not AutoTokenizer's Qwen2 pre-tokenizer,
    which cut "1912" otherwise and so fed the policy ids it was never trained on."""
    from transformers import AutoTokenizer

    from tests.training.test_word_tokenizer import PAGES
    from training.engines.hf_engine import HFInferenceEngine
    from training.models import build_tiny_model, load_tokenizer
    from training.search_env.chat import prompt_ids
    from training.evaluation.policies import policy_solver

    path = build_tiny_model(tmp_path / "run" / "weights" / "v2", vocab_size=500, hidden=64,
                            heads=2, kv_heads=1, layers=1, bpe_texts=PAGES * 20, digit_group=2)
    question = "Which bridge opened in 1912?"
    own = prompt_ids(load_tokenizer(path), question)
    assert own != prompt_ids(AutoTokenizer.from_pretrained(str(path)), question)
    assert "19" in load_tokenizer(path).convert_ids_to_tokens(own)
    sent = []
    real = HFInferenceEngine.generate
    monkeypatch.setattr(HFInferenceEngine, "generate",
                        lambda self, reqs: sent.extend(reqs) or real(self, reqs))
    solver = policy_solver(path, max_new_tokens=4)
    try:
        out = solver.solve([SolverQuestion("q1", question)], 2)
    finally:
        solver.close()
    assert [r.prompt_ids for r in sent] == [own, own]
    assert solver.name == "policy:run@v2" and len(out[0]) == 2
