"""Math comparisons off the main thread run in a worker process per thread, killed on overrun."""

import gc
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from verifiers.mathcheck import MathTimeout, math_equivalent

pytestmark = pytest.mark.integration  # each calling thread starts a worker process

# Each keeps sympy busy for minutes (`(x+2)^{700}` alone takes > 5 s); distinct bases, so
# none could be answered from a cache that an earlier one filled.
HUNG = [(f"$(x+{k})^{{2000}}$", f"$(x+{k + 20})^{{2000}}$") for k in range(2, 10)]
NORMAL = [("\\frac{1}{2}", "0.5", True), ("3.1416", "3.14159", False),
          ("$x^2$", "$x \\cdot x$", True)]


def _outcome(pred, gold, timeout_s):
    try:
        return math_equivalent(pred, gold, timeout_s=timeout_s)
    except MathTimeout:
        return "timeout"


def _hung_then_normal(hung):
    """What a thread sees: its hung comparisons time out, the normal ones after them answer."""
    out = [_outcome(p, g, 1) for p, g in hung]
    return out + [_outcome(p, g, 5) for p, g, _ in NORMAL]


def test_hung_comparisons_do_not_hold_up_later_ones():
    # Four hung comparisons in all, two in a row on each of two threads: the old shared pool
    # had four threads, and each stuck sympy call kept one, so what came next timed out.
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(_hung_then_normal, [HUNG[0:2], HUNG[2:4]]))
    want = ["timeout", "timeout"] + [expected for _, _, expected in NORMAL]
    assert results == [want, want]


def test_a_threads_worker_goes_away_with_the_thread():
    seen = {}

    def work():
        from verifiers import mathcheck
        seen["answer"] = math_equivalent("\\frac{1}{2}", "0.5")
        seen["pid"] = mathcheck._THREAD.worker.proc.pid

    t = threading.Thread(target=work)
    t.start()
    t.join(120)
    gc.collect()
    assert seen["answer"] is True
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left behind
        os.kill(seen["pid"], 0)


def test_a_bad_option_off_the_main_thread_is_the_same_error_as_on_it():
    with pytest.raises(ValueError, match="unknown math match type"):
        math_equivalent("1", "1", {"match_types": ["roman"]})
    with ThreadPoolExecutor(1) as pool:
        with pytest.raises(ValueError, match="unknown math match type"):
            pool.submit(math_equivalent, "1", "1", {"match_types": ["roman"]}).result()

