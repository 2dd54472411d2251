"""Shared CLI plumbing: the options several commands take (--warehouse, --endpoint, --model)
and one-line errors for user mistakes. Config files and config errors are datagen.config_io's."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

from datagen.config_io import read_config_section  # noqa: F401 - for the stage commands

WarehouseOpt = Annotated[
    Optional[Path],
    typer.Option("--warehouse", "-w", envvar="DATAGEN_WAREHOUSE",
                 help="Warehouse directory. Default: $DATAGEN_WAREHOUSE, else "
                      "~/.local/share/datagen/warehouse."),
]

SplitOpt = Annotated[Optional[str], typer.Option(
    "--split", help="Only the file's rows whose split field is this (e.g. train, eval).")]
EndpointOpt = Annotated[Optional[str], typer.Option(
    "--endpoint", help="OpenAI-compatible base URL of the model, e.g. "
                       "http://127.0.0.1:8000/v1.")]
ApiKeyEnvOpt = Annotated[Optional[str], typer.Option(
    "--api-key-env", help="Environment variable that holds the endpoint's API key.")]
ModelOpt = Annotated[Optional[str], typer.Option(
    "--model", help="Model name at --endpoint; without --endpoint, a registry name, folder or "
                    "hub id that vLLM serves locally for this run.")]


class UserError(Exception):
    """A mistake the user can fix; the CLI prints its message on one line and exits 2."""


def error_exit(message: str, code: int = 2) -> "typer.Exit":
    """The exit of a command a user mistake stopped, its one line printed on stderr."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def user_errors(fn: Callable) -> Callable:
    """Turn user mistakes (bad input, bad warehouse) into one line on stderr, no traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from datagen.llm.served import NoLocalEndpoint
        from warehouse.errors import WarehouseError
        try:
            return fn(*args, **kwargs)
        except (UserError, WarehouseError, NoLocalEndpoint, FileNotFoundError,
                ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise error_exit(first) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None
    return wrapper


def open_warehouse(path: Optional[Path], *, create: bool = True, read_only: bool = False,
                   snapshot: int | None = None):
    import warehouse
    return warehouse.open(path, create=create, read_only=read_only, snapshot=snapshot)


def add_command(app: typer.Typer, name: str, fn: Callable) -> None:
    """Register ``fn`` as ``datagen NAME``. The command list shows the docstring's first
    paragraph as one line (Typer would keep the docstring's line breaks there)."""
    first = (fn.__doc__ or "").strip().split("\n\n")[0]
    app.command(name, short_help=" ".join(first.split()))(fn)
