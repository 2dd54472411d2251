"""How long to wait for an endpoint, and when to give up on it.

A flat two-minute attempt timeout let one hanging request in ten hold a composer thread for
two minutes, so a stage against a flaky server never ended. Instead:

- an attempt's ceiling follows from the work asked: `first_token_s + max_tokens /
  min_tokens_per_s` (a 48-token step gets seconds, a long answer more);
- below that ceiling, the timeout is learned: `latency_factor` x the p90 latency of the
  endpoint's recent successful attempts for the same purpose (never under `timeout_floor_s`);
  a purpose not seen enough yet borrows from all purposes, scaled by its max_tokens. A hang
  then costs about a second on a fast server. If the endpoint itself slows down, the
  attempts time out in a row and the learned timeout doubles each `BOOST_AFTER` of them, so a
  slower server is waited for instead of being given up on;
- the breaker opens on `max_consecutive_failures` failed attempts in a row, or when at least
  `max_failure_share` of the last `failure_window` attempts failed for a reason of the
  endpoint's (timeouts, 5xx, 429s, dropped connections, bodies that are not JSON: a
  mostly-failing endpoint whose rare successes reset the count in a row). A 4xx or an error
  object answers for its request, not for the endpoint, so it is left out of the window; while a share of attempts fail, a warning
  line says so at most every `WARN_EVERY_S` seconds (the stage is making progress, slowly).
"""

from __future__ import annotations

import collections
import logging
import math
import time

from datagen.llm.types import ChatRequest, EndpointConfig, LLMError

log = logging.getLogger(__name__)

MIN_SAMPLES = 10      # ok attempts (of a purpose, or of all) before a timeout is learned
BOOST_AFTER = 3       # timeouts in a row (no success between) that double the learned timeout
DECAY_AFTER = 20      # ok attempts in a row that halve the boost again
WARN_SHARE = 0.25     # a failure share of the window worth a warning
WARN_EVERY_S = 30.0


def attempt_cap(ep: EndpointConfig, req: ChatRequest) -> float:
    """The longest one attempt may take: the fixed `timeout_s`, else what the work needs at
    the slowest decoding rate accepted.

    >>> ep = EndpointConfig(base_url="http://h:1/v1", model="m")
    >>> attempt_cap(ep, ChatRequest(({"role": "user", "content": "q"},), max_tokens=48))
    32.0
    """
    if ep.timeout_s is not None:
        return ep.timeout_s
    return ep.first_token_s + req.max_tokens / ep.min_tokens_per_s


def call_deadline(ep: EndpointConfig, req: ChatRequest) -> float:
    """The longest one call may take, retries included: `deadline_s`, else three ceilings."""
    return ep.deadline_s if ep.deadline_s is not None else 3 * attempt_cap(ep, req)


class Latencies:
    """Recent successful attempt latencies per purpose, and the timeout they suggest."""

    def __init__(self, ep: EndpointConfig, keep: int = 200):
        self.ep, self.keep = ep, keep
        self._seen: dict[str, collections.deque] = {}
        self._per_token: collections.deque = collections.deque(maxlen=keep)  # s per max_token
        self._boost: collections.Counter = collections.Counter()
        self._timeouts: collections.Counter = collections.Counter()
        self._oks: collections.Counter = collections.Counter()

    def timeout(self, req: ChatRequest) -> float:
        """The timeout of the next attempt of `req`."""
        cap = attempt_cap(self.ep, req)
        if self.ep.timeout_s is not None or not self.ep.latency_factor:
            return cap
        seen = self._seen.get(req.purpose) or ()
        if len(seen) >= MIN_SAMPLES:
            typical = p90(seen)
        elif len(self._per_token) >= MIN_SAMPLES:
            typical = p90(self._per_token) * req.max_tokens
        else:
            return cap
        learned = self.ep.latency_factor * typical * 2 ** self._boost[req.purpose]
        return min(cap, max(self.ep.timeout_floor_s, learned))

    def ok(self, req: ChatRequest, seconds: float) -> None:
        purpose = req.purpose
        self._seen.setdefault(purpose, collections.deque(maxlen=self.keep)).append(seconds)
        self._per_token.append(seconds / req.max_tokens)
        self._timeouts[purpose] = 0
        self._oks[purpose] += 1
        if self._boost[purpose] and self._oks[purpose] >= DECAY_AFTER:
            self._boost[purpose] -= 1
            self._oks[purpose] = 0

    def timed_out(self, purpose: str) -> None:
        self._oks[purpose] = 0
        self._timeouts[purpose] += 1
        if self._timeouts[purpose] >= BOOST_AFTER:
            self._boost[purpose] = min(self._boost[purpose] + 1, 10)
            self._timeouts[purpose] = 0
            log.info("%s: %d timeouts in a row; waiting longer (x%d)", purpose, BOOST_AFTER,
                     2 ** self._boost[purpose])


def p90(values) -> float:
    """The 90th percentile (nearest rank).

    >>> p90(range(1, 11))
    9
    """
    ordered = sorted(values)
    return ordered[math.ceil(0.9 * len(ordered)) - 1]


class Health:
    """The breaker: failed attempts in a row, and the failure share of the last attempts."""

    def __init__(self, ep: EndpointConfig):
        self.ep = ep
        self.in_a_row = 0
        self.window: collections.deque = collections.deque(maxlen=ep.failure_window)
        self.tripped = ""
        self.answered = self.attempts = 0
        self._warned_at = 0.0

    def ok(self) -> None:
        self.in_a_row = 0
        self.window.append("")
        self.answered += 1
        self.attempts += 1

    def failed(self, exc: LLMError) -> None:
        """Count a failed attempt; opens the breaker (sets `tripped`) when it is time."""
        self.in_a_row += 1
        self.attempts += 1
        if exc.retryable:
            self.window.append(exc.code)
        failed = sum(1 for c in self.window if c)
        if self.tripped:
            return
        if self.in_a_row >= self.ep.max_consecutive_failures:
            self.tripped = (f"LLM endpoint {self.ep.base_url} failed {self.in_a_row} attempts "
                            f"in a row (last: {exc}); stopping")
        elif len(self.window) == self.window.maxlen and failed >= self.ep.max_failure_share * len(self.window):
            self.tripped = (f"LLM endpoint {self.ep.base_url} is mostly failing: {failed} of "
                            f"the last {len(self.window)} attempts failed ({self.codes()}); stopping")
        if self.tripped:  # the stop carries the line; the CLI prints it once
            log.info(self.tripped)
        elif len(self.window) >= 10 and failed >= WARN_SHARE * len(self.window) \
                and time.monotonic() - self._warned_at > WARN_EVERY_S:
            self._warned_at = time.monotonic()
            log.warning("LLM endpoint %s is flaky: %d of the last %d attempts failed (%s); "
                        "retrying (%d of %d attempts answered so far)", self.ep.base_url, failed,
                        len(self.window), self.codes(), self.answered, self.attempts)

    def codes(self) -> str:
        """'timeout 12, http_5xx 3': the failures of the window by code, most first."""
        counts = collections.Counter(c for c in self.window if c)
        return ", ".join(f"{c} {k}" for c, k in counts.most_common())
