"""The opt-in no-tool check (ASearcher's): a question a model answers without any tools is
too easy for a search agent. Writes a verdict `no_tool_solvable` per question: `fail` with
reason `answered_without_tools` when any of k attempts is right, else `pass`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

from difficulty.config import BandConfig
from difficulty.records import Solver

if TYPE_CHECKING:
    from warehouse import Warehouse


CHECK = "no_tool_solvable"


def no_tool_check(wh: "Warehouse", cfg: BandConfig, solver: Solver, *, k: int | None = None,
                  parent_run_id: str = "",
                  progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Verdicts for the questions `cfg` selects; {'pass': n, 'fail': n}. `solver` must not
    use tools (an LLM solver built without them, or a policy solver)."""
    from difficulty.run import load_items, reward_judge
    from warehouse import VerdictRecord
    k = k or cfg.first_round
    items, _ = load_items(wh, cfg)
    counts = {"pass": 0, "fail": 0}
    with wh.run("no_tool_check", {**cfg.model_dump(), "k": k, "solver_name": solver.name},
                parent_run_id=parent_run_id) as run:
        for start in range(0, len(items), cfg.batch_size):
            batch = items[start:start + cfg.batch_size]
            verdicts = []
            for item, attempts in zip(batch, solver.solve([i.question for i in batch], k)):
                right = sum(reward_judge(a, item)[0] >= 1.0 for a in attempts)
                status = "fail" if right else "pass"
                counts[status] += 1
                verdicts.append(VerdictRecord(
                    question_id=item.question.question_id, check_name=CHECK, status=status,
                    reason="answered_without_tools" if right else "",
                    details=json.dumps({"solver": solver.name, "k": k, "n_correct": int(right)}),
                    run_id=run.run_id))
            wh.append(verdicts, run_id=run.run_id)
            if progress:
                progress(start + len(batch), len(items))
        run.summary = counts
    return counts
