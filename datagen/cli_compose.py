"""CLI command of the compose stage: `datagen compose` (kept light to import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    ApiKeyEnvOpt, EndpointOpt, ModelOpt, WarehouseOpt, add_command, error_exit, read_config_section,
    user_errors,
)
from datagen.cli_model import wants_local_endpoint, with_local_endpoint


def register(app: typer.Typer) -> None:
    add_command(app, "compose", compose)


Backend = Annotated[Optional[str], typer.Option(
    "--backend", help="embedded (no model, the default) or llm.")]
Concurrency = Annotated[Optional[int], typer.Option(
    "--max-concurrency", min=1, help="Model calls in flight (llm backend).")]
NoCache = Annotated[bool, typer.Option(
    "--no-cache", help="Do not reuse cached model replies (llm backend).")]
MaxCalls = Annotated[Optional[int], typer.Option(
    "--max-calls", min=1, help="Budget: stop the run after sending this many model calls.")]
MaxTokens = Annotated[Optional[int], typer.Option(
    "--max-tokens", min=1, help="Budget: stop the run once this many tokens are used.")]
Hops = Annotated[Optional[str], typer.Option(
    "--hops", help="Hops of a composed question: N or LO-HI (default 2-4).")]
MaxQuestions = Annotated[Optional[int], typer.Option(
    "--max-questions", min=1, help="Stop after this many composed questions.")]
_SeedOpt = Annotated[Optional[int], typer.Option(
    "--seed", help="Same pages + same seed -> same questions.")]
_ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", help="YAML/JSON file with ComposeConfig fields; flags override it.")]


@user_errors
def compose(warehouse: WarehouseOpt = None, backend: Backend = None, endpoint: EndpointOpt = None,
            model: ModelOpt = None, api_key_env: ApiKeyEnvOpt = None,
            max_concurrency: Concurrency = None, no_cache: NoCache = False,
            max_calls: MaxCalls = None, max_tokens: MaxTokens = None, hops: Hops = None,
            max_questions: MaxQuestions = None, seed: _SeedOpt = None,
            config: _ConfigOpt = None) -> None:
    """Mine seeds from the stored pages and compose harder multi-hop questions from them.

    Prints a summary: seeds, composed by hops, steps rejected by reason. With --model and no
    --endpoint it serves the model with vLLM for the run (a registry name, folder or hub id)."""
    params = dict(locals())
    if wants_local_endpoint(model, endpoint, backend):
        return with_local_endpoint(compose, {**params, "backend": "llm"})
    from datagen.compose.report import compose_with_progress, print_compose_summary
    from datagen.compose.stage import compose_config
    cfg = compose_config(read_config_section(config, "compose", "ComposeConfig"), hops,
                         backend=backend, endpoint=endpoint, model=model, seed=seed,
                         api_key_env=api_key_env, max_concurrency=max_concurrency,
                         cache=False if no_cache else None, max_calls=max_calls,
                         max_tokens=max_tokens, max_questions=max_questions)
    summary = compose_with_progress(warehouse, cfg)
    print_compose_summary(summary)
    if summary.seeds_total == 0:
        raise error_exit(f"no facts to ask about in {summary.pages} pages "
                         f"({summary.pages_without_facts} without any fact); nothing composed", 1)
