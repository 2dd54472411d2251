"""Shared CLI plumbing: the --warehouse option and one-line errors for user mistakes."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Optional, TypeVar

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound="BaseModel")

WarehouseOpt = Annotated[
    Optional[Path],
    typer.Option("--warehouse", "-w", envvar="DATAGEN_WAREHOUSE",
                 help="Warehouse directory. Default: $DATAGEN_WAREHOUSE, else "
                      "~/.local/share/datagen/warehouse."),
]


class UserError(Exception):
    """A mistake the user can fix; the CLI prints its message on one line and exits 2."""


def fail(message: str, code: int = 2) -> "typer.Exit":
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def user_errors(fn: Callable) -> Callable:
    """Turn user mistakes (bad input, bad warehouse) into one line on stderr, no traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from warehouse.errors import WarehouseError
        try:
            return fn(*args, **kwargs)
        except (UserError, WarehouseError, FileNotFoundError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise fail(first) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None
    return wrapper


def open_warehouse(path: Optional[Path], *, create: bool = True, read_only: bool = False,
                   snapshot: int | None = None):
    import warehouse
    return warehouse.open(path, create=create, read_only=read_only, snapshot=snapshot)


def stderr_console():
    from rich.console import Console
    return Console(stderr=True)


def is_tty() -> bool:
    return sys.stderr.isatty()


def add_command(app: typer.Typer, name: str, fn: Callable) -> None:
    """Register ``fn`` as ``datagen NAME``. The command list shows the docstring's first
    paragraph as one line (Typer would keep the docstring's line breaks there)."""
    first = (fn.__doc__ or "").strip().split("\n\n")[0]
    app.command(name, short_help=" ".join(first.split()))(fn)


def make_config(config_cls: type[M], data: dict, what: str) -> M:
    """`config_cls(**data)`, a mistake in it one line: 'bad compose setting hops_min: ...'."""
    from pydantic import ValidationError
    try:
        return config_cls(**data)
    except ValidationError as exc:
        raise UserError(config_error(exc, what)) from None


def config_error(exc: "ValidationError", what: str) -> str:
    """The first error of a config's validation, as the CLI prints it."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "config"
    msg = err["msg"].removeprefix("Value error, ")
    hint = " (unknown key)" if err["type"] == "extra_forbidden" else ""
    return f"bad {what} setting {where}: {msg}{hint}"


def read_config_section(path: Optional[Path], section: str, what: str) -> dict:
    """The mapping in a YAML/JSON config file (its `section:` part when it has one); {} for
    no file. `what` names the config class in the error ('ComposeConfig')."""
    if path is None:
        return {}
    import json

    import yaml
    if not path.is_file():
        raise UserError(f"--config {path}: no such file")
    text = path.read_text()
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a mapping of {what} fields")
    return dict(data.get(section, data))
