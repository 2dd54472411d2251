"""Run the datagen CLI and SIGKILL its process group as a stage is about to commit its Nth batch.

    python tests/flows/kill_at_commit.py KIND TABLE N datagen-args...

The kill is real (SIGKILL: no `finally`, no atexit, the batch in hand is lost); only its moment
is fixed, so that a test of resuming never depends on catching a fast stage between two polls.
N-1 batches of the `KIND` run are committed to TABLE when it lands.
"""

from __future__ import annotations

import os
import signal
import sys


def arm(kind: str, table: str, n: int) -> None:
    """Make the Nth batch that a `kind` run gathers for `table` kill the process group."""
    from warehouse.core import Transaction
    original = Transaction.append
    seen = 0

    def append(self, records, record_type=None, run_id=None):
        nonlocal seen
        before = len(self.batches)
        original(self, records, record_type, run_id=run_id)
        added = len(self.batches) > before and self.batches[-1][0] == table
        if added and (run_id or "").startswith(f"{kind}-"):
            seen += 1
            if seen == n:
                os.killpg(os.getpgid(0), signal.SIGKILL)

    Transaction.append = append


if __name__ == "__main__":
    arm(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    from datagen.cli import main
    sys.exit(main(sys.argv[4:]))
