"""CLI commands of the train stage (owned by that stage; kept light to import)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
