"""Quiet by default, progress always: a long command's own lines on the console, library
chatter in a log file.

    with quiet_run(run_dir / "train.log", verbose=verbose_requested()) as console:
        console.line("step 1/30 reward 0.25")      # the project's progress: the console
        ...                                        # vLLM, DeepSpeed, Triton, torch: the log

vLLM's engine core runs in a subprocess and writes straight to file descriptors 1 and 2, and
its loggers, DeepSpeed's and Python's warnings hold `sys.stdout`/`sys.stderr`: so the
redirection is done on the descriptors themselves (`os.dup2` of the log file onto 1 and 2),
which every library and child process inherits. The project's console keeps a duplicate of
the original descriptors. With `datagen --verbose` nothing is redirected: the chatter stays on
the terminal. `datagen train` (RUN/train.log), `eval` (OUT/eval.log), `band`
(WAREHOUSE/reports/band.log) and `serve-model` (--log, default DATA/logs/) use it.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TextIO


@dataclass(frozen=True)
class Console:
    """Where the project's own lines go while libraries write to the log."""

    out: TextIO              # the original stdout (summaries)
    err: TextIO              # the original stderr (progress)
    tty: bool                # err is a terminal: draw a bar; else one line per step
    log: Path | None         # where the chatter goes; None: nowhere else (--verbose)

    def line(self, text: str) -> None:
        """One progress line, stamped with the wall time (a log read later says when)."""
        self.err.write(f"{time.strftime('%H:%M:%S')} {text}\n")
        self.err.flush()


@contextmanager
def quiet_run(log: Path, verbose: bool = False) -> Iterator[Console]:
    """Descriptors 1 and 2 write to `log` (appended) meanwhile, unless `verbose`; yields the
    console on the original ones. Restored on the way out, an error's line included."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = (os.dup(1), os.dup(2))
    out, err = (os.fdopen(os.dup(fd), "w", buffering=1, errors="replace") for fd in saved)
    if not verbose:
        log.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        yield Console(out, err, os.isatty(saved[1]), None if verbose else log)
    finally:
        for stream in (sys.stdout, sys.stderr):   # what Python buffered belongs in the log
            stream.flush()
        for target, fd in zip((1, 2), saved):
            os.dup2(fd, target)
            os.close(fd)
        out.close()
        err.close()


@contextmanager
def counted(console: Console, label: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """`advance(done, total)` for a run that counts items as it goes: a rich bar on a terminal;
    off one (a file, CI) a line per call, which such a run makes once per batch of items."""
    if not console.tty:
        yield lambda done, total: console.line(f"{label} {done}/{total} {unit}")
        return
    from rich.console import Console as RichConsole
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
                  TimeElapsedColumn(), transient=True,
                  console=RichConsole(file=console.err, force_terminal=True)) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def exit_quietly(log: Path | None) -> None:
    """In a process that ends with this command (`datagen ...`, not a test calling main):
    leave the heap out of the interpreter's last collection (over torch's, DeepSpeed's and
    vLLM's objects it took 11 s of a SIGTERM stop's 16 s on 2 busy cores) and send what
    libraries print while the interpreter shuts down (nanobind's reports of the objects thus
    left, leaked-resource warnings) to `log` (None: leave them on the terminal)."""
    import atexit
    import gc

    if Path(sys.argv[0]).name not in ("datagen", "__main__.py"):
        return
    gc.freeze()
    if log is not None:
        atexit.register(_into, str(log))


def _into(log: str) -> None:
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def verbose_requested() -> bool:
    """Whether the command line said `datagen --verbose` (the root option). Typer keeps its
    own copy of click (typer._click, since typer 0.2x): `click.get_current_context` never sees
    its contexts, and read through it `--verbose` was always False."""
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    return bool(ctx and ctx.find_root().params.get("verbose"))


def quiet_progress_env() -> dict[str, str]:
    """What the entry point adds to the environment so that library progress bars
    (transformers' "Loading weights", vLLM's, tqdm's) show only on a terminal: in a build's
    output, a CI log or a test log they are noise. Inherited by subprocesses; a variable the
    user set is kept."""
    if sys.stderr.isatty():
        return {}
    return {k: "1" for k in ("HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE")
            if k not in os.environ}
