"""Mathematical answer equivalence through math-verify, with a timeout.

math-verify bounds parsing and comparison with ``signal.alarm``, which works
only in the main thread: there the comparison runs in-process under that alarm.
Off the main thread (a thread pool, a flow's task runner) it runs in a worker
process owned by the calling thread, which is killed and restarted when a
comparison overruns its deadline: a sympy call that never returns cannot keep a
thread and a core of ours, so the comparisons after it still answer in time.
Either way an overrun raises :class:`MathTimeout`, so the caller records an
``error``, never a silent zero.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import subprocess
import sys
import threading
import time
import weakref
from typing import Any, Mapping

log = logging.getLogger(__name__)

MATH_TIMEOUT_S = 5
WORKER_START_TIMEOUT_S = 120  # a fresh worker imports math-verify and sympy (~1 s idle)


class MathTimeout(TimeoutError):
    """math-verify did not finish within the timeout."""


def _extraction_config(match_types: Any) -> list | None:
    """The extraction targets Math-Verify's own test helper builds for ``match_types``.

    ``None`` (or the string "default parse()") means math-verify's defaults.
    """
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    if match_types is None or isinstance(match_types, str):
        return None
    targets = []
    for kind in match_types:
        if kind == "latex":
            targets.append(LatexExtractionConfig(boxed_match_priority=0))
        elif kind == "expr":
            targets.append(ExprExtractionConfig())
        else:
            raise ValueError(f"unknown math match type {kind!r}; use 'latex' or 'expr'")
    return targets


def _compare(pred: str, gold: str, options: Mapping[str, Any], timeout: int | None) -> bool:
    """math-verify's parse + verify. Its timeouts raise :class:`MathTimeout` (left to itself it
    logs them and answers False, which would turn a timeout into a silent zero); an
    expression it cannot parse or compare is unequal, as in math-verify itself."""
    from math_verify import parse, verify
    from math_verify.errors import TimeoutException

    targets = _extraction_config(options.get("match_types"))
    kwargs: dict[str, Any] = {"parsing_timeout": timeout, "raise_on_error": True}
    if targets is not None:
        kwargs["extraction_config"] = targets
    try:
        gold_parsed = _within(timeout, _or_empty, parse, gold, **kwargs)
        pred_parsed = _within(timeout, _or_empty, parse, pred, **kwargs)
        return _within(
            timeout, _or_false, verify, gold_parsed, pred_parsed,
            float_rounding=int(options.get("precision", 6)),
            strict=bool(options.get("strict", True)),
            allow_set_relation_comp=bool(options.get("allow_set_relation_comp", False)),
            timeout_seconds=timeout, raise_on_error=True)
    except TimeoutException as exc:
        raise MathTimeout(f"math-verify timed out after {timeout}s") from exc


# The alarm's exception can be lost: when SIGALRM arrives while Python code runs inside a
# garbage-collector callback (hypothesis installs one; profilers do too), the exception is
# "ignored" there and math-verify runs on to the end. A step that outlived its timeout by
# more than the alarm's one-second grain is therefore a timeout all the same.
_ALARM_GRAIN_S = 1.0


def _within(timeout: int | None, fn, *args, **kwargs):
    started = time.monotonic()
    result = fn(*args, **kwargs)
    took = time.monotonic() - started
    if timeout is not None and took > timeout + _ALARM_GRAIN_S:
        raise MathTimeout(f"math-verify took {took:.1f}s, over its {timeout}s timeout "
                          "(the timeout alarm was lost)")
    return result


def _or_empty(parse, text: str, **kwargs) -> list:
    try:
        return parse(text, **kwargs)
    except Exception:  # not a timeout: parse again the lenient way (string fallbacks included)
        log.debug("math-verify could not parse %r strictly", text[:80], exc_info=True)
        return parse(text, **{**kwargs, "raise_on_error": False})


def _or_false(verify, gold: list, pred: list, **kwargs) -> bool:
    try:
        return bool(verify(gold, pred, **kwargs))
    except Exception:  # not a timeout: one pair could not be compared; let math-verify
        # compare the remaining pairs its lenient way (e.g. the string forms)
        log.debug("math-verify could not compare strictly", exc_info=True)
        return bool(verify(gold, pred, **{**kwargs, "raise_on_error": False}))


def math_equivalent(pred: str, gold: str, options: Mapping[str, Any] | None = None,
                    timeout_s: int = MATH_TIMEOUT_S) -> bool:
    """True when ``pred`` and ``gold`` denote the same mathematical object.

    ``options`` are Math-Verify's per-case options (``match_types``,
    ``precision``, ``strict``, ``allow_set_relation_comp``), passed through.

    >>> math_equivalent("\\\\frac{1}{2}", "0.5")
    True
    """
    options = dict(options or {})
    if options.get("match_types") is None or isinstance(options.get("match_types"), str):
        seq = _ordered_sequences(pred, gold)
        if seq is not None:
            return len(seq[0]) == len(seq[1]) and all(
                math_equivalent(p, g, options, timeout_s) for p, g in zip(*seq))
        pred, gold = _delimit(pred), _delimit(gold)
    if threading.current_thread() is threading.main_thread():
        return _compare(pred, gold, options, timeout_s)
    return _compare_off_main(pred, gold, options, timeout_s)


_DELIMITED = re.compile(r"\$|\\boxed|\\\(|\\\[")
_BRACKETS = re.compile(r"[()\[\]{}]")


def _delimit(text: str) -> str:
    """Wrap a bare answer ("\\frac34i", "10") in $...$: math-verify only reads LaTeX it can anchor."""
    t = text.replace("\\$", "").strip()  # an escaped dollar is a currency sign
    if not t or "\n" in t or _DELIMITED.search(t):
        return text
    return f"${t}$"


def _ordered_sequences(pred: str, gold: str) -> tuple[list[str], list[str]] | None:
    """Both sides bare comma lists (no brackets, so no set or interval notation)?

    Such a list is compared item by item in order, as the Hendrycks MATH and
    Qwen/AReaL graders do; ``\\{...\\}`` or brackets keep set/tuple semantics.
    """
    def items(t: str) -> list[str] | None:
        t = t.strip().strip("$").strip()
        if "," not in t or _BRACKETS.search(t) or _DELIMITED.search(t):
            return None
        parts = [x.strip() for x in t.split(",")]
        if any(re.fullmatch(r"\d{3}", x) for x in parts[1:]):
            return None  # thousands separators, not a list
        return parts if all(parts) else None

    p, g = items(pred), items(gold)
    return (p, g) if p is not None and g is not None else None


def _compare_off_main(pred: str, gold: str, options: dict, timeout_s: int) -> bool:
    worker = _THREAD.worker
    # A forked child must not talk to its parent's worker (dropping it there kills nothing:
    # the child's Popen cannot wait on a process that is not its own child).
    if worker is None or worker.pid_owner != os.getpid():
        worker = _THREAD.worker = _Worker()
    return worker.compare(pred, gold, options, timeout_s)


class _ThreadWorker(threading.local):
    """One worker per calling thread: no pool shared between threads, nothing to lock, and
    the worker goes away with its thread (the thread-local is dropped, its finalizer kills
    it). None until the thread's first comparison."""

    worker: "_Worker | None" = None


