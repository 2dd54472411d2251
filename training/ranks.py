"""Several trainer processes (the DeepSpeed launcher): rank 0 leads, the other ranks follow.

Only rank 0 runs the rollout side (warehouse, reader, controller, inference engine, metrics).
Every rank holds a shard of the DeepSpeed engine, whose calls are collective: each rank must
make the same calls, in the same order, on the same global batch. So on rank 0 the engine is
wrapped in `LeaderEngine`, which broadcasts every call (method name and arguments) before
making it; the other ranks sit in `follow`, replaying the calls until rank 0 says stop.

A loss function cannot travel (it is a closure): calls name it, and each follower builds
its own from the same config (`loss_fns`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

logger = logging.getLogger(__name__)

_STOP = "__stop__"
_LOSS = "__loss__"


def rank_and_world() -> tuple[int, int]:
    import torch

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def broadcast(obj: Any = None) -> Any:
    """Rank 0's `obj` on every rank (pickled; tensors travel on CPU)."""
    import torch

    box = [obj]
    torch.distributed.broadcast_object_list(box, src=0)
    return box[0]


class LeaderEngine:
    """Rank 0's view of the train engine: every call is replayed on the follower ranks."""

    _REPLAYED = ("forward_logprobs", "train_batch", "export_weights", "save", "set_lr")

    def __init__(self, engine, loss_names: dict[int, str]):
        self._engine = engine
        self._loss_names = loss_names    # id(loss_fn) -> name known to the followers

    def __getattr__(self, name: str):
        attr = getattr(self._engine, name)
        if name not in self._REPLAYED:
            return attr

        def replayed(*args):
            wire = [(_LOSS, self._loss_names[id(a)]) if callable(a) else a for a in args]
            broadcast((name, wire))
            return attr(*args)
        return replayed

    def stop(self) -> None:
        broadcast((_STOP, []))


def follow(engine, loss_fns: dict[str, Callable]) -> int:
    """Replay rank 0's engine calls until it stops; returns the number of calls made."""
    calls = 0
    while True:
        name, args = broadcast()
        if name == _STOP:
            return calls
        args = [loss_fns[a[1]] if isinstance(a, tuple) and a[:1] == (_LOSS,) else a
                for a in args]
        getattr(engine, name)(*args)
        calls += 1
