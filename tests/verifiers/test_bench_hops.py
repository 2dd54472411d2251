"""benchmarks/bench_hops.py on a hand-built warehouse: each of its checks (pages, bridged,
hidden) fails the question built to fail it, the shortcut share is the shortcut check's, and
the train-ready questions are measured apart."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from warehouse import DifficultyRecord, VerdictRecord

from .conftest import make_page, make_question

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_hops.py"
PAGES = {
    "a": ("Orlan Vesk", "Orlan Vesk is a painter. Vesk studied at the Marlow Academy. "
                        "Vesk was born in Dunmere."),
    "b": ("Marlow Academy", "The Marlow Academy is a school founded in 1821. Its first head "
                            "was Quenby Harrow."),
    "c": ("Tessaly", "Tessaly is a river valley with vineyards."),
    "d": ("Quenby Harrow", "Quenby Harrow was a teacher who died in 1850."),
    "e": ("Dunmere (town)", "Dunmere is a harbour town. Its lighthouse was lit in 1790."),
}


def url(key: str) -> str:
    return f"https://site.test/{key}"


def question(qid, text, answer, hops, *evidence):
    """A stored question with `hops` and its (page key, quote) evidence in chain order."""
    return replace(make_question(qid, text, answer, evidence=[(url(k), q) for k, q in evidence]),
                   hops=hops)


QUESTIONS = [
    question("good", "In what year was the place where Orlan Vesk studied opened?", "1821", 2,
             ("a", "Vesk studied at the Marlow Academy"), ("b", "founded in 1821")),
    question("disamb", "When was the lighthouse of the painter's birthplace lit?", "1790", 2,
             ("a", "Vesk was born in Dunmere"), ("e", "Its lighthouse was lit in 1790")),
    question("one_page", "Where was the painter Orlan Vesk born?", "Dunmere", 2,
             ("a", "Orlan Vesk is a painter"), ("a", "Vesk was born in Dunmere")),
    question("unbridged", "What grows in the valley near the painter's town?", "vineyards", 2,
             ("a", "Orlan Vesk is a painter"), ("c", "Tessaly is a river valley with vineyards")),
    question("named_bridge", "When did the first head of the Marlow Academy die?", "1850", 3,
             ("a", "Vesk studied at the Marlow Academy"),
             ("b", "Its first head was Quenby Harrow"), ("d", "died in 1850")),
    question("seed", "Where was Orlan Vesk born?", "Dunmere", 1,
             ("a", "Vesk was born in Dunmere")),
]


@pytest.fixture
def bench():
    spec = importlib.util.spec_from_file_location("bench_hops", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_hops"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def hops_wh(wh):
    wh.append([make_page(url(k), t, x) for k, (t, x) in PAGES.items()], run_id="crawl")
    wh.append(QUESTIONS, run_id="compose")
    ready = ("good", "named_bridge")
    wh.append([VerdictRecord(question_id=q, check_name="grounded", status="pass") for q in ready],
              run_id="verify")
    wh.append([DifficultyRecord(question_id=q, solver="s", k=4, n_correct=2, pass_rate=0.5,
                                band="medium") for q in ready], run_id="band")
    return wh


def test_each_check_fails_the_question_built_to_fail_it(bench, hops_wh):
    questions, verdicts = bench.measure(hops_wh)
    got = {q.question_id: (v.pages, v.bridged, v.hidden, v.passes)
           for q, v in zip(questions, verdicts)}
    assert got == {"good": (True, True, True, True),
                   "disamb": (True, True, True, True),  # "Dunmere (town)" named as Dunmere
                   "one_page": (False, True, True, False),
                   "unbridged": (True, False, True, False),
                   "named_bridge": (True, True, False, False)}


def test_the_shortcut_share_is_the_shortcut_checks(bench, hops_wh):
    from verifiers.shortcut import shortcut_flags
    from warehouse import QuestionRecord, StoredPages
    questions, verdicts = bench.measure(hops_wh)
    stored = {q.question_id: q for q in hops_wh.read(QuestionRecord)}
    flags = shortcut_flags(StoredPages.of(hops_wh), [stored[q.question_id] for q in questions])
    assert [v.shortcut for v in verdicts] == flags
    assert {q.question_id for q, v in zip(questions, verdicts) if v.shortcut} == {
        "disamb", "one_page", "unbridged"}  # each answer page shares words with its question


def test_main_prints_both_sets_and_the_result_line(bench, hops_wh, tmp_path, capsys):
    out = tmp_path / "hops.json"
    assert bench.main([str(hops_wh.root), "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == ("RESULT multi=5 pass=0.400 shortcut=0.600 two_page=4 three_plus=1 "
                         "comparisons=0")
    figures = json.loads(out.read_text())
    assert figures["train_ready"]["multi"] == 2 and figures["train_ready"]["pass"] == 0.5
    assert figures["all"]["by_hops"]["3"] == {"multi": 1, "pass": 0.0, "pages": 1.0,
                                              "bridged": 1.0, "hidden": 0.0, "shortcut": 0.0,
                                              "comparisons": 0}
    assert any(line.startswith("train_ready: 2 questions") for line in lines)


def test_a_missing_warehouse_is_one_line(bench, tmp_path, capsys):
    assert bench.main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.strip() == f"error: no warehouse folder at {tmp_path / 'nowhere'}"
