"""Off a terminal (a build's output, CI, test logs), library progress bars stay quiet."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LOAD = """
import sys
if sys.argv[1] == "quiet":
    import os
    from datagen.console import quiet_progress_env
    os.environ.update(quiet_progress_env())
from transformers import AutoModelForCausalLM, LlamaConfig
cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1)
AutoModelForCausalLM.from_config(cfg).save_pretrained(sys.argv[2])
AutoModelForCausalLM.from_pretrained(sys.argv[2])
"""


@pytest.mark.integration
def test_model_loads_print_no_progress_bar_into_a_log(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE")}

    def stderr(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", LOAD, mode, str(tmp_path / mode)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-1500:]
        return done.stderr

    assert "Loading weights" in stderr("loud")  # the bar this guards against, as transformers draws it
    assert "Loading weights" not in stderr("quiet")
