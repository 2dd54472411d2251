"""A model behind a local vLLM OpenAI server: for one run (`served_endpoint`, which `datagen
build`, `compose`, `band` and `eval` use when they name a model but no endpoint), or until
stopped (`serve_model_quietly`, `datagen serve-model`: vLLM's output in a log file). The
server launcher is training's."""

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
    from datagen.models import resolve_model
    from training.engines.vllm_server import launch_server, stop_server
    path = resolve_model(model)
    port = _free_port()
    log_file = serve_log(port)   # beside serve-model's, not a temp file a reboot removes
    log_file.parent.mkdir(parents=True, exist_ok=True)
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


def serve_log(port: int) -> Path:
    """Where a vLLM server this project starts keeps its output (`datagen serve-model` unless
    --log names a file; the one eval, band and compose start for a run): logs/ in the datagen
    data folder, beside the default warehouse and the pulled models."""
    from warehouse.store import data_dir
    return data_dir() / "logs" / f"serve-model-{port}.log"


def serve_model_quietly(model: str, *, host: str, port: int, max_model_len: int | None = None,
                        log_file: Path | None = None) -> int:
    """Serve `model` at http://HOST:PORT/v1 under its own name until stopped (see
    `run_server_until_stopped`), what vLLM prints appended to `log_file` (default
    `serve_log(port)`; `datagen --verbose`: the terminal), its own lines on the console: where
    it serves, ready, stopped."""
    from datagen.console import quiet_run, verbose_requested
    cmd = serve_command(model, host, port, max_model_len)  # a user mistake: before any log
    with quiet_run(log_file or serve_log(port), verbose=verbose_requested()) as console:
        console.line(f"serving {model} at http://{host}:{port}/v1 (model name {model!r}); "
                     "Ctrl-C to stop" + (f"; vLLM's output: {console.log}" if console.log else ""))
        return run_server_until_stopped(cmd, _local_url(host, port), say=console.line)


def serve_command(model: str, host: str, port: int, max_model_len: int | None) -> list[str]:
    """vLLM's OpenAI server on `model` (a registry name, folder or hub id), named as given."""
    from datagen.models import resolve_model
    from training.engines.vllm_server import server_command
    return server_command(resolve_model(model), host=host, port=port,
                          max_model_len=max_model_len, served_model_name=model)


def run_server_until_stopped(cmd: list[str], url: str,
                             say=lambda line: log.info("%s", line)) -> int:
    """Run the server `cmd` until it exits (its exit code) or Ctrl-C / SIGTERM stops it (0);
    `say` hears when `url` answers and how it ended. The server runs in its own process group
    (no dev weight-reload routes), writing to this process's descriptors 1 and 2: stopping the
    group stops vLLM's engine processes too, which a kill of the API server alone would leave
    behind."""
    import subprocess

    from training.engines.vllm_server import stop_server
    with sigterm_interrupts():
        proc = subprocess.Popen(cmd, start_new_session=True)
        try:
            return _until_exit(proc, url, say)
        except KeyboardInterrupt:
            stop_server(proc)
            say("stopped")
            return 0


def _until_exit(proc, url: str, say) -> int:
    """Wait for the server to answer /health (say so), then for it to exit (its code)."""
    from training.engines.vllm_server import wait_ready
    start = time.monotonic()
    try:
        wait_ready(url, proc, timeout_s=float("inf"))  # a first start may download the weights
    except RuntimeError:  # it exited while starting: its code says how
        say(f"vLLM exited with code {proc.returncode} while starting")
        return proc.returncode
    say(f"ready in {time.monotonic() - start:.0f} s")
    code = proc.wait()
    say(f"vLLM exited with code {code}")
    return code


def _local_url(host: str, port: int) -> str:
    """http://HOST:PORT as this machine reaches the server (a wildcard bind answers on
    loopback)."""
    host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
