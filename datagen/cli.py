"""The `datagen` command: one Typer app; each stage registers its commands from a light module.

Heavy libraries (torch, transformers, vllm, deepspeed, trafilatura) are imported inside the
command bodies, so `datagen --help` stays instant.
"""

from __future__ import annotations

import logging
import os
import sys

import typer

from datagen import (cli_band, cli_build, cli_compose, cli_crawl, cli_eval, cli_model,
                     cli_train, cli_warehouse)
from datagen.console import quiet_progress_env

app = typer.Typer(
    name="datagen",
    help="Turn web pages into hard, verified, difficulty-banded QA data, and train on it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug messages; "
                                       "vLLM's, torch's output on the terminal, not in a log.")):
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)


for module in (cli_build, cli_warehouse, cli_crawl, cli_compose, cli_band, cli_train, cli_eval,
               cli_model):
    module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code (testable in-process, without a subprocess)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # The DeepSpeed launcher appends --local_rank=N to every process (LOCAL_RANK is set too).
    args = [a for a in args if not a.startswith("--local_rank")]
    os.environ.update(quiet_progress_env())   # progress bars only on a terminal
    try:
        app(args=args, prog_name="datagen")
    except SystemExit as exc:  # Typer/click end every run with SystemExit(code)
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
