"""One SIGTERM ends `datagen compose --backend llm` within 10 s while model calls are in flight,
keeping the batches it had committed (issue 41: a compose given SIGTERM printed "interrupted",
stopped its model server, then stayed alive until a second SIGTERM).

The endpoint is the loopback fake, fast until the first batch is committed, then slow (30 s
a call), so the stop lands while several calls are in flight (the old code waited for them:
over 10 s; 2.4 s now). A served vLLM model is not used:
it needs a pulled model and minutes of start-up, and the stop path under test is the
composer's and the client's, the same whatever answers the calls.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse
from tests.conftest import _copy_warehouse
from tests.llm import scripted
from tests.llm.loopback import LoopbackLLM

REPO = Path(__file__).resolve().parents[2]
SLOW_S = 30.0

pytestmark = pytest.mark.integration


def stored_questions(root: Path) -> int:
    """Questions in the warehouse, read from this process (0 while a commit holds it)."""
    try:
        with warehouse.open(root, read_only=True) as wh:
            return wh.count("questions")
    except Exception:  # noqa: BLE001 - not created yet, or a commit in progress: ask again
        return 0


def wait_for(what, timeout_s: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        assert proc.poll() is None, proc.communicate()[1].decode(errors="replace")[-2000:]
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.3)


def test_one_sigterm_ends_compose_with_calls_in_flight(demo_crawled, tmp_path):
    root = tmp_path / "wh"
    _copy_warehouse(demo_crawled, root).close()
    (tmp_path / "compose.yaml").write_text("batch_size: 8\n")
    with LoopbackLLM(scripted.respond) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "datagen.cli", "compose", "--warehouse", str(root),
             "--backend", "llm", "--endpoint", server.base_url, "--model", "loopback",
             "--max-concurrency", "4", "--config", str(tmp_path / "compose.yaml")],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: stored_questions(root) > 0, 240, proc)
            server.latency_s = SLOW_S
            wait_for(lambda: server.in_flight >= 2, 60, proc)
            committed = stored_questions(root)
            proc.send_signal(signal.SIGTERM)
            t0 = time.monotonic()
            try:
                proc.wait(timeout=10)
            finally:
                took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
            err = proc.communicate()[1].decode(errors="replace")
    assert proc.returncode == 130 and took < 10, (proc.returncode, took, err[-2000:])
    assert "interrupted" in err
    with warehouse.open(root, read_only=True) as wh:
        assert wh.count("questions") >= committed > 0
        [run] = wh.sql("SELECT status FROM runs WHERE kind = 'compose'").to_pylist()
    assert run["status"] == "interrupted"
