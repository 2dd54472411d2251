"""Rich output the commands share: a wide console on stdout for summary tables, and a
progress bar on stderr drawn only on a terminal (a log or a pipe gets no bar noise)."""

from __future__ import annotations

import sys


def stdout_console():
    """A console on stdout at least 100 columns wide, so a summary table is not squeezed."""
    from rich.console import Console
    return Console(file=sys.stdout, width=max(100, Console().width))


def progress_bar(label: str, fields: str = "", transient: bool = True):
    """A bar on stderr: LABEL, bar, done/total, the `fields` text (task fields), time."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    columns = [TextColumn(label), BarColumn(), MofNCompleteColumn()]
    columns += [TextColumn(fields)] if fields else []
    return Progress(*columns, TimeElapsedColumn(), console=Console(stderr=True),
                    disable=not sys.stderr.isatty(), transient=transient)


def count_table(title: str, *columns: str):
    """A rich Table titled on the left; columns named `count`/`URLs`… ending in '>' justify right."""
    from rich.table import Table
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col.rstrip(">"), justify="right" if col.endswith(">") else "left")
    return table
