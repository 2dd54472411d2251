"""Model access: one client for every OpenAI-compatible endpoint (vLLM, SGLang, hosted APIs).

The file tree is in datagen/README.md.
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
