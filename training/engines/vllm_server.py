"""Serve a policy for remote rollouts: vLLM's OpenAI server with its dev (RL) routes.

    python -m training.engines.vllm_server --model DIR --port 8000 [--host 0.0.0.0] [-- EXTRA]

runs `python -m vllm.entrypoints.openai.api_server` with `VLLM_SERVER_DEV_MODE=1`, which
mounts the routes that `RemoteInferenceEngine` needs besides `/v1/completions`:
`POST /pause?mode=abort`, `POST /resume`, `POST /collective_rpc` (method
`reload_weights`, kwargs `{"weights_path": DIR}`) and `POST /reset_prefix_cache`.
These routes can change the served weights: bind them to a private network only.
The checkpoint directory named in a weight update must be readable by the server
(shared filesystem, or copy it over first). Without `--max-model-len` the server gets
the model's own context length; a longer one is refused before vLLM starts.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

logger = logging.getLogger(__name__)


def server_command(model_path: str | Path, *, host: str = "127.0.0.1", port: int = 8000,
                   dtype: str | None = None, max_model_len: int | None = None, seed: int = 0,
                   served_model_name: str = "policy", extra: list[str] | None = None) -> list[str]:
    """The vLLM server's command line; ValueError if `max_model_len` exceeds the model's."""
    from training.engines.vllm_engine import engine_args, resolve_max_model_len

    max_model_len = resolve_max_model_len(model_path, max_model_len, flag="--max-model-len")
    args = engine_args(model_path, dtype=dtype, max_model_len=max_model_len, seed=seed)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
           "--model", args["model"], "--host", host, "--port", str(port),
           "--dtype", args["dtype"], "--seed", str(seed),
           "--logprobs-mode", args["logprobs_mode"], "--served-model-name", served_model_name]
    if args["max_model_len"] is not None:  # None: not a local model folder; vLLM derives it
        cmd += ["--max-model-len", str(args["max_model_len"])]
    if args.get("enforce_eager"):
        cmd.append("--enforce-eager")
    if "gpu_memory_utilization" in args:
        cmd += ["--gpu-memory-utilization", str(args["gpu_memory_utilization"])]
    if "kv_cache_memory_bytes" in args:
        cmd += ["--kv-cache-memory-bytes", str(args["kv_cache_memory_bytes"])]
    return cmd + list(extra or [])


def server_env() -> dict[str, str]:
    """This process's environment plus the dev routes' switch, for the server process only,
    without the trainer's torch.distributed rendezvous (`LAUNCHER_VARS`): the server has no
    use for it, and a trainer's port is the trainer's own."""
    from training.engines.deepspeed_engine import LAUNCHER_VARS

    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    return {**env, "VLLM_SERVER_DEV_MODE": "1"}


def launch_server(model_path: str | Path, *, port: int, host: str = "127.0.0.1",
                  log_file: str | Path | None = None, timeout_s: float = 300.0,
                  **kwargs) -> subprocess.Popen:
    """Start the server and wait until `/health` answers; the caller stops it (by pid)."""
    out = open(log_file, "ab") if log_file else subprocess.DEVNULL
    proc = subprocess.Popen(server_command(model_path, host=host, port=port, **kwargs),
                            env=server_env(), stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        wait_ready(f"http://{host}:{port}", proc, timeout_s)
    except BaseException:
        stop_server(proc)
        raise
    return proc


def wait_ready(base_url: str, proc: subprocess.Popen | None, timeout_s: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"vLLM server exited with code {proc.returncode} while starting")
        try:
            if httpx.get(f"{base_url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"vLLM server at {base_url} not ready after {timeout_s:.0f} s")


def stop_server(proc: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """Stop the server we started (its own process group: engine core and workers too)."""
    import signal

    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True,
                        help="a model folder, a hub id or a pulled registry name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--max-model-len", type=int, default=None,
                        help="context length (default: the model's own)")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="passed on to vLLM after --")
    a = parser.parse_args(argv)
    extra = [x for x in a.extra if x != "--"]
    try:
        from datagen.models import resolve_model
        cmd = server_command(resolve_model(a.model), host=a.host, port=a.port, dtype=a.dtype,
                             max_model_len=a.max_model_len, extra=extra)
    except ValueError as exc:  # a user mistake: one line, not vLLM's traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return subprocess.call(cmd, env=server_env())


if __name__ == "__main__":
    raise SystemExit(main())
