"""The model client against real loopback HTTP servers: parameters, n samples, faults,
retries, the circuit breaker, budgets, concurrency and the cache."""

from __future__ import annotations

import email.utils
import socket
import time

import pytest

from datagen.llm import (
    BudgetExceeded, ChatClient, ChatRequest, CircuitOpen, EndpointConfig,
)
from tests.llm.loopback import LoopbackLLM, Reply
from tests.llm.conftest import fast_endpoint, first_then, user


def test_parameters_reach_the_server_and_seed_can_be_turned_off(llm_server):
    llm_server.respond = lambda body: [f"s{i}" for i in range(body["n"])]
    req = ChatRequest(user("hello"), n=3, temperature=0.7, top_p=0.9, max_tokens=17,
                      stop=("\n\n",), seed=5)
    with ChatClient(fast_endpoint(llm_server.base_url)) as client:
        result = client.chat(req)
    assert result.status == "ok" and [s.text for s in result.samples] == ["s0", "s1", "s2"]
    body = llm_server.requests[-1]
    assert (body["n"], body["temperature"], body["top_p"], body["max_tokens"], body["stop"],
            body["seed"]) == (3, 0.7, 0.9, 17, ["\n\n"], 5)
    assert llm_server.models_requests == 1  # the preflight
    with ChatClient(fast_endpoint(llm_server.base_url, send_seed=False, cache=False)) as client:
        client.chat(req)
    assert "seed" not in llm_server.requests[-1]


