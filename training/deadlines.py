"""Which finished groups a batch takes, so that no trained sample is more than η versions late.

Admission alone does not stop a straggler from being trained more than η versions late when
batches are filled in finish order. So batches are filled earliest-deadline-first (deadline =
start version + η) and a batch is handed out only if every group still unconsumed can meet
its deadline in the batches that follow; otherwise the trainer waits, only as long as the
bound requires. Hence every trained sample has staleness = trained version − start version ≤ η
(the property test in tests/training/test_controller.py checks it over random latencies).

With `late_groups="drop"` the trainer never waits for a straggler: a batch goes out as soon
as enough groups are ready, and every group that can no longer meet its deadline is dropped
(counted as `dropped_late`; its running episodes are cancelled). The bound still holds; the
price is the dropped episodes, and a bias against slow episodes (often the hard questions),
which is why waiting is the default.
"""

from __future__ import annotations

from typing import Protocol, Sequence, TypeVar

LATE_GROUPS = ("wait", "drop")


class Finished(Protocol):
    """A group ready to train: the version it started under, and when it finished."""

    @property
    def start_version(self) -> int: ...

    @property
    def finish_seq(self) -> int: ...


G = TypeVar("G", bound=Finished)


def pick_batch(ready: Sequence[G], running_starts: Sequence[int], *, consumed: int, eta: int,
               k: int, late_groups: str = "wait") -> list[G] | None:
    """The `k` ready groups of the earliest deadlines, or None when the batch must wait:
    there are fewer than `k`, or (waiting for stragglers) taking these would leave some group,
    ready or running, unable to meet its deadline in the batches that follow."""
    if len(ready) < k:
        return None
    chosen = sorted(ready, key=lambda g: (g.start_version, g.finish_seq))[:k]
    if late_groups == "drop":
        return chosen  # groups this makes late are dropped once it is handed out
    live = [g.start_version for g in ready] + list(running_starts)
    taken = [g.start_version for g in chosen]
    for d in range(consumed, consumed + eta + 1):
        due = sum(1 for s in live if s + eta <= d) - sum(1 for s in taken if s + eta <= d)
        if due > (d - consumed) * k:
            return None
    return chosen


def is_late(start_version: int, eta: int, batch_version: int) -> bool:
    """A group started under `start_version` can no longer be trained within η of it."""
    return start_version + eta <= batch_version