_THREAD = _ThreadWorker()


_WORKER_MAIN = ("import importlib.util as u, sys; s = u.spec_from_file_location('mathcheck', "
                "sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); m._serve()")


class _Worker:
    """A child process running `_serve`: one comparison per JSON line, killed on overrun."""

    def __init__(self) -> None:
        self.pid_owner = os.getpid()
        self.proc: subprocess.Popen | None = None
        self._buf = b""
        self._finalizer = None
        self._start()

    def _start(self) -> None:
        # This file loaded by path: the child runs this very code without importing the
        # `verifiers` package (pyarrow, duckdb: twice the memory, a slower restart).
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER_MAIN, __file__],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self._buf = b""
        self._ready = False
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _kill, self.proc)

    def _restart(self) -> None:
        _kill(self.proc)
        self._start()  # at once: its imports overlap with whatever the caller does next

    def compare(self, pred: str, gold: str, options: dict, timeout_s: int) -> bool:
        if self.proc.poll() is not None:  # it died between calls: start afresh
            self._restart()
        if not self._ready:  # start-up is not part of a comparison's time
            self._read_line(WORKER_START_TIMEOUT_S, "start")
            self._ready = True
        request = json.dumps({"pred": pred, "gold": gold, "options": options}) + "\n"
        try:
            self.proc.stdin.write(request.encode())
            reply = json.loads(self._read_line(timeout_s, "compare"))
        except TimeoutError as exc:
            self._restart()
            raise MathTimeout(f"math-verify timed out after {timeout_s}s (threaded caller; "
                              "its worker process was killed and restarted)") from exc
        except (OSError, ValueError) as exc:  # a broken pipe or a garbled line: worker gone
            self._restart()
            raise RuntimeError(f"math-verify worker failed: {exc}") from exc
        if "error" in reply:
            raise (ValueError if reply["type"] == "ValueError" else RuntimeError)(reply["error"])
        return bool(reply["equal"])

    def _read_line(self, timeout_s: float, what: str) -> bytes:
        """One reply line within `timeout_s` (TimeoutError), or RuntimeError if the worker exits."""
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                if what == "start":
                    self._restart()
                    raise RuntimeError(f"math-verify worker not ready after {timeout_s}s")
                raise TimeoutError(what)
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.proc.wait()
                self._restart()
                raise RuntimeError(f"math-verify worker exited with code {code} during {what}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        stream.close()


def _serve() -> None:
    """The worker's loop: one JSON request per stdin line, one JSON reply per stdout line.

    It runs in its own main thread with no timeout of its own: the parent's deadline is the
    timeout, enforced by killing this process."""
    logging.disable(logging.CRITICAL)  # math-verify logs what it could not parse
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the replies
    _compare("$1$", "$1$", {}, None)  # imports and warms math-verify before "ready"

    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        req = json.loads(line)
        try:
            reply = {"equal": _compare(req["pred"], req["gold"], req["options"], None)}
        except Exception as exc:  # reported to the caller, who raises it there
            reply = {"error": f"{type(exc).__name__}: {exc}", "type": type(exc).__name__}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


def looks_mathematical(text: str) -> bool:
    """Cheap test for answers that math-verify should judge (LaTeX or bare numbers/expressions)."""
    t = text.strip()
    if not t:
        return False
    if "\\" in t or "$" in t or "^" in t:
        return True
    letters = sum(ch.isalpha() for ch in t)
    return letters <= 1 and any(ch.isdigit() for ch in t)
