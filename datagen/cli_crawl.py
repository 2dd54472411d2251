"""CLI commands of the crawl stage (owned by that stage; kept light to import)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
