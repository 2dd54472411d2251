"""RolloutController: episodes in flight with bounded staleness (AReaL's admission control).

Counting in samples (episodes), with B = batch size, η = max staleness, v = current policy
version: a new group of n episodes opens only while

    accepted + open + n <= (η + v + 1) · B

where `accepted` counts every accepted sample so far (trained or waiting) and `open` the
n episodes of every group not yet finished. Episodes, not groups, hold the in-flight slots:
an episode starts whenever fewer than `max_in_flight` run, taking the next unstarted episode
of the oldest open group (or opening a group). So a slot freed by a fast episode is reused at
once instead of idling until the slowest episode of its group is done, which under a
long-tailed latency would leave most slots empty. A group's start version is the version
when it opened (its episodes may start later, under newer weights: the bound stays safe).
Groups whose rewards are all equal carry no GRPO signal and are dropped
(counted); so are groups in which the workflow rejected an episode (returned None). But a
step drops at most `MAX_DROPPED_BATCHES` batches' worth of episodes for no signal: past
that, all-equal groups fill the batch (`groups_filler_kept`; their advantages are 0, so they
train nothing), so that a policy right on nearly every question, or stuck on one, does not
take thousands of episodes a step (1,900-4,000 in docs/experiments/2026-12-01-train-cpu-
batch-128.md; DAPO bounds its dynamic sampling's generation rounds the same way).
A dropped group whose episodes all earned nothing is played again by the next of
`hot_episode_fns` (the workflow at a higher temperature: `rollout.temperature` as a rising
list), counted as `groups_replayed_hotter`: no reweighting of sampled answers can raise an
answer the policy gives p = 0.001 (docs/experiments/2026-12-01-train-cpu-below-mean-groups.md),
but a hotter group samples it, and then its group has a signal.

An episode that raises (the reward, an inference request, a tool) fails alone: its group is
dropped at once (running siblings cancelled) and counted as `dropped_failed/<ExceptionType>`.
Only systematic failures stop training, with one `TrainingFailed` from `get_batch`: the
inference engine unreachable (`training/failures.py`, at the first such episode), or more than
half of a step's episodes failing (counted over the episodes that ended
since the last batch, and never over fewer than a batch, so that a few early failures do not
read as a majority).

A question whose last group had all-equal rewards is skipped, not generated, for
`predictable_versions` versions (training/predictable.py). `episodes_generated` counts every
episode that returned a trajectory; the trainer adds `episodes_with_gradient`.

Batches are picked earliest-deadline-first so that every trained sample is at most η
versions old (`training/deadlines.py`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Sequence

from training.api import (EpisodeItem, ItemSource, RolloutBatch, TrainingFailed,
                          Trajectory)
from training.deadlines import LATE_GROUPS, is_late, pick_batch
from training.failures import describe, engine_unreachable, unreachable_message
from training.predictable import PredictableQuestions

logger = logging.getLogger(__name__)

EpisodeFn = Callable[[EpisodeItem], Awaitable["Trajectory | None"]]
MAX_FAILED_FRACTION = 0.5   # more of a step's episodes failing than this stops the run
MAX_DROPPED_BATCHES = 8     # no-signal episodes a step may drop, in batches; then filler


@dataclass
class _Group:
    seq: int
    item: EpisodeItem
    start_version: int
    trajectories: list[Trajectory] = field(default_factory=list)
    finish_seq: int = -1
    unstarted: int = 0                                     # episodes not yet started
    rung: int = 0                  # which of the controller's `players` plays it
    results: list["Trajectory | None"] = field(default_factory=list)
    tasks: set = field(default_factory=set)                # its running episodes


class RolloutController:
    def __init__(self, episode_fn: EpisodeFn, source: ItemSource, *, batch_size: int,
                 group_size: int, max_in_flight: int, eta: int, version: int = 0,
                 late_groups: str = "wait",
                 is_fatal: Callable[[BaseException], bool] = engine_unreachable,
                 dynamic_sampling: bool = True, hot_episode_fns: Sequence[EpisodeFn] = (),
                 predictable_versions: int = 0):
        if batch_size % group_size:
            raise ValueError(f"batch_size {batch_size} must be a multiple of group_size "
                             f"{group_size}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight {max_in_flight} must be >= 1")
        if late_groups not in LATE_GROUPS:
            raise ValueError(f"late_groups must be 'wait' or 'drop', not {late_groups!r}")
        self.late_groups, self.dynamic_sampling = late_groups, dynamic_sampling
        self.is_fatal = is_fatal
        self._step_failed = self._step_ended = 0   # episodes since the last batch
        self.cancelled_episode_s = 0.0    # time spent in episodes cancelled with a late group
        self.source = source
        self.players = (episode_fn, *hot_episode_fns)   # by rung: the run's sampler, hotter
        self._replays: list[tuple[EpisodeItem, int]] = []   # (item, rung) of all-wrong groups
        self.batch_size, self.n, self.eta = batch_size, group_size, eta
        self.max_in_flight = max_in_flight
        self.version = version            # policy version of the weights now being served
        self.consumed = version           # batches handed out (= version between steps)
        self.accepted = version * batch_size
        self.counts: Counter[str] = Counter()   # groups_started, dropped_no_signal, ...
        self.staleness_hist: Counter[int] = Counter()
        self.max_staleness_seen = 0
        self.finished: list[tuple[Trajectory, EpisodeItem, bool]] = []   # (traj, item, accepted)
        self._pending_items: list[EpisodeItem] = []
        self._running: dict[int, _Group] = {}   # open groups: some episode not finished
        self._episodes_running = 0
        self._ready: list[_Group] = []
        self._tasks: set[asyncio.Task] = set()
        self._seq = itertools.count()
        self._finish_seq = itertools.count()
        self._changed: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._exhausted = False
        self._step_dropped = 0             # episodes dropped for no signal, this step
        # a step skips at most as many predictable questions as it may drop groups
        self.predictable = PredictableQuestions(predictable_versions,
                                                MAX_DROPPED_BATCHES * batch_size // group_size)

    # ---- admission ------------------------------------------------------------------
    @property
    def running_episodes(self) -> int:
        """Episodes started and not finished (what holds the in-flight slots)."""
        return self._episodes_running

    @property
    def open_episodes(self) -> int:
        """All episodes of the open groups, started or not (what admission counts)."""
        return len(self._running) * self.n

    def capacity_ok(self) -> bool:
        """May a new group open? (The staleness bound; slots are checked per episode.)"""
        bound = (self.eta + self.version + 1) * self.batch_size
        return self.accepted + self.open_episodes + self.n <= bound

    def _next_item(self) -> EpisodeItem | None:
        if self._pending_items:
            return self._pending_items.pop(0)
        item = None if self._exhausted else self.source.next_item()
        while item is not None and self.predictable.skip(item.question_id, self.version):
            self.counts["skipped_predictable"] += 1
            item = self.source.next_item()
        return item

    def _open_group(self) -> _Group | None:
        if not self.capacity_ok():
            return None
        item, rung = self._replays.pop(0) if self._replays else (self._next_item(), 0)
        if item is None:
            self._exhausted = True
            return None
        group = _Group(next(self._seq), item, self.version, unstarted=self.n, rung=rung)
        self._running[group.seq] = group
        self.counts["groups_started"] += 1
        return group

    def _group_to_start(self) -> _Group | None:
        for group in self._running.values():     # oldest first (dicts keep insertion order)
            if group.unstarted:
                return group
        return self._open_group()

    def fill(self) -> int:
        """Start episodes while slots are free and the staleness bound lets groups open."""
        started = 0
        while self._error is None and self._episodes_running < self.max_in_flight:
            group = self._group_to_start()
            if group is None:
                break
            group.unstarted -= 1
            self._episodes_running += 1
            loop = asyncio.get_running_loop()
            task = loop.create_task(self._run_episode(group))
            self._tasks.add(task)
            group.tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(group.tasks.discard)
            task.add_done_callback(self._on_cancel(loop.time()))
            started += 1
        return started

    def _on_cancel(self, t0: float):
        # A done callback: a task cancelled before it ever ran never enters _run_episode.
        def done(task: asyncio.Task) -> None:
            if task.cancelled():
                self._episodes_running -= 1
                self.cancelled_episode_s += task.get_loop().time() - t0
        return done

    async def _run_episode(self, group: _Group) -> None:
        try:
            result = await self.players[group.rung](group.item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._episodes_running -= 1
            self._episode_failed(group, exc)
            self._notify()
            return
        except BaseException as exc:  # KeyboardInterrupt and the like: stop
            self._error = RuntimeError(f"an episode was interrupted: {exc!r}")
            self._error.__cause__ = exc
            self._episodes_running -= 1
            self._notify()
            return
        self._episodes_running -= 1
        self._step_ended += 1
        if result is not None:   # the one place it is set: the group's admission version
            result.start_version = group.start_version
            self.counts["episodes_generated"] += 1
        if group.seq not in self._running:     # its group was dropped meanwhile
            return
        group.results.append(result)
        if len(group.results) == self.n:
            self._finish_group(group, group.results)
        self._notify()

    def _episode_failed(self, group: _Group, exc: Exception) -> None:
        """Drop the failed episode's group and count it; stop only on systematic failure."""
        self.counts["episodes_failed"] += 1
        self._step_failed += 1
        self._step_ended += 1
        what = describe(exc)
        logger.warning("question %s: episode failed (%s)", group.item.question_id, what)
        if group.seq in self._running:
            self._drop_group(group, f"dropped_failed/{type(exc).__name__}")
        if self.is_fatal(exc):
            self._stop(unreachable_message(exc), exc)
        elif self._step_failed > MAX_FAILED_FRACTION * max(self._step_ended, self.batch_size):
            self._stop(f"{self._step_failed} of {self._step_ended} episodes failed since the "
                       f"last training step, more than half (last: {what})", exc)

    def _stop(self, message: str, cause: BaseException) -> None:
        if self._error is None:
            self._error = TrainingFailed(message)
            self._error.__cause__ = cause

    def _drop_group(self, group: _Group, reason: str) -> None:
        """Forget an open group: cancel its other running episodes, keep its finished ones
        as untrained rows, count `reason`."""
        del self._running[group.seq]
        me = asyncio.current_task()
        for task in list(group.tasks):
            if task is not me:
                task.cancel()
        self.finished.extend((t, group.item, False) for t in group.results if t is not None)
        self.counts[reason] += 1

    def _finish_group(self, group: _Group, results: list[Trajectory | None]) -> None:
        del self._running[group.seq]
        trajs = [t for t in results if t is not None]
        for t in trajs:
            t.group_id = t.group_id or f"g{group.seq}"
        reason = None
        if len(trajs) == self.n:
            self.predictable.record(group.item.question_id, group.start_version,
                                    [t.reward for t in trajs])
        if len(trajs) < self.n:
            reason = "dropped_rejected_episode"
        elif len({t.reward for t in trajs}) == 1:
            self.counts["groups_no_signal"] += 1
            if self.dynamic_sampling:
                reason = self._no_signal_reason()
                if reason and trajs[0].reward <= 0 and group.rung + 1 < len(self.players):
                    self._replays.append((group.item, group.rung + 1))
                    self.counts["groups_replayed_hotter"] += 1
        self.counts["episodes_finished"] += len(trajs)
        self.counts["episodes_rejected"] += self.n - len(trajs)
        if reason:
            self.counts[reason] += 1
        else:
            group.trajectories, group.finish_seq = trajs, next(self._finish_seq)
            self._ready.append(group)
            self.accepted += self.n
            self.counts["groups_accepted"] += 1
        self.finished.extend((t, group.item, reason is None) for t in trajs)

    def _no_signal_reason(self) -> str | None:
        """Drop an all-equal group, or keep it as filler once the step spent its budget."""
        if (self._step_dropped >= MAX_DROPPED_BATCHES * self.batch_size
                and len(self._ready) < self.batch_size // self.n):
            self.counts["groups_filler_kept"] += 1
            return None
        self._step_dropped += self.n
        return "dropped_no_signal"

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
        if self._error is None:
            self.fill()

    # ---- batches ----------------------------------------------------------------------
    def _select(self) -> list[_Group] | None:
        return pick_batch(self._ready, [g.start_version for g in self._running.values()],
                          consumed=self.consumed, eta=self.eta, k=self.batch_size // self.n,
                          late_groups=self.late_groups)

    async def get_batch(self) -> RolloutBatch | None:
        """Wait for the next batch (None when the source ran dry and nothing is left)."""
        if self._changed is None:
            self._changed = asyncio.Event()
        while True:
            if self._error is not None:
                raise self._error
            self.fill()
            chosen = self._select()
            if chosen is not None:
                return self._hand_out(chosen)
            if self._exhausted and not self._running:
                return None
            self._changed.clear()
            await self._changed.wait()

    def _hand_out(self, chosen: list[_Group]) -> RolloutBatch:
        ids = {g.seq for g in chosen}
        self._ready = [g for g in self._ready if g.seq not in ids]
        batch_version = self.consumed
        self.consumed += 1
        self._step_failed = self._step_ended = 0
        self._step_dropped = 0
        self.predictable.new_step()
        staleness = []
        for g in chosen:
            s = batch_version - g.start_version
            staleness += [s] * len(g.trajectories)
            self.staleness_hist[s] += len(g.trajectories)
            self.max_staleness_seen = max(self.max_staleness_seen, s)
        if self.late_groups == "drop":
            self._drop_late(batch_version)
        return RolloutBatch([g.trajectories for g in chosen], [g.item for g in chosen],
                     batch_version, staleness)

    def _drop_late(self, batch_version: int) -> None:
        """Drop every group that could only be trained after its deadline (start + η)."""
        late = lambda g: is_late(g.start_version, self.eta, batch_version)  # noqa: E731
        for g in [g for g in self._ready if late(g)]:
            self._ready.remove(g)
            self.accepted -= self.n          # never trained: its admission is returned
            self.finished.extend((t, g.item, False) for t in g.trajectories)
            self.counts["dropped_late"] += 1
        for g in [g for g in self._running.values() if late(g)]:
            self._drop_group(g, "dropped_late")
        self.fill()

    def set_version(self, version: int) -> None:
        """The trainer published new weights; more groups may start."""
        self.version = version
        if self._changed is not None:
            self.fill()

    def count_gradient(self, episodes: int) -> None:
        """The trainer counts a batch's episodes whose advantage is nonzero."""
        self.counts["episodes_with_gradient"] += episodes

    def drain_finished(self) -> list[tuple[Trajectory, EpisodeItem, bool]]:
        out, self.finished = self.finished, []
        return out

    # ---- checkpointing ----------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Counters, version and the items not yet trained on (rerun first after resume)."""
        pending = [g.item for g in sorted(self._ready, key=lambda g: g.seq)]
        pending += [g.item for g in sorted(self._running.values(), key=lambda g: g.seq)]
        return {
            "version": self.version, "consumed": self.consumed,
            "counts": dict(self.counts),
            "staleness_hist": {str(k): v for k, v in self.staleness_hist.items()},
            "max_staleness_seen": self.max_staleness_seen,
            "pending_items": self._pending_items + pending,
            "predictable_until": dict(self.predictable.until),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.version = state["version"]
        self.consumed = state["consumed"]
        # Samples finished but not trained at save time are rerun, so only trained ones count.
        self.accepted = self.consumed * self.batch_size
        self.counts = Counter(state["counts"])
        self.staleness_hist = Counter({int(k): v for k, v in state["staleness_hist"].items()})
        self.max_staleness_seen = state["max_staleness_seen"]
        self._pending_items = list(state["pending_items"])
        # checkpoints written before the predictable-question rule hold no marks
        self.predictable.until = dict(state.get("predictable_until", {}))

    def staleness_summary(self) -> dict[str, float]:
        n = sum(self.staleness_hist.values())
        total = sum(k * v for k, v in self.staleness_hist.items())
        return {"staleness_trained_total": n,
                "staleness_mean_all": total / n if n else 0.0,
                "staleness_max": self.max_staleness_seen}

    async def aclose(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
