"""Orphan reaper: kill a process's helper processes once it dies without stopping them.

vLLM runs its engine core and its worker as child processes of the trainer. A trainer killed
with SIGKILL (the kernel's OOM killer, `kill -9`) never shuts them down: they live on,
reparented to init, holding ~4 GB of a 24 GB machine, so the resumed run is the next one the
OOM killer takes. `watch` starts a small separate process (this file run as a script: the
standard library only, no package import) that polls the owner and, once it is gone, sends
SIGKILL to each helper that is still the same process: a pid names a process together with
its start time (/proc/PID/stat), so a pid reused by another program is left alone. The owner
stops the reaper when it shuts its helpers down itself (`stop`). Linux only (/proc);
elsewhere `watch` starts nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.5


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields from the state on (field 3), None when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), None when it is gone or a zombie:
    with the pid it names one process for good."""
    fields = _stat(pid)
    return fields[19] if fields and fields[0] not in ("Z", "X") else None


def descendants(pid: int) -> list[int]:
    """Every live process below `pid`, from each process's parent in /proc (no psutil)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = _stat(int(entry.name))
        if fields:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def watch(helpers: list[int]) -> subprocess.Popen | None:
    """Kill `helpers` (this process's children) once this process dies, however it dies."""
    marks = [f"{p}:{t}" for p in helpers if (t := start_time(p))]
    me = start_time(os.getpid())
    if not marks or me is None:
        return None
    return subprocess.Popen([sys.executable, "-I", __file__, str(os.getpid()), me, *marks],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def stop(reaper: subprocess.Popen | None) -> None:
    """The owner stopped its helpers itself: the reaper has nothing left to do."""
    if reaper is not None and reaper.poll() is None:
        reaper.kill()
        reaper.wait()


def reap(owner: int, born: str, marks: list[str]) -> int:
    """Wait for `owner` to die, then kill every helper still alive; how many were killed."""
    while start_time(owner) == born:
        time.sleep(POLL_S)
    killed = 0
    for mark in marks:
        pid, t = mark.split(":")
        if start_time(int(pid)) == t:
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


if __name__ == "__main__":
    reap(int(sys.argv[1]), sys.argv[2], sys.argv[3:])
