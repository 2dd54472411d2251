"""`run_band`: band the warehouse's questions with a solver, one commit per batch.

Questions are read fresh (latest row per id), minus those whose latest verdict on some
check is not `pass` and those without an answer, filtered by `cfg.where`. A question
already banded by the same invocation (same solver, thresholds, confidence, k schedule
and seed: the `key` in each row's details) is skipped, so a crash and a rerun neither lose
nor double a row. Every attempt is judged by `verifiers.score_response(..., mode="reward")`,
the trainer's reward; a judge error propagates, never a silent zero.
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any, Callable, Sequence

from difficulty.adaptive import AdaptiveBander, BandItem, RewardJudge
from difficulty.config import BandConfig
from difficulty.records import SolverAttempt, BandDecision, BandSummary, Solver, SolverQuestion

if TYPE_CHECKING:
    from warehouse import Warehouse


log = logging.getLogger(__name__)

_QUESTIONS = """
WITH latest AS (
    SELECT question_id, arg_max(question, created_at) AS question,
           arg_max(answer, created_at) AS answer,
           arg_max(answer_aliases, created_at) AS answer_aliases,
           arg_max(hops, created_at) AS hops
    FROM questions GROUP BY question_id
), failing AS (
    SELECT DISTINCT question_id FROM (
        SELECT question_id, check_name, arg_max(status, created_at) AS status
        FROM verdicts GROUP BY question_id, check_name) WHERE status <> 'pass'
)
SELECT * FROM latest WHERE question_id NOT IN (SELECT question_id FROM failing)
    AND coalesce(answer, '') <> '' {where}
ORDER BY question_id
"""


def reward_judge(attempt: SolverAttempt, item: BandItem) -> tuple[float, str]:
    """The RL reward on the attempt's response; a failed attempt scores 0 with its reason."""
    from verifiers import score_response
    if attempt.error:
        return 0.0, f"attempt_error:{attempt.error}"
    r = score_response(attempt.response, item.answer, item.aliases,
                       item.question.question, mode="reward")
    return r.reward, r.rule


class MemoJudge:
    """`reward_judge` with each distinct (response, gold, question) judged once per run: the
    embedded solver's attempts repeat a few candidates, and the reward (math-verify, the
    gazetteer) was most of banding's time. The reward is a pure function of these, so the
    verdicts are the same; an exception (a math-verify timeout) is not remembered."""

    def __init__(self, judge: "RewardJudge" = reward_judge):
        self.judge = judge
        self.memo: dict[tuple, tuple[float, str]] = {}

    def __call__(self, attempt: SolverAttempt, item: BandItem) -> tuple[float, str]:
        if attempt.error:
            return self.judge(attempt, item)
        key = (attempt.response, item.answer, item.aliases, item.question.question)
        if key not in self.memo:
            self.memo[key] = self.judge(attempt, item)
        return self.memo[key]


def band_key(cfg: BandConfig, solver_name: str) -> str:
    """Identifies an invocation: rows with this key are what a rerun skips. A solver may name
    itself for this apart from its row name (the embedded solver leaves out the code version,
    so a rerun after a commit still resumes)."""
    from warehouse import content_id
    return content_id(solver_name, list(cfg.thresholds), cfg.confidence, cfg.max_k,
                      cfg.first_round, cfg.round_size, cfg.lookahead, cfg.min_gain, cfg.seed)


def load_items(wh: "Warehouse", cfg: BandConfig) -> tuple[list[BandItem], dict[str, int]]:
    """The questions to band (what the solver may see + the gold) and their hops (report only)."""
    sql = _QUESTIONS.format(where=f"AND ({cfg.where})" if cfg.where else "")
    if cfg.where:  # user SQL: the query path's read-only check refuses anything but a filter
        from warehouse.query import check_read_only
        check_read_only(sql)
    rows = wh.sql(sql).to_pylist()
    items = [BandItem(SolverQuestion(r["question_id"], r["question"], run_seed=cfg.seed),
                      r["answer"], tuple(r["answer_aliases"] or ())) for r in rows]
    return items, {r["question_id"]: int(r["hops"] or 1) for r in rows}


def already_banded(wh, key: str) -> dict[str, tuple[int, int]]:
    """{question_id: (n_correct, k)} of rows this invocation already wrote."""
    rows = wh.sql("SELECT question_id, n_correct, k FROM difficulty WHERE source = 'solver' "
                  "AND json_extract_string(details, '$.key') = ?", [key]).to_pylist()
    return {r["question_id"]: (r["n_correct"], r["k"]) for r in rows}


def make_solver(wh: "Warehouse", cfg: BandConfig) -> Solver:
    """The solver `cfg.solver` names (policy solvers are built by the CLI and handed in)."""
    if cfg.solver == "embedded":
        from datagen.tools import PageTools
        from difficulty.solvers.embedded import EmbeddedSolver
        from warehouse.core import code_version
        return EmbeddedSolver(PageTools.open(wh), name=f"embedded@{code_version()}")
    if cfg.solver == "llm":
        from difficulty.solvers.llm import make_llm_solver
        return make_llm_solver(wh, cfg)
    raise ValueError(f"solver {cfg.solver!r} must be handed in (the CLI builds policy solvers); "
                     "use --solver embedded or llm")


