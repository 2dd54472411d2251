"""Which process a run belongs to, and whether that process is still alive.

A run row is written `running` when it starts and updated when it ends; a process killed
with SIGKILL (or a machine that lost power) never updates it. Each run therefore records
its pid and host, and the next run of the same kind on the same host marks the rows whose
process is gone `interrupted`. Runs of other hosts are left alone: their liveness cannot be
checked from here. Also here: what a run row stores about the code and its config.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import socket
import subprocess
from pathlib import Path


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
