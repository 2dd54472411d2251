"""examples/search_spike_env.py: a build's pages and its passing one-hop number questions
(`--types year`: the year ones), banded medium, in a new warehouse (the search agent's
learning-spike environment)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("search_spike_env",
                                                  REPO / "examples" / "search_spike_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_hop_number_questions_that_passed_only(demo_composed, tmp_path):
    import warehouse
    from tests.conftest import _copy_warehouse
    from warehouse import QuestionRecord, VerdictRecord

    source = warehouse.open(demo_composed, read_only=True)
    questions = source.sql("select * from questions")
    rows = questions.select(["question_id", "hops", "answer_type"]).to_pylist()
    source.close()
    numbers = [r["question_id"] for r in rows
               if r["hops"] == 1 and r["answer_type"] in ("year", "number")]
    assert len(numbers) >= 3
    failed = numbers[0]
    src = _copy_warehouse(demo_composed, tmp_path / "src")
    with src.transaction() as tx:
        tx.append(questions, QuestionRecord)
        tx.append([VerdictRecord(question_id=r["question_id"], check_name="t", status="pass")
                   for r in rows])
        tx.append([VerdictRecord(question_id=failed, check_name="u", status="fail")])
    src.close()
    script = _script()
    assert script.main([str(tmp_path / "src"), str(tmp_path / "dst")]) == 0
    assert script.main([str(tmp_path / "src"), str(tmp_path / "dst")]) == 2   # exists
    dst = warehouse.open(tmp_path / "dst", read_only=True)
    try:
        ready = dst.sql("select question_id, band from train_ready").to_pylist()
        n_pages = dst.count("pages")
    finally:
        dst.close()
    assert {r["question_id"] for r in ready} == set(numbers) - {failed}
    assert {r["band"] for r in ready} == {"medium"} and n_pages > 0
    years = {r["question_id"] for r in rows if r["question_id"] in set(numbers) - {failed}
             and r["answer_type"] == "year"}
    assert script.main([str(tmp_path / "src"), str(tmp_path / "yr"), "--types", "year"]) == 0
    assert script.main([str(tmp_path / "src"), str(tmp_path / "x"), "--types", "date"]) == 2
    dst = warehouse.open(tmp_path / "yr", read_only=True)
    try:
        assert {r["question_id"] for r in dst.sql("select question_id from train_ready")
                .to_pylist()} == years
    finally:
        dst.close()
