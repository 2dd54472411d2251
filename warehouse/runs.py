"""Which process a run belongs to, and whether that process is still alive.

A run row is written `running` when it starts and updated when it ends; a process killed
with SIGKILL (or a machine that lost power) never updates it. Each run therefore records
its pid and host, and the next run of the same kind on the same host marks the rows whose
process is gone `interrupted`. Runs of other hosts are left alone: their liveness cannot be
checked from here. Also here: what a run row stores about the code and its config, and
whether this process was asked to stop.

SIGTERM as Ctrl-C: by default SIGTERM ends the process at once, so no `finally` runs: a model
server the run started keeps running, its run row stays `running`, and Prefect's ephemeral API
server (a child stopped at exit) is left behind. Within `sigterm_interrupts()` SIGTERM raises
KeyboardInterrupt instead, so every `finally` and `atexit` runs and the CLI exits 130.
Prefect's flow engine installs its own SIGTERM handler for a flow run (it raises
TerminationSignal) and, after its clean-up, sends the signal again to the handler it found:
this one. A handler's exception raised while DuckDB runs a query is replaced by DuckDB's own
("Query interrupted"), so a stop can surface as an ordinary error; `sigterm_arrived()` tells
the two apart (lineage.finishing marks such a run `interrupted`). It reads the signal wakeup
pipe, which the interpreter writes for every signal whichever Python handler is installed.
Prefect's handler can also raise where Prefect's own code swallows it (a build then ran on
to the end and exited 0): when, `GRACE` seconds after a SIGTERM, no run has begun to stop
(`note_stop`, which lineage.finishing calls) and our handler has not run, the watcher sends
the main thread SIGTERM again, each second until a run stops.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator


_SECRET_KEY = re.compile(r"(api[_-]?key|token|password|passwd|secret|credential|auth)", re.I)
_URL_CREDS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s:]+:[^/@\s]+@", re.I)


def redact(value: object) -> object:
    """Replace secrets (API keys, tokens, passwords, URL credentials) before storing a config."""
    if isinstance(value, dict):
        return {k: ("***REDACTED***" if _SECRET_KEY.search(str(k)) and v not in (None, "")
                    else redact(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return _URL_CREDS.sub(r"\g<scheme>***REDACTED***@", value)
    return value


def code_version() -> str:
    """The git commit of the code when run from a checkout, else the package version."""
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return "git:" + out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from importlib.metadata import version
        return "hardqa " + version("hardqa")
    except Exception:  # noqa: BLE001 - metadata is optional
        return "unknown"


def this_process() -> tuple[int, str]:
    """(pid, host) to store in a new run row."""
    return os.getpid(), socket.gethostname()


def process_gone(pid: int, started_at: dt.datetime) -> bool:
    """True when no process `pid` exists any more, or `pid` now names a process that began
    after the run started (the pid was reused). A zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, owned by another user
        pass
    state, began = _proc_stat(pid)
    if state == "Z":
        return True
    return began is not None and began > started_at.timestamp() + 1.0


def _proc_stat(pid: int) -> tuple[str | None, float | None]:
    """(state, start time as a Unix timestamp) from /proc on Linux; (None, None) elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None, None
    fields = stat[stat.rindex(")") + 2:].split()  # fields[0] is field 3 (state) of proc(5)
    return fields[0], boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


class _Watch:
    """Process-wide, as signals are: whether a SIGTERM came within the current scope, and
    whether a scope is active."""

    sigterm: bool = False
    active: bool = False
    stopping: bool = False  # a run began to stop, or our handler raised, since the SIGTERM
    pipe: int | None = None  # the wakeup pipe's read end (non-blocking)


_WATCH = _Watch()
_WAKE = signal.SIGWINCH  # ignored by default; here only to wake the main thread
GRACE = 2.0  # seconds a SIGTERM may take to reach a run or our handler before it is resent


def _raise_interrupt(signum, frame) -> None:
    _WATCH.sigterm = _WATCH.stopping = True
    raise KeyboardInterrupt


def note_stop() -> None:
    """A run is stopping because the process was asked to: the stop was not swallowed."""
    _WATCH.stopping = True


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt meanwhile (only the main thread may set handlers;
    elsewhere this does nothing). A SIGTERM that the kernel hands to another thread leaves
    the main thread asleep in a blocking wait (a future's result, a lock) until the wait
    ends: a watcher thread sees it in the wakeup pipe and wakes the main thread, which then
    runs the handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    old_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    old_wake = signal.signal(_WAKE, lambda signum, frame: None)
    outer = (_WATCH.active, _WATCH.pipe)
    _WATCH.active, _WATCH.pipe, _WATCH.sigterm = True, read, _WATCH.sigterm and outer[0]
    _WATCH.stopping = _WATCH.stopping and outer[0]
    watcher = threading.Thread(target=_watch, args=(read, threading.main_thread().ident),
                               name="sigterm-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.set_wakeup_fd(old_fd)
        signal.signal(_WAKE, old_wake)
        os.close(write)  # the watcher reads the end of the pipe and returns
        watcher.join(timeout=1.0)
        os.close(read)
        _WATCH.active, _WATCH.pipe = outer


def _watch(read: int, main: int | None) -> None:
    """Until the pipe closes: on a SIGTERM byte, note it and wake the main thread; insist
    if the stop has not begun `GRACE` seconds later."""
    deadline = None
    while True:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([read], [], [], wait)[0]:
            deadline = _insist(main)
            continue
        try:
            chunk = os.read(read, 512)
        except BlockingIOError:  # sigterm_arrived read it first
            continue
        if not chunk:
            return
        if signal.SIGTERM in chunk and main is not None:
            _WATCH.sigterm = True
            deadline = deadline or time.monotonic() + GRACE
            signal.pthread_kill(main, _WAKE)


def _insist(main: int | None) -> float | None:
    """The SIGTERM was swallowed (nothing began to stop): send it to the main thread again (a
    real signal: `_thread.interrupt_main` went unheard; one still pending coalesces with it),
    a second later again while nothing stops. Returns when to look again, None once the stop
    is under way."""
    if not _WATCH.active or _WATCH.stopping or main is None:
        return None
    signal.pthread_kill(main, signal.SIGTERM)
    return time.monotonic() + 1.0


def sigterm_arrived() -> bool:
    """Has a SIGTERM arrived within the current `sigterm_interrupts()`, whichever handler
    (ours, Prefect's) was installed when it did? False outside one."""
    if _WATCH.pipe is not None:
        with contextlib.suppress(BlockingIOError):
            if signal.SIGTERM in os.read(_WATCH.pipe, 512):
                _WATCH.sigterm = True
    return _WATCH.active and _WATCH.sigterm
