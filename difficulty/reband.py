"""Re-banding from training: pass rates from the `rollouts` a training run wrote.

Each rollout is one attempt of the policy at `policy_version`; reward >= 1 counts as right.
Versions: by default the latest window wins — a question's band comes from its rollouts in
the last `rollout_window` policy versions at which it was rolled out (default 1: its latest
group), because the policy moves and what matters to training is how hard the question is
for the policy now; `rollout_window = 0` pools every version. Rows get `source = 'training'`
and the solver `policy:<run>@v<N>`, N the newest version counted for that question, so
`train_ready` (latest difficulty row) and the streaming reader follow at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from difficulty.adaptive import decide_counts
from difficulty.config import BandConfig
from difficulty.records import BandSummary

if TYPE_CHECKING:
    from warehouse import Warehouse


_COUNTS = """
WITH r AS (
    SELECT question_id, policy_version, reward,
           dense_rank() OVER (PARTITION BY question_id ORDER BY policy_version DESC) AS age
    FROM rollouts WHERE run_id = ?
)
SELECT question_id, count(*) AS k, sum(CASE WHEN reward >= 1 THEN 1 ELSE 0 END) AS n,
       max(policy_version) AS version, min(policy_version) AS first_version
FROM r WHERE ? = 0 OR age <= ?
GROUP BY question_id ORDER BY question_id
"""


def rollout_counts(wh, run_id: str, window: int) -> list[dict]:
    """Per question: k rollouts, n right, newest and oldest version counted."""
    return wh.sql(_COUNTS, [run_id, window, window]).to_pylist()


def run_reband(wh: "Warehouse", cfg: BandConfig, *, parent_run_id: str = "",
               progress: Callable[[int, int], None] | None = None) -> BandSummary:
    """Write `source='training'` difficulty rows for the questions run `cfg.from_rollouts` saw."""
    from difficulty.run import count, difficulty_records, finish_summary, load_items
    train_run = cfg.from_rollouts
    rows = rollout_counts(wh, train_run, cfg.rollout_window)
    if not rows:
        raise ValueError(f"no rollouts with run_id {train_run!r} (list runs with "
                         "`datagen query \"select run_id from runs where kind = 'train'\"`)")
    key = f"rollouts:{train_run}:w{cfg.rollout_window}"
    with wh.run("band", {**cfg.model_dump(), "key": key}, parent_run_id=parent_run_id) as run:
        summary = BandSummary(run_id=run.run_id, solver=f"policy:{train_run}")
        decisions = decide_counts(cfg.stopping_rule(), [r["question_id"] for r in rows],
                                  [r["n"] for r in rows], [r["k"] for r in rows], "rollouts")
        versions = {r["question_id"]: r["version"] for r in rows}
        for start in range(0, len(decisions), cfg.batch_size):
            batch = decisions[start:start + cfg.batch_size]
            records = [rec for d in batch for rec in difficulty_records(
                [d], f"policy:{train_run}@v{versions[d.question_id]}", key, run.run_id,
                source="training")]
            wh.append(records, run_id=run.run_id)
            count(summary, batch)
            if progress:
                progress(min(start + cfg.batch_size, len(decisions)), len(decisions))
        _, hops = load_items(wh, cfg.model_copy(update={"where": None}))
        finish_summary(wh, summary, key, hops, cfg)
        summary.questions = len(rows)
        run.summary = summary.as_dict()
    return summary
