"""`EndpointSpec`: which OpenAI-compatible model a stage talks to, and its budget.

Declared once here (pydantic only, light to import) and used by the build's `model:` section,
`ComposeConfig` and `BandConfig` (their endpoint fields), the CLI and training. The client's
full settings (`datagen.llm.EndpointConfig`: timeouts, retries) are made from it by
`client_config`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from datagen.llm import EndpointConfig

class EndpointSpec(BaseModel):
    """An OpenAI-compatible endpoint (e.g. `vllm serve`), the model there, and its budget."""

    model_config = ConfigDict(extra="forbid")
    endpoint: Optional[str] = Field(None, description="e.g. http://127.0.0.1:8000/v1")
    model: Optional[str] = Field(None, description="the model's name at the endpoint")
    api_key_env: Optional[str] = Field(None, description="environment variable with the key")
    max_concurrency: int = Field(8, ge=1, le=4096, description="requests in flight at once")
    max_calls: Optional[int] = Field(None, ge=1, description="budget per run: calls sent")
    max_tokens: Optional[int] = Field(None, ge=1, description="budget per run: tokens used")

    def has_endpoint(self) -> bool:
        return bool(self.endpoint and self.model)

    def endpoint_values(self) -> dict[str, object]:
        """The endpoint fields alone (what a stage config takes from the build's `model:`)."""
        return {k: getattr(self, k) for k in EndpointSpec.model_fields}


def client_config(spec: EndpointSpec, **settings: object) -> "EndpointConfig":
    """The model client's settings for `spec` (a bare http://host:port gets /v1)."""
    from datagen.llm import EndpointConfig
    return EndpointConfig(base_url=spec.endpoint, model=spec.model,
                          api_key_env=spec.api_key_env or "",
                          max_concurrency=spec.max_concurrency, max_calls=spec.max_calls,
                          max_tokens=spec.max_tokens, **settings)
