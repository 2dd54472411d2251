"""Bounded time against a bad endpoint (datagen/llm/health.py): timeouts that fit the work
and are learned from the latencies seen, a slower server waited for, a Retry-After longer
than the call may last, and the breaker on a mostly-failing endpoint."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from datagen.llm import ChatClient, ChatRequest, CircuitOpen, EndpointConfig
from tests.llm.conftest import user
from tests.llm.loopback import LoopbackLLM, Reply


def learning_endpoint(base_url: str, **kw) -> EndpointConfig:
    """No fixed timeout: the ceiling from max_tokens, the learned timeout below it."""
    defaults = dict(model="loopback", first_token_s=30.0, timeout_floor_s=0.2, backoff_s=0.01,
                    backoff_max_s=0.05, max_retries=3, cache=False)
    return EndpointConfig(base_url=base_url, **{**defaults, **kw})


class Every:
    """A responder whose every k-th request (once `on`) gets `fault`, the others `other`."""

    def __init__(self, k: int, fault, other="fine", on: bool = True):
        self.k, self.fault, self.other, self.on = k, fault, other, on
        self._counter, self._lock = itertools.count(1), threading.Lock()

    def __call__(self, body):
        with self._lock:
            i = next(self._counter)
        return self.fault if self.on and i % self.k == 0 else self.other


def test_hanging_requests_are_cut_at_the_learned_timeout_and_retried():
    """Every 5th request hangs 30 s; after 20 quick answers an attempt gets 8 x their p90
    (floored at 0.2 s), not the 30 s ceiling: 60 calls end in seconds, all answered."""
    hangs = Every(5, Reply(delay_s=30.0), on=False)
    with LoopbackLLM(hangs) as server:
        with ChatClient(learning_endpoint(server.base_url, max_concurrency=2)) as client:
            client.chat_many([ChatRequest(user(f"learn{i}")) for i in range(20)])
            hangs.on = True
            t0 = time.monotonic()
            results = client.chat_many([ChatRequest(user(f"q{i}")) for i in range(60)])
            took = time.monotonic() - t0
    assert all(r.ok for r in results) and sum(r.attempts > 1 for r in results) >= 8
    assert took < 15, took  # 12+ hangs x 30 s at the flat timeout would take minutes


def test_the_first_hang_waits_out_the_ceiling_that_the_work_sets():
    """Before anything is learned a hang is waited for up to first_token_s + max_tokens /
    min_tokens_per_s: 0.3 + 16 / 20 = 1.1 s here."""
    with LoopbackLLM(lambda body: Reply(delay_s=30.0)) as server:
        ep = learning_endpoint(server.base_url, first_token_s=0.3, min_tokens_per_s=20.0,
                               max_retries=0)
        with ChatClient(ep) as client:
            t0 = time.monotonic()
            result = client.chat(ChatRequest(user("q"), max_tokens=16))
    assert result.error_code == "timeout" and 1.0 < time.monotonic() - t0 < 3.0


def test_a_server_that_slows_down_is_waited_for():
    """Learned at ~0 s, then every answer takes 0.5 s: timeouts in a row double the learned
    timeout until the answers fit; the calls succeed and the breaker stays shut."""
    slow = {"on": False}
    with LoopbackLLM(lambda body: Reply(contents=["fine"], delay_s=0.5 if slow["on"] else 0)) as server:
        with ChatClient(learning_endpoint(server.base_url, timeout_floor_s=0.05,
                                          max_retries=6)) as client:
            for i in range(20):
                client.chat(ChatRequest(user(f"learn{i}")))
            slow["on"] = True
            results = [client.chat(ChatRequest(user(f"q{i}"))) for i in range(4)]
    assert all(r.ok for r in results) and results[0].attempts > 1, results[0]
    assert results[-1].attempts == 1  # once learned, the slower server is simply waited for


def test_a_retry_after_longer_than_the_call_may_last_fails_it_at_once():
    with LoopbackLLM(lambda body: Reply(status=429, body=b"{}",
                                        headers={"Retry-After": "3600"})) as server:
        with ChatClient(learning_endpoint(server.base_url, deadline_s=5.0)) as client:
            t0 = time.monotonic()
            result = client.chat(ChatRequest(user("q")))
    assert (result.error_code, result.attempts) == ("http_429", 1)
    assert time.monotonic() - t0 < 2


def test_a_mostly_failing_endpoint_opens_the_breaker_with_one_line():
    """Nine requests in ten fail: never 20 in a row, but 40+ of the last 50 attempts."""
    with LoopbackLLM(Every(10, "fine", other=Reply(status=500, body=b"<html/>"))) as server:
        ep = learning_endpoint(server.base_url, max_concurrency=2, max_retries=2)
        with ChatClient(ep) as client, pytest.raises(CircuitOpen) as err:
            client.chat_many([ChatRequest(user(f"q{i}")) for i in range(200)])
        totals = client.totals()
    message = str(err.value)
    assert "\n" not in message and "mostly failing" in message and "http_5xx" in message
    assert 50 <= server.count <= 50 + 2 + 4  # the window, plus what was in flight
    assert totals["calls"] == 200  # every call has its row: answered, failed or stopped
    assert totals["attempts"] == server.count  # a call cut short counts the attempts it sent