def http_date_in(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


RETRIED = [
    ("timeout", lambda: Reply(delay_s=3.0)),
    ("timeout", lambda: Reply(trickle_s=0.2)),  # a body trickling past the deadline
    ("connection", lambda: Reply(reset=True)),
    ("http_429", lambda: Reply(status=429, body=b'{"error": "slow down"}',
                               headers={"Retry-After": "0.3"})),
    ("http_429", lambda: Reply(status=429, body=b"{}", headers={"Retry-After": http_date_in(1.5)})),
    ("http_5xx", lambda: Reply(status=500, body=b'{"error": {"message": "engine died"}}')),
    ("http_5xx", lambda: Reply(status=502, body=b"<html><title>502 Bad Gateway</title></html>")),
    ("connection", lambda: Reply(drop=True)),  # the server closed without a word
    # a 200 that is not a JSON reply: a proxy's or a server's hiccup, often gone next time
    ("invalid_body", lambda: Reply(body=b"upstream connect error or disconnect/reset")),
]


@pytest.mark.parametrize("code,make", RETRIED, ids=[f"{c}-{i}" for i, (c, _) in enumerate(RETRIED)])
def test_transient_faults_are_retried(llm_server, code, make):
    fault = make()
    llm_server.respond = first_then(fault)
    ep = fast_endpoint(llm_server.base_url, timeout_s=1.0)
    t0 = time.monotonic()
    with ChatClient(ep) as client:
        result = client.chat(ChatRequest(user("q")))
    assert (result.status, result.attempts, result.samples[0].text) == ("ok", 2, "fine")
    assert client.totals()["errors"] == {}
    if "Retry-After" in fault.headers:  # the server's wait was honoured, not the 10 ms backoff
        assert time.monotonic() - t0 >= 0.25


FAILED_AT_ONCE = [
    ("http_4xx", Reply(status=400, body=b'{"error": {"message": "bad request: max_tokens"}}')),
    ("http_4xx", Reply(status=404, body=b"no such route")),
    ("error_body", Reply(body=b'{"error": {"message": "CUDA out of memory"}}')),
    ("empty_choices", Reply(contents=[])),
    ("short_choices", Reply(contents=["a"], n_choices=1)),
    # broken UTF-8 comes from what the model wrote: asking again gets the same bytes
    ("invalid_utf8", Reply(body=b'{"choices": [{"message": {"content": "\xff\xfe"}}]}')),
]


@pytest.mark.parametrize("code,fault", FAILED_AT_ONCE, ids=[c for c, _ in FAILED_AT_ONCE])
def test_other_failures_fail_the_call_once_with_their_code(llm_server, code, fault):
    llm_server.respond = lambda body: fault
    with ChatClient(fast_endpoint(llm_server.base_url)) as client:
        result = client.chat(ChatRequest(user("q"), n=2))
    assert (result.status, result.error_code, result.attempts) == ("failed", code, 1)
    assert llm_server.count == 1 and client.totals()["errors"] == {code: 1}


def test_a_truncated_sample_fails_alone(llm_server):
    llm_server.respond = lambda body: Reply(contents=["whole", "cut off mid"],
                                            finish_reasons=["stop", "length"])
    with ChatClient(fast_endpoint(llm_server.base_url)) as client:
        result = client.chat(ChatRequest(user("q"), n=2))
    assert result.status == "ok" and [s.text for s in result.good] == ["whole"]
    assert result.samples[1].error.startswith("truncated")
    llm_server.respond = lambda body: Reply(contents=["cut"], finish_reasons=["length"])
    with ChatClient(fast_endpoint(llm_server.base_url, cache=False)) as client:
        assert client.chat(ChatRequest(user("q2"))).error_code == "truncated"


def test_retries_stop_at_max_retries_and_at_the_call_deadline(llm_server):
    llm_server.respond = lambda body: Reply(status=503, body=b"down")
    with ChatClient(fast_endpoint(llm_server.base_url, max_retries=2)) as client:
        result = client.chat(ChatRequest(user("q")))
    assert (result.error_code, result.attempts, llm_server.count) == ("http_5xx", 3, 3)
    llm_server.respond = lambda body: Reply(status=429, body=b"{}", headers={"Retry-After": "30"})
    t0 = time.monotonic()
    with ChatClient(fast_endpoint(llm_server.base_url, deadline_s=1.0)) as client:
        result = client.chat(ChatRequest(user("q")))
    assert result.error_code == "http_429" and time.monotonic() - t0 < 5


def test_dead_endpoint_trips_the_breaker_at_preflight():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    ep = fast_endpoint(f"http://127.0.0.1:{port}/v1")
    with ChatClient(ep) as client, pytest.raises(CircuitOpen) as err:
        client.chat_many([ChatRequest(user(f"q{i}")) for i in range(5)])
    message = str(err.value)
    assert "\n" not in message and "preflight" in message and f":{port}" in message
    assert client.totals()["failed"] == 5  # every item it cost is accounted for


def test_wrong_model_name_is_one_clear_line(llm_server):
    with ChatClient(fast_endpoint(llm_server.base_url, model="gpt-9")) as client:
        with pytest.raises(CircuitOpen, match="does not serve model 'gpt-9'.*loopback"):
            client.chat(ChatRequest(user("q")))
    assert llm_server.count == 0


def test_consecutive_failures_open_the_circuit(llm_server):
    llm_server.respond = lambda body: Reply(status=500, body=b"{}")
    ep = fast_endpoint(llm_server.base_url, max_consecutive_failures=20, max_concurrency=4)
    with ChatClient(ep) as client, pytest.raises(CircuitOpen, match="20 attempts in a row"):
        client.chat_many([ChatRequest(user(f"q{i}")) for i in range(50)])
    assert 20 <= llm_server.count < 20 + 4  # at most the ones already in flight


def test_budget_caps_stop_the_run(llm_server):
    with ChatClient(fast_endpoint(llm_server.base_url, max_calls=3)) as client:
        with pytest.raises(BudgetExceeded, match="max_calls=3"):
            client.chat_many([ChatRequest(user(f"q{i}")) for i in range(5)])
    assert llm_server.count == 3
    with ChatClient(fast_endpoint(llm_server.base_url, max_tokens=5, cache=False)) as client:
        client.chat(ChatRequest(user("a long enough prompt to spend the budget")))
        with pytest.raises(BudgetExceeded, match="tokens"):
            client.chat(ChatRequest(user("again")))


def test_concurrency_is_bounded_per_endpoint():
    with LoopbackLLM(latency_s=0.05) as server:
        with ChatClient(fast_endpoint(server.base_url, max_concurrency=5)) as client:
            results = client.chat_many([ChatRequest(user(f"q{i}")) for i in range(40)])
    # Five at once, never six (timings are left to the benchmark: this machine is shared).
    assert all(r.ok for r in results) and server.max_in_flight == 5


def test_cache_replays_identical_calls_and_new_rounds_draw_again(llm_server, tmp_path):
    reqs = [ChatRequest(user(f"q{i}"), n=2, temperature=1.0) for i in range(4)]
    with ChatClient(fast_endpoint(llm_server.base_url), cache_dir=tmp_path) as client:
        first = client.chat_many(reqs)
    with ChatClient(fast_endpoint(llm_server.base_url), cache_dir=tmp_path) as client:
        again = client.chat_many(reqs)
        assert llm_server.count == 4 and all(r.status == "cached" for r in again)
        assert [r.samples for r in again] == [r.samples for r in first]
        client.chat(ChatRequest(user("q0"), n=2, temperature=1.0, round=1))
        assert llm_server.count == 5
    off = fast_endpoint(llm_server.base_url, cache=False)
    with ChatClient(off, cache_dir=tmp_path) as client:
        assert client.chat(reqs[0]).status == "ok" and llm_server.count == 6


def test_failed_calls_are_not_cached(llm_server, tmp_path):
    llm_server.respond = first_then(Reply(status=400, body=b"{}"))
    with ChatClient(fast_endpoint(llm_server.base_url), cache_dir=tmp_path) as client:
        assert client.chat(ChatRequest(user("q"))).status == "failed"
        assert client.chat(ChatRequest(user("q"))).status == "ok"


def test_api_key_comes_from_the_named_variable_only(llm_server, monkeypatch):
    monkeypatch.setenv("HARDQA_TEST_KEY", "sk-secret-123")
    ep = fast_endpoint(llm_server.base_url, api_key_env="HARDQA_TEST_KEY")
    with ChatClient(ep) as client:
        client.chat(ChatRequest(user("q")))
    assert llm_server.last_headers["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret" not in ep.model_dump_json()
    monkeypatch.delenv("HARDQA_TEST_KEY")
    with pytest.raises(ValueError, match="HARDQA_TEST_KEY .*not set"):
        ChatClient(ep)


def test_endpoint_config_rejects_mistakes():
    with pytest.raises(ValueError, match="http://"):
        EndpointConfig(base_url="127.0.0.1:8000", model="m")
    assert EndpointConfig(base_url="http://h:8000/", model="m").base_url == "http://h:8000/v1"
    assert EndpointConfig(base_url="https://api.x/v2/", model="m").base_url == "https://api.x/v2"
    with pytest.raises(ValueError, match="extra"):
        EndpointConfig(base_url="http://x/v1", model="m", api_key="sk-no")
