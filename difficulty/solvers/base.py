"""What every solver shares: deterministic per-attempt seeds."""

from __future__ import annotations

import hashlib


def attempt_seed(question_id: str, run_seed: int, index: int) -> int:
    """A 63-bit seed from (question id, run seed, attempt index): the same attempt of the same
    invocation gets the same seed, so a rerun after a crash reproduces it exactly."""
    digest = hashlib.sha256(f"{question_id}\x1f{run_seed}\x1f{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
