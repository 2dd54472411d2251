"""Search agents for the tests, built the way a run builds them: the `agent:` config section
(AgentConfig, the one place its settings have defaults) over the page tools, and a policy's
sampling settings (in a run: rollout.max_new_tokens, temperature, reward)."""

from __future__ import annotations

import random

from training.config import AgentConfig
from training.search_env import SearchAgentWorkflow, SearchEnv

_ENV_SWITCHES = ("use_tools", "tool_latency", "tool_timeout_s")


def make_agent(tok, tools, *, max_new_tokens: int = 32, temperature: float = 1.0,
               reward_mode: str = "reward", seed: int = 0, seeded: bool = True,
               evidence=None, **settings) -> SearchAgentWorkflow:
    """An agent whose `settings` are AgentConfig keys (max_turns=3, search_k=1, ...) or the
    environment's switches (use_tools, tool_timeout_s)."""
    switches = {k: settings.pop(k) for k in _ENV_SWITCHES if k in settings}
    env = SearchEnv(AgentConfig(**settings), tools, **switches)
    return SearchAgentWorkflow(tok, env, max_new_tokens, temperature, reward_mode,
                               random.Random(seed), seeded, evidence or {})
