"""The `datagen` command: one Typer app; each stage registers its commands from a light module.

Heavy libraries (torch, transformers, vllm, deepspeed, trafilatura) are imported inside the
command bodies, so `datagen --help` stays instant.
"""

from __future__ import annotations

import logging
import sys

import typer

from datagen import cli_crawl, cli_train, cli_warehouse

app = typer.Typer(
    name="datagen",
    help="Turn web pages into hard, verified, difficulty-banded QA data, and train on it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug messages.")):
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


for module in (cli_warehouse, cli_crawl, cli_train):
    module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (testable without a subprocess)."""
    try:
        app(args=argv, standalone_mode=False, prog_name="datagen")
    except typer.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # click's own usage errors
        return int(exc.code or 0)
    except Exception as exc:  # click.ClickException and friends
        import click
        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Abort):
            return 130
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
