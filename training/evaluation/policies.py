"""Policies for `datagen eval` and `datagen band --solver policy:`, built from a model folder
(a run's checkpoint or any HF model dir) or an OpenAI-compatible endpoint.

One loader, `load_policy`, for every command that runs a checkpoint: the checkpoint's own
tokenizer (`training.models.load_tokenizer`, which keeps a page BPE's digit groups and a
word-level tokenizer that AutoTokenizer would replace) and the in-process inference engine.
A checkpoint inside a run is evaluated with the agent settings it was trained with
(`run_agent_settings`). User mistakes raise `PolicyError` (a ValueError: one line in the CLI).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from datagen.tools import PageTools
    from training.search_env.agent import AgentSettings
    from difficulty.solvers.policy import PolicySolver
    from training.engines.hf_engine import HFInferenceEngine
    from training.evaluate import Policy

__all__ = ["LoadedPolicy", "PolicyError", "checkpoint_policy", "eval_policy", "load_policy",
           "policy_name", "policy_solver", "run_agent_settings", "settings_note"]


class PolicyError(ValueError):
    """A policy the user named cannot be built (not a model folder, a broken run config)."""


@dataclass
class LoadedPolicy:
    """A model folder's tokenizer and in-process inference engine."""

    folder: Path
    tokenizer: "PreTrainedTokenizerBase"
    engine: "HFInferenceEngine"

    def close(self) -> None:
        self.engine.close()


def load_policy(folder: str | Path, what: str = "policy") -> LoadedPolicy:
    """The checkpoint at `folder` with its own tokenizer; `what` names the option in errors."""
    from training.engines.hf_engine import HFInferenceEngine
    from training.models import load_tokenizer

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise PolicyError(f"{what}: {folder} is not a model folder (no config.json); give a "
                          "run's final/ or weights/vN folder, or an HF model dir")
    return LoadedPolicy(folder, load_tokenizer(folder), HFInferenceEngine(folder))


def run_agent_settings(checkpoint: Path) -> "AgentSettings":
    """The agent settings a checkpoint was trained with (search results shown, snippet form,
    budgets, reward mode), from its run's config.yaml (RUN/final or RUN/weights/vN), so it is
    evaluated in the environment it learned; {} for a model folder outside a run."""
    from training.search_env.agent import AgentSettings, agent_settings
    from training.config import load_config

    here = checkpoint.resolve()
    found = [d / "config.yaml" for d in (here.parent, here.parent.parent)
             if (d / "config.yaml").is_file() and (d / "metrics.jsonl").exists()]
    if not found:
        return AgentSettings()
    try:
        return agent_settings(load_config(found[0]))
    except (ValueError, OSError) as exc:
        raise PolicyError(f"checkpoint {checkpoint}: its run config {found[0]} does not load: "
                          f"{exc}") from exc


def settings_note(settings: "AgentSettings", path: Path) -> str:
    """One line saying where a checkpoint's agent settings came from (for the CLI to print)."""
    if settings:
        return f"agent settings from the run config: {settings}"
    return ("agent settings: the defaults (no run config.yaml and metrics.jsonl beside or above "
            f"{path}; a run's own settings apply to RUN/final, RUN/warm_start, RUN/weights/vN)")


def checkpoint_policy(path: Path, tools: "PageTools", settings: "AgentSettings", *,
                      use_tools: bool = True, max_turns: int | None = None,
                      temperature: float = 1.0, seed: int = 0
                      ) -> tuple["Policy", Callable[[], None]]:
    """(policy, close): the training agent with `settings` over a checkpoint."""
    from training.search_env.agent import SearchAgentWorkflow
    from training.evaluate import CheckpointPolicy

    loaded = load_policy(path, "--policy checkpoint:")
    settings = {**settings, "max_turns": max_turns or settings.get("max_turns", 4)}
    agent = SearchAgentWorkflow(loaded.tokenizer, tools, use_tools=use_tools,
                                temperature=temperature, rng=random.Random(seed), **settings)
    return CheckpointPolicy(agent, loaded.engine), loaded.close


def eval_policy(spec: str, tools: "PageTools", *, use_tools: bool = True,
                max_turns: int | None = None, endpoint: str | None = None,
                model: str | None = None, temperature: float = 1.0, seed: int = 0
                ) -> tuple["Policy", Callable[[], None]]:
    """(policy, close) for `datagen eval --policy` oracle | random | endpoint (a checkpoint:
    see `checkpoint_policy`, whose settings the CLI reports first)."""
    from training import evaluate as ev

    if spec == "oracle":
        return ev.OraclePolicy(tools), lambda: None
    if spec == "random":
        return ev.RandomPolicy(tools, max_turns or 4, seed), lambda: None
    if spec == "endpoint":
        if not (endpoint and model):
            raise PolicyError("--policy endpoint needs --endpoint URL and --model NAME")
        from datagen.llm import ChatClient, EndpointConfig
        from training.search_env.agent import SearchAgentWorkflow

        client = ChatClient(EndpointConfig(base_url=endpoint, model=model))
        # The settings `datagen eval` always gave endpoints: 256 tokens a turn, 3 hits of
        # 240 characters; no token budget (the endpoint holds its own context).
        agent = SearchAgentWorkflow(None, tools, use_tools=use_tools, max_turns=max_turns or 4,
                                    max_new_tokens=256, search_k=3, snippet_chars=240,
                                    temperature=temperature)
        return ev.EndpointPolicy(client, agent), client.close
    raise PolicyError(f"--policy {spec!r}: use checkpoint:PATH, endpoint, oracle or random")


def policy_name(folder: Path) -> str:
    """policy:<run>@v<N> for <run>/weights/vN, policy:<run>@final for <run>/final."""
    folder = folder.resolve()
    if folder.parent.name == "weights" and folder.name.startswith("v"):
        return f"policy:{folder.parent.parent.name}@{folder.name}"
    return f"policy:{folder.parent.name}@{folder.name}"


def policy_solver(folder: str | Path, max_new_tokens: int = 256,
                  temperature: float = 1.0) -> "PolicySolver":
    """A difficulty PolicySolver over a checkpoint (difficulty never imports training: the
    CLI builds it here and hands it to the band run). Its `close` stops the engine."""
    from difficulty.solvers.policy import PolicySolver
    from training.api import GenerationRequest
    from training.models import chat_prompt_ids

    loaded = load_policy(folder, f"--solver policy:{folder}")
    tok = loaded.tokenizer

    def generate(prompts: list[str], n: int, seeds: list[list[int]]) -> list[list[str]]:
        reqs = [GenerationRequest(chat_prompt_ids(tok, prompt), max_new_tokens, temperature,
                                  seed=s) for prompt, row in zip(prompts, seeds) for s in row]
        texts = [tok.decode(r.output_ids, skip_special_tokens=True)
                 for r in loaded.engine.generate(reqs)]
        return [texts[i * n:(i + 1) * n] for i in range(len(prompts))]

    return PolicySolver(generate, policy_name(loaded.folder), loaded.close)
