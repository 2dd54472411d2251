"""One SIGTERM stops a running `datagen build` as Ctrl-C would: the process ends within 10 s
with exit code 130, what the stages committed stays readable, the build run says
`interrupted`, and no child process (Prefect's ephemeral API server, the demo world's
server) is left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse
from training.engines.reaper import descendants, start_time

pytestmark = [pytest.mark.slow, pytest.mark.integration]

CONFIG = "demo: {entities: 30, seed: 7}\ncrawl: {batch_size: 5}\n"


def pages(root: Path) -> int:
    try:
        with warehouse.open(root, read_only=True, create=False) as wh:
            return wh.count("pages")
    except Exception:  # noqa: BLE001 - not created yet, or mid-creation
        return 0


def test_one_sigterm_ends_a_build_and_keeps_what_it_committed(tmp_path):
    cfg = tmp_path / "build.yaml"
    cfg.write_text(CONFIG)
    root = tmp_path / "wh"
    env = {**os.environ, "DATAGEN_CACHE": str(tmp_path / "cache")}
    log = (tmp_path / "out.txt").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "datagen.cli", "build", "--config", str(cfg),
                             "--warehouse", str(root)], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while (stored := pages(root)) == 0:
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "out.txt").read_text()
            time.sleep(0.5)
        children = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        code = proc.wait(timeout=30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    out = (tmp_path / "out.txt").read_text()
    assert took < 10 and code == 130, (took, code, out)
    assert out.strip().splitlines()[-1] == "interrupted"
    time.sleep(1)  # a child's own exit after its parent's may take a moment
    assert not [pid for pid in children if start_time(pid) is not None], out
    with warehouse.open(root, read_only=True) as wh:
        assert wh.count("pages") >= stored
        runs = {r["kind"]: r["status"] for r in wh.sql("select kind, status from runs")
                .to_pylist()}
    assert runs["build"] == "interrupted" and runs["crawl"] in ("succeeded", "interrupted"), \
        (runs, out)
