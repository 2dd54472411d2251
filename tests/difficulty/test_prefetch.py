"""Attempts and rewards computed ahead by worker processes give the bands the bander gets
asking the solver and the judge itself."""

from __future__ import annotations

from datagen.tools import PageTools
from difficulty import BandConfig
from difficulty import prefetch
from difficulty.adaptive import AdaptiveBander, BandItem
from difficulty.records import SolverQuestion
from difficulty.run import MemoJudge, reward_judge
from difficulty.solvers.embedded import EmbeddedSolver
from tests.difficulty.conftest import PAGES

ASKS = [("What is the capital of Zorbia?", "Kelm"), ("In what year was Zorbia founded?", "1204"),
        ("Where was the mayor of the capital of Zorbia born?", "Kelm"),
        ("Who founded the university where Ilsa Varn studied?", "Odo Tarn"),
        ("How many people live in Kelm?", "40,000"), ("On what date was Ilsa Varn born?",
                                                       "3 May 1950")]


def _items(n: int) -> list[BandItem]:
    return [BandItem(SolverQuestion(f"q{i:03d}", ASKS[i % len(ASKS)][0], run_seed=i % 5),
                     ASKS[i % len(ASKS)][1]) for i in range(n)]


def _band(batches, workers: int | None):
    """Decisions per batch: `workers` None asks the solver and the reward directly."""
    cfg = BandConfig(plot=False)
    solver = EmbeddedSolver(PageTools.from_pages(PAGES))
    if workers is None:
        bander = AdaptiveBander(cfg.stopping_rule(), reward_judge)
        return [bander.band(b, solver) for b in batches]
    judge = MemoJudge()
    bander = AdaptiveBander(cfg.stopping_rule(), judge)
    replay = prefetch.ReplaySolver(solver)
    return [bander.band(batches[i], replay)
            for i in prefetch.batches_ahead(solver, judge, replay, batches, cfg.max_k, workers)]


def test_bands_computed_ahead_in_workers_equal_direct_banding():
    items = _items(40)
    batches = [items[:24], items[24:]]
    direct = _band(batches, None)
    assert _band(batches, 2) == direct
    assert _band(batches, 0) == direct
    assert {d.band for b in direct for d in b} != {"too_hard"}  # some were answerable


def test_replay_solver_serves_a_slice_and_asks_for_the_rest():
    solver = EmbeddedSolver(PageTools.from_pages(PAGES))
    q = _items(1)[0].question
    replay = prefetch.ReplaySolver(solver)
    replay.attempts[q.question_id] = solver.solve([q], 4)[0]
    later = SolverQuestion(q.question_id, q.question, q.run_seed, first_attempt=2)
    assert replay.solve([later], 2) == solver.solve([later], 2)   # from the store
    assert replay.solve([later], 5) == solver.solve([later], 5)   # past it: asked


def test_a_reward_that_raises_in_a_worker_is_left_to_the_bander():
    def judge_raising(attempt, item):
        if item.answer == "Kelm":
            raise TimeoutError("math-verify timed out")
        return reward_judge(attempt, item)
    judge = MemoJudge(judge_raising)
    chunk = prefetch.compute(EmbeddedSolver(PageTools.from_pages(PAGES)), judge, _items(2), 4)
    assert chunk.rewards and all(key[1] != "Kelm" for key in chunk.rewards)
    assert len(chunk.attempts["q000"]) == 4


def test_no_workers_for_a_handful_of_questions():
    assert prefetch.worker_count(3) == 0
    assert prefetch.worker_count(10_000) >= 1


HOSTILE_PARENT = """
import signal
signal.signal(signal.SIGTERM, lambda *_: None)            # a handler that returns
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
from tests.difficulty.test_prefetch import _band, _items
items = _items(40)
assert len(_band([items[:24], items[24:]], 2)) == 2        # to the end: terminate after it
from difficulty import prefetch
from difficulty.run import MemoJudge
from difficulty.solvers.embedded import EmbeddedSolver
from datagen.tools import PageTools
from tests.difficulty.conftest import PAGES
solver = EmbeddedSolver(PageTools.from_pages(PAGES))
ahead = prefetch.batches_ahead(solver, MemoJudge(), prefetch.ReplaySolver(solver),
                               [items[:24], items[24:]], 4, 2)
next(ahead)
ahead.close()                                              # left early: terminate
print("stopped")
"""


def test_workers_stop_when_the_parent_handles_or_blocks_sigterm():
    """The pool's workers end both ways (all batches done, or the bander leaving early) even
    when the banding process has a SIGTERM handler that returns, or SIGTERM blocked (a CI
    build hung 15 minutes in the pool's terminate after training tests in the same process)."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", HOSTILE_PARENT], cwd=root, timeout=60,
                          capture_output=True, text=True)
    assert done.returncode == 0 and "stopped" in done.stdout, done.stderr[-2000:]
