"""Which episode failures are systematic, and the one line that names an exception.

An inference engine that cannot be reached, or whose process died (vLLM's `EngineDeadError`:
killed for memory, say), fails every episode alike (unlike an error in one response), so the
controller, the trainer and `datagen eval` stop on it with one clear line.
"""

from __future__ import annotations

import sys

__all__ = ["describe", "engine_unreachable", "unreachable_message"]


def engine_unreachable(exc: BaseException | None) -> bool:
    """Did `exc` (or an exception it was raised from) fail to connect to the inference engine,
    or find its process dead?

    Such a failure is systematic (every episode will meet it), unlike an error in one
    response.

    >>> engine_unreachable(RuntimeError("boom")), engine_unreachable(ConnectionRefusedError())
    (False, True)
    """
    return _connect_error(exc) is not None


def unreachable_message(exc: BaseException) -> str:
    """'the inference engine is unreachable (ConnectError: ... at URL)' for one-line errors;
    'the inference engine died (EngineDeadError: ...)' for a dead one."""
    found = _connect_error(exc) or exc
    if isinstance(found, _dead_engine()):
        return f"the inference engine died ({describe(found)})"
    httpx = sys.modules.get("httpx")
    where = ""
    if httpx is not None and isinstance(found, httpx.RequestError):
        try:
            where = f" at {found.request.url}"
        except RuntimeError:                    # an httpx error raised without its request
            pass
    return f"the inference engine is unreachable ({describe(found)}{where})"


def _connect_error(exc: BaseException | None) -> BaseException | None:
    """The connect failure or dead engine in `exc`'s cause/context chain (a wrapped one
    counts), or None."""
    httpx = sys.modules.get("httpx")    # only loaded where a remote engine is used
    connect = ((ConnectionError,) + ((httpx.ConnectError, httpx.ConnectTimeout) if httpx else ())
               + _dead_engine())
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, connect):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _dead_engine() -> tuple[type, ...]:
    """vLLM's `EngineDeadError` where vLLM runs in-process (its module loaded), else none."""
    vllm = sys.modules.get("vllm.v1.engine.exceptions")
    return (vllm.EngineDeadError,) if vllm else ()


def describe(exc: BaseException) -> str:
    """`Type: first line of the message`, for one-line logs and errors."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
