"""Re-banding during training: what training sees re-bands the questions it streams next.

    trainer step K, 2K, ... ─► run_reband(rollouts of this run)  ─► difficulty rows,
                                 source = 'training', solver policy:<run>@v<N>
                               ─► train_ready (latest row wins) ─► the StreamReader's bands

Every `reband.reband_every` steps the trainer calls `Rebander.after_step`: the questions this
run rolled out get a band from their latest rollouts (difficulty/reband.py, the difficulty
stage's re-banding), so the reader's band weights act on how hard each question is for the
policy now. With re-banding on, the reader re-reads train_ready only when an epoch ends (its
periodic refresh is off), so it never serves a question twice in an epoch and re-banding acts
from the next epoch on; the hook runs before the step's new weights open new groups.

No starvation. Band weights usually exclude too_easy and too_hard; as the policy improves or
stalls, more questions land there and the stream could run dry. Two rules bring them back:
- exploration: a share ε (`reband.explore_share`, default 0.1) of the reader's draws comes from
  the excluded bands, so their questions are rolled out again and re-banded;
- re-try: a question re-banded into an excluded band is queued again once
  `reband.retry_after_versions` (M) policy versions passed since its last rollout (0 = off).
If the stream still empties, the trainer says so (`StreamReader.dry_message`) and stops
cleanly: checkpoint, final weights, run marked succeeded with `stopped: stream_empty`.
The re-try queue is not checkpointed: after `--resume` the next re-band step queues again
whatever is due.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from training.config import RebandConfig

logger = logging.getLogger(__name__)

_DUE = """
SELECT t.question_id, t.question, t.answer, t.answer_aliases, t.band, t.pass_rate, r.version
FROM train_ready t JOIN (
    SELECT question_id, max(policy_version) AS version FROM rollouts WHERE run_id = ?
    GROUP BY question_id) r USING (question_id)
WHERE t.band IN ({bands}) AND r.version + ? <= ?
ORDER BY r.version, t.question_id
"""


@dataclass
class Rebander:
    """The re-banding hook and the starvation rule of one training run."""

    cfg: RebandConfig
    wh: object                       # the run's writable warehouse.Warehouse
    reader: object                   # warehouse.reader.StreamReader
    run_id: str
    excluded: tuple[str, ...]        # bands the weights exclude
    rebands: int = 0
    retried: int = 0
    _queued: dict[str, int] = field(default_factory=dict)   # question -> version when queued

    @classmethod
    def attach(cls, cfg: RebandConfig, reader, wh, run_id: str) -> "Rebander | None":
        """The re-banding of a run (None when `reband_every` is 0); turns on the reader's ε share.
        Call before the reader's first draw."""
        from warehouse.schema import BANDS

        if not cfg.reband_every:
            return None
        excluded = tuple(b for b in BANDS if reader.band_weights.get(b, 0) <= 0)
        reader.explore(cfg.explore_share, excluded)
        reader.refresh_s = float("inf")   # bands change between epochs only: never served twice
        return cls(cfg, wh, reader, run_id, excluded)

    def after_step(self, step: int, version: int) -> dict[str, float]:
        """Every K steps: re-band from the rollouts, queue due re-tries; metrics for the row."""
        if step % self.cfg.reband_every:
            return {}
        summary = self.reband()
        queued = self.queue_retries(version) if self.cfg.retry_after_versions else 0
        return {"reband/rebands": self.rebands, "reband/rebanded": summary.banded,
                "reband/retried": self.retried, "reband/queued": queued,
                **{f"reband/band/{b}": n for b, n in sorted(summary.by_band.items())}}

    def reband(self):
        """difficulty rows with source='training' for every question this run rolled out."""
        from difficulty.config import BandConfig
        from difficulty.reband import run_reband

        cfg = BandConfig(from_rollouts=self.run_id, plot=False)   # each question's last version
        summary = run_reband(self.wh, cfg, parent_run_id=self.run_id)
        self.rebands += 1
        logger.info("re-band %d: %d questions, %s", self.rebands, summary.banded,
                    summary.by_band)
        return summary

    def queue_retries(self, version: int) -> int:
        """Queue excluded questions whose last rollout is M or more versions old."""
        due = [(it, v) for it, v in self.due(version) if self._queued.get(it.question_id) != v]
        self._queued.update((it.question_id, v) for it, v in due)
        n = self.reader.retry([it for it, _ in due])
        self.retried += n
        return n

    def due(self, version: int) -> list[tuple[object, int]]:
        """(TrainItem, version of its last rollout) of the excluded questions due a re-try."""
        from warehouse.reader import item_from_row

        if not self.excluded:
            return []
        bands = ", ".join(f"'{b}'" for b in self.excluded)
        rows = self.wh.sql(_DUE.format(bands=bands), [self.run_id,
                                                      self.cfg.retry_after_versions, version])
        return [(item_from_row(r), r["version"]) for r in rows.to_pylist()]
