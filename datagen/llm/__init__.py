"""Model access: one client for every OpenAI-compatible endpoint (vLLM, SGLang, hosted APIs).

    types.py        EndpointConfig, ChatRequest, ChatResult, Sample, error types (no logic)
    client.py       ChatClient: bounded concurrency, retries, breaker, budget, repairs
    transport.py    one HTTP attempt; every failure becomes an LLMError with a code
    structured.py   JSON schema: response_format or prompt fallback; parse + validate
    cache.py        the on-disk answer cache under <warehouse>/cache/llm
    accounting.py   llm_calls rows and the totals for runs.summary
    loopback.py     a scripted OpenAI-compatible server on 127.0.0.1 (tests, benchmarks)
"""

from datagen.llm.client import ChatClient, resolve_api_key
from datagen.llm.types import (
    BudgetExceeded, ChatRequest, ChatResult, CircuitOpen, EndpointConfig, LLMError, LLMStop,
    Sample,
)

__all__ = [
    "ChatClient", "EndpointConfig", "ChatRequest", "ChatResult", "Sample", "LLMError",
    "LLMStop", "CircuitOpen", "BudgetExceeded", "resolve_api_key",
]
