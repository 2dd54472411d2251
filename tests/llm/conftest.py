"""Fixtures for the model client's tests: a scripted loopback endpoint and fast settings."""

from __future__ import annotations

import pytest

from datagen.llm import EndpointConfig
from tests.llm.loopback import LoopbackLLM


def fast_endpoint(base_url: str, **kw) -> EndpointConfig:
    """Short timeouts and backoffs so that retries cost milliseconds in tests."""
    defaults = dict(model="loopback", timeout_s=2.0, deadline_s=10.0, backoff_s=0.01,
                    backoff_max_s=0.05, max_retries=3)
    return EndpointConfig(base_url=base_url, **{**defaults, **kw})


@pytest.fixture
def llm_server():
    with LoopbackLLM() as server:
        yield server


def user(text: str) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": text},)


def first_then(fault, then="fine"):
    """A responder whose first chat request gets `fault`, every later one `then`."""
    calls = {"n": 0}

    def respond(body):
        calls["n"] += 1
        return fault if calls["n"] == 1 else then
    return respond
