"""A model behind a local vLLM OpenAI server: for one run (`served_endpoint`, which `datagen
build`, `compose`, `band` and `eval` use when they name a model but no endpoint), or until
stopped (`serve_model_until_stopped`, `datagen serve-model`). The server launcher is training's."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from warehouse.runs import sigterm_interrupts

log = logging.getLogger(__name__)


class NoLocalEndpoint(RuntimeError):
    """vLLM did not come up on the model (the message names its log)."""


@dataclass(frozen=True)
class ServedEndpoint:
    """A vLLM server this process started for one run."""

    model: str  # the name clients send (as the user gave it)
    base_url: str  # http://127.0.0.1:PORT/v1
    start_s: float
    log: Path

    def summary(self) -> str:
        return (f"model {self.model}: served by a local vLLM at {self.base_url} for this run "
                f"(up in {self.start_s:.0f} s, stopped after; log {self.log})")


@contextlib.contextmanager
def served_endpoint(model: str, *, timeout_s: float = 900.0,
                    say=lambda line: log.info("%s", line)) -> Iterator[ServedEndpoint]:
    """Start vLLM's OpenAI server on `model` (registry name, folder or hub id) on a free
    loopback port, yield it, and stop it (the process group we started) whatever ends the
    block, SIGTERM included. `say` gets the start and up lines (the CLI prints them)."""
    import tempfile

    from datagen.models import resolve_model
    from training.engines.vllm_server import launch_server, stop_server
    path = resolve_model(model)
    port = _free_port()
    log_file = Path(tempfile.mkstemp(prefix=f"datagen-serve-{port}-", suffix=".log")[1])
    say(f"starting vLLM on {model} at 127.0.0.1:{port} (log {log_file})")
    start = time.monotonic()
    with sigterm_interrupts():
        try:
            proc = launch_server(path, port=port, log_file=log_file, timeout_s=timeout_s,
                                 served_model_name=model)
        except (RuntimeError, TimeoutError) as exc:
            raise NoLocalEndpoint(f"no local endpoint for {model}: {exc} (see {log_file})"
                                  ) from None
        served = ServedEndpoint(model, f"http://127.0.0.1:{port}/v1",
                                time.monotonic() - start, log_file)
        say(f"vLLM up in {served.start_s:.0f} s")
        try:
            yield served
        finally:
            stop_server(proc)


def serve_model_until_stopped(model: str, *, host: str, port: int,
                        max_model_len: int | None = None) -> int:
    """Serve `model` at http://HOST:PORT/v1 under its own name until the server exits (its
    exit code) or Ctrl-C / SIGTERM stops it (0). The server runs in its own process group (no
    dev weight-reload routes): stopping the group stops vLLM's engine processes too, which a
    kill of the API server alone would leave behind."""
    import subprocess

    from datagen.models import resolve_model
    from training.engines.vllm_server import server_command, stop_server
    cmd = server_command(resolve_model(model), host=host, port=port,
                         max_model_len=max_model_len, served_model_name=model)
    with sigterm_interrupts():
        proc = subprocess.Popen(cmd, start_new_session=True)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            stop_server(proc)
            return 0


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
