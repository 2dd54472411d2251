"""run_band against a real warehouse: batches, reruns, crashes, filters, the details column."""

from __future__ import annotations

import json

import pytest

from difficulty import BandConfig, run_band
from tests.difficulty.conftest import RateSolver, add_questions


def _rows(wh):
    return wh.sql("select question_id, band, k, n_correct, details, run_id from difficulty "
                  "order by question_id").to_pylist()


def test_bands_land_in_batches_with_attempts_and_runs_row(wh, rates):
    add_questions(wh, rates)
    before = len(wh.snapshots())
    s = run_band(wh, BandConfig(batch_size=8, plot=False), solver=RateSolver(rates))
    rows = _rows(wh)
    assert s.banded == len(rows) == 30 and s.batches == 4
    assert len(wh.snapshots()) - before >= 4 + 2  # a commit per batch + the run's start/end
    assert {r["run_id"] for r in rows} == {s.run_id}
    bands = {r["question_id"]: r["band"] for r in rows}
    assert all(bands[q] == "too_hard" for q, p in rates.items() if p == 0.0)
    assert all(bands[q] == "too_easy" for q, p in rates.items() if p == 1.0)
    d = json.loads(rows[0]["details"])
    assert len(d["attempts"]) == rows[0]["k"] and d["stop_reason"] and d["key"]
    assert sum(a["reward"] for a in d["attempts"]) == rows[0]["n_correct"]
    run = wh.sql("select kind, status from runs where run_id = ?", [s.run_id]).to_pylist()[0]
    assert run == {"kind": "band", "status": "succeeded"}


def test_rerun_skips_and_a_crash_loses_nothing(wh, rates):
    add_questions(wh, rates)
    cfg = BandConfig(batch_size=10, plot=False)
    with pytest.raises(RuntimeError):  # dies in the second batch
        run_band(wh, cfg, solver=RateSolver(rates, fail_on="q012"))
    first = _rows(wh)
    assert len(first) == 10
    assert wh.scalar("select status from runs where kind = 'band'") == "failed"
    s = run_band(wh, cfg, solver=RateSolver(rates))
    rows = _rows(wh)
    assert s.skipped_already_banded == len(first) and s.banded == 30 - len(first)
    assert sorted(r["question_id"] for r in rows) == sorted(rates)  # no loss, no double
    again = run_band(wh, cfg, solver=RateSolver(rates))
    assert again.banded == 0 and len(_rows(wh)) == 30
    other = run_band(wh, cfg.model_copy(update={"seed": 5}), solver=RateSolver(rates))
    assert other.banded == 30  # another invocation (seed) bands afresh


def test_failing_questions_and_where_filter(wh, rates):
    add_questions(wh, dict(list(rates.items())[:10]))
    add_questions(wh, dict(list(rates.items())[10:20]), hops=2, verdict="fail")
    add_questions(wh, dict(list(rates.items())[20:]), hops=3, verdict=None)
    s = run_band(wh, BandConfig(plot=False, where="hops >= 2"), solver=RateSolver(rates))
    assert s.questions == 10 and set(s.by_band_hops) == {"3"}
    with pytest.raises(Exception, match="(?i)parse|refused|not allowed"):
        run_band(wh, BandConfig(where="1; drop table questions"), solver=RateSolver(rates))


def test_attempts_are_reproducible_per_question_and_seed(wh, rates):
    add_questions(wh, rates)
    cfg = BandConfig(first_round=4, max_k=4, plot=False)
    run_band(wh, cfg, solver=RateSolver(rates))
    a = {r["question_id"]: json.loads(r["details"])["attempts"] for r in _rows(wh)}
    run_band(wh, cfg.model_copy(update={"seed": 1}), solver=RateSolver(rates))
    seeds = wh.sql("select question_id, details from difficulty").to_pylist()
    per_q = {}
    for r in seeds:
        per_q.setdefault(r["question_id"], []).append(
            [x["seed"] for x in json.loads(r["details"])["attempts"]])
    assert all(s1 != s2 for s1, s2 in per_q.values())
    assert [x["i"] for x in a["q000"]] == [0, 1, 2, 3]


def test_the_llm_solver_gets_the_band_configs_key_and_budget(wh, monkeypatch):
    """`solver: llm` reaches the endpoint with the key variable, concurrency and budgets of
    its BandConfig (it used to get only the URL and the model name)."""
    from difficulty.solvers.llm import make_llm_solver
    monkeypatch.setenv("BAND_TEST_KEY", "sk-test")
    cfg = BandConfig(solver="llm", endpoint="http://127.0.0.1:9", model="m",
                     api_key_env="BAND_TEST_KEY", max_concurrency=3, max_calls=7, max_tokens=900)
    solver = make_llm_solver(wh, cfg, use_tools=False)
    try:
        ep = solver.client.endpoint
        assert (ep.base_url, ep.api_key_env, ep.max_concurrency, ep.max_calls, ep.max_tokens) == \
            ("http://127.0.0.1:9/v1", "BAND_TEST_KEY", 3, 7, 900)
        assert solver.client._headers["Authorization"] == "Bearer sk-test"
    finally:
        solver.close()
