"""Fixtures for warehouse tests: populated warehouses and a helper to run Python in a child
process (real processes for the crash and concurrency tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def spawn(code: str, *args: str, **kw) -> subprocess.Popen:
    """Start `python -c code args...` with the repo importable; stdout is a pipe."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(), cwd=REPO, **kw)


def run_child(code: str, *args: str, timeout: float = 120) -> str:
    proc = spawn(code, *args)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{err}"
    return out


@pytest.fixture
def wh_path(tmp_path) -> Path:
    """A created (empty) warehouse directory, closed."""
    import warehouse
    path = tmp_path / "wh"
    warehouse.open(path).close()
    return path


@pytest.fixture
def ready_wh(tmp_path) -> Path:
    """A warehouse with 60 train_ready questions (20 per easy/medium/hard) plus one question
    that failed a check and one without a band, closed."""
    return make_ready(tmp_path / "wh")


@pytest.fixture(scope="module")
def shared_ready_wh(tmp_path_factory) -> Path:
    """Like ready_wh, built once per module: only for tests that do not write."""
    return make_ready(tmp_path_factory.mktemp("shared") / "wh")


def make_ready(path: Path) -> Path:
    import warehouse
    from tests.warehouse.helpers import add_ready
    from warehouse.schema import QuestionRecord, VerdictRecord
    with warehouse.open(path) as wh:
        bands = ("easy", "medium", "hard")
        add_ready(wh, [f"q{i:03d}" for i in range(60)], band_of=lambda i: bands[int(i[1:]) % 3])
        with wh.transaction() as tx:
            tx.append([QuestionRecord(question_id="failed", question="?", answer="x"),
                       QuestionRecord(question_id="unbanded", question="?", answer="y")])
            tx.append([VerdictRecord(question_id="failed", check_name="grounding", status="fail",
                                     reason="quote not found"),
                       VerdictRecord(question_id="unbanded", check_name="grounding", status="pass")])
    return path
