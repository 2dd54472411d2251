"""Admitting questions straight into `train_ready`: a passing verdict and a band for each.

For questions that skip verify and band because their maker vouches for them (a built-in
task, a benchmark's or a spike's environment, a test): the view then holds them like any
verified, banded question. The questions themselves are appended by the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from warehouse.schema import Band, DifficultyRecord, VerdictRecord

if TYPE_CHECKING:
    from warehouse.core import Transaction



def admit(tx: "Transaction", question_ids: Iterable[str], *, check: str, solver: str, band: Band = "medium",
          pass_rate: float = 0.5, reason: str = "", run_id: str = "") -> int:
    """Append, in transaction `tx`, a `pass` verdict of `check` and a `band` difficulty row
    (source builtin, k = 0) for each id; returns how many."""
    ids = list(question_ids)
    tx.append([VerdictRecord(question_id=i, check_name=check, status="pass", reason=reason,
                             run_id=run_id) for i in ids])
    tx.append([DifficultyRecord(question_id=i, solver=solver, k=0, n_correct=0,
                                pass_rate=pass_rate, band=band, source="builtin", run_id=run_id)
               for i in ids])
    return len(ids)
