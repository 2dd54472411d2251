"""Mathematical answer equivalence through math-verify, with a timeout.

math-verify bounds parsing and comparison with ``signal.alarm``, which works
only in the main thread. Off the main thread we hand it no timeout (it would
raise) and run the comparison in a worker thread that we wait on with a
deadline instead; a comparison that overruns raises :class:`MathTimeout` so the
caller records an ``error``, never a silent zero.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import re
import threading
import time
from typing import Any, Mapping

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 5
_POOL = None


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
                    timeout_s: int = DEFAULT_TIMEOUT_S) -> bool:
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
    global _POOL
    if _POOL is None:
        _POOL = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="math-verify")
    fut = _POOL.submit(_compare, pred, gold, options, None)
    try:
        return fut.result(timeout=timeout_s)
    except cf.TimeoutError as exc:
        # The worker cannot be killed; it finishes in the background.
        raise MathTimeout(f"math-verify timed out after {timeout_s}s (threaded)") from exc


def looks_mathematical(text: str) -> bool:
    """Cheap test for answers that math-verify should judge (LaTeX or bare numbers/expressions)."""
    t = text.strip()
    if not t:
        return False
    if "\\" in t or "$" in t or "^" in t:
        return True
    letters = sum(ch.isalpha() for ch in t)
    return letters <= 1 and any(ch.isdigit() for ch in t)