def run_band(wh: "Warehouse", cfg: BandConfig, *, solver: Solver | None = None, parent_run_id: str = "",
             progress: Callable[[int, int], None] | None = None) -> BandSummary:
    """Band the selected questions (or re-band from rollouts); records a `runs` row 'band'."""
    if cfg.from_rollouts:
        from difficulty.reband import run_reband
        return run_reband(wh, cfg, parent_run_id=parent_run_id, progress=progress)
    built = solver is None
    solver = solver or make_solver(wh, cfg)
    key = band_key(cfg, solver.invocation)
    try:
        with wh.run("band", {**cfg.model_dump(), "key": key, "solver_name": solver.name},
                    parent_run_id=parent_run_id) as run:
            solver.bind_run(run.run_id)  # model calls are accounted to this run
            summary = BandSummary(run_id=run.run_id, solver=solver.name)
            _band_all(wh, cfg, solver, key, summary, progress)
            run.summary = summary.as_dict()
    finally:
        if built:
            solver.close()
    return summary


def _band_all(wh, cfg, solver, key, summary: BandSummary, progress) -> None:
    items, hops = load_items(wh, cfg)
    done = already_banded(wh, key)
    todo = [it for it in items if it.question.question_id not in done]
    summary.questions, summary.skipped_already_banded = len(items), len(items) - len(todo)
    judge = MemoJudge()
    bander = AdaptiveBander(cfg.stopping_rule(), judge)
    bander.observe([n for n, _ in done.values()], [k for _, k in done.values()])
    batches = [todo[i:i + cfg.batch_size] for i in range(0, len(todo), cfg.batch_size)]
    asked, ahead = _ahead(solver, judge, batches, cfg.max_k)  # asked: the solver or its replay
    with contextlib.closing(ahead):  # a failed batch stops the workers
        for i in ahead:
            decisions = bander.band(batches[i], asked)
            wh.append(difficulty_records(decisions, solver.name, key, summary.run_id),
                      run_id=summary.run_id)
            count(summary, decisions)
            if progress:
                progress(min((i + 1) * cfg.batch_size, len(todo)), len(todo))
    finish_summary(wh, summary, key, hops, cfg)


def _ahead(solver: Solver, judge: MemoJudge, batches: list[list[BandItem]], max_k: int):
    """The solver the bander asks and the batches' indices in order: for a replayable solver,
    its attempts and their rewards computed ahead by worker processes (difficulty.prefetch)."""
    from difficulty import prefetch
    if not solver.replayable:
        return solver, prefetch.batches_ahead(solver, judge, None, batches, max_k, 0)
    replay = prefetch.ReplaySolver(solver)
    workers = prefetch.worker_count(sum(len(b) for b in batches))
    return replay, prefetch.batches_ahead(solver, judge, replay, batches, max_k, workers)


def difficulty_records(decisions: Sequence[BandDecision], solver: str, key: str,
                       run_id: str, source: str = "solver") -> list:
    from warehouse import DifficultyRecord
    return [DifficultyRecord(
        question_id=d.question_id, solver=solver, k=d.k, n_correct=d.n_correct,
        pass_rate=d.pass_rate, band=d.band, pass_rate_low=d.pass_rate_low,
        pass_rate_high=d.pass_rate_high, source=source, run_id=run_id,
        details=json.dumps(details(d, key))) for d in decisions]


def details(d: BandDecision, key: str) -> dict[str, Any]:
    """The audit trail of one decision: why it stopped and every attempt."""
    return {"key": key, "rounds": d.rounds, "stop_reason": d.stop_reason,
            "band_probability": d.band_probability, "band_posterior": d.band_posterior,
            "attempts": [{"i": j.attempt.index, "seed": j.attempt.seed,
                          "answer": j.attempt.answer or j.attempt.response[-200:],
                          "reward": j.reward, "rule": j.rule, "error": j.attempt.error,
                          "tool_calls": list(j.attempt.tool_calls)} for j in d.attempts]}


def count(summary: BandSummary, decisions: Sequence[BandDecision]) -> None:
    summary.batches += 1
    summary.banded += len(decisions)
    for d in decisions:
        summary.attempts += d.k
        summary.failed_attempts += sum(1 for j in d.attempts if j.attempt.error)
        summary.by_band[d.band] = summary.by_band.get(d.band, 0) + 1
        summary.stop_reasons[d.stop_reason] = summary.stop_reasons.get(d.stop_reason, 0) + 1


def finish_summary(wh, summary: BandSummary, key: str, hops: dict[str, int], cfg) -> None:
    """Band x hops and mean pass rate by hops over every row of this invocation (also the
    ones an interrupted earlier run wrote), and the plot beside the summary."""
    from difficulty.report import band_hops_table, plot_band_hops
    rows = wh.sql("SELECT question_id, band, pass_rate FROM difficulty WHERE "  # '' = no details
                  "json_extract_string(nullif(details, ''), '$.key') = ?", [key]).to_pylist()
    rows = [r for r in rows if r["question_id"] in hops]
    summary.by_band_hops, summary.mean_pass_rate_by_hops = band_hops_table(rows, hops)
    if cfg.plot and rows:
        path = wh.root / "reports" / f"{summary.run_id}_bands_by_hops.png"
        summary.plot_path = str(plot_band_hops(summary.by_band_hops, path, summary.solver))
