"""CLI command of the compose stage: `datagen compose` (kept light to import)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    EndpointOpt, ModelOpt, WarehouseOpt, add_command, fail, is_tty, read_config_section,
    user_errors,
)


def register(app: typer.Typer) -> None:
    add_command(app, "compose", compose)


Backend = Annotated[Optional[str], typer.Option(
    "--backend", help="embedded (no model, the default) or llm.")]
ApiKeyEnv = Annotated[Optional[str], typer.Option(
    "--api-key-env", help="Environment variable holding the API key (llm backend).")]
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
            model: ModelOpt = None, api_key_env: ApiKeyEnv = None,
            max_concurrency: Concurrency = None, no_cache: NoCache = False,
            max_calls: MaxCalls = None, max_tokens: MaxTokens = None, hops: Hops = None,
            max_questions: MaxQuestions = None, seed: _SeedOpt = None,
            config: _ConfigOpt = None) -> None:
    """Mine seeds from the stored pages and compose harder multi-hop questions from them.

    Prints a summary: seeds, composed by hops, steps rejected by reason. With --model and no
    --endpoint it serves the model with vLLM for the run (a registry name, folder or hub id)."""
    params = dict(locals())
    from datagen.cli_model import wants_local_endpoint, with_local_endpoint
    if wants_local_endpoint(model, endpoint, backend):
        return with_local_endpoint(compose, {**params, "backend": "llm"})
    from datagen.compose.stage import compose_config
    cfg = compose_config(read_config_section(config, "compose", "ComposeConfig"), hops,
                         backend=backend, endpoint=endpoint, model=model, seed=seed,
                         api_key_env=api_key_env, max_concurrency=max_concurrency,
                         cache=False if no_cache else None, max_calls=max_calls,
                         max_tokens=max_tokens, max_questions=max_questions)
    summary = _run(warehouse, cfg)
    _print_summary(summary)
    if summary.seeds_total == 0:
        raise fail(f"no facts to ask about in {summary.pages} pages "
                   f"({summary.pages_without_facts} without any fact); nothing composed", 1)


def _run(warehouse: Optional[Path], cfg):
    """The stage under a progress bar on stderr (when it is a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from datagen.cli_common import stderr_console
    from datagen.compose.stage import compose_stage
    columns = (TextColumn("compose"), BarColumn(), MofNCompleteColumn(),
               TextColumn("seeds {task.fields[seeds]} composed {task.fields[composed]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), disable=not is_tty(), transient=True) as bar:
        task = bar.add_task("compose", total=None, seeds=0, composed=0)

        def update(s) -> None:
            bar.update(task, completed=s.seeds_done, total=s.seeds_total, seeds=s.seeds,
                       composed=s.composed)
        return compose_stage(warehouse, cfg, progress=update)


def _print_summary(s) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"compose {s.run_id} ({s.backend})", title_justify="left")
    for name in ("what", "detail", "count"):
        table.add_column(name, justify="right" if name == "count" else "left")
    table.add_row("pages", f"{s.pages_without_facts} without facts", str(s.pages))
    table.add_row("facts", ", ".join(f"{k} {v}" for k, v in sorted(s.facts_by_source.items())),
                  str(s.facts))
    table.add_row("seeds", f"new {s.seeds_new}", str(s.seeds))
    for reason, n in s.seeds_rejected.most_common():
        table.add_row("seed rejected", reason, str(n))
    table.add_section()
    for hops, n in sorted(s.composed_by_hops.items()):
        table.add_row("composed", f"{hops} hops", str(n))
    table.add_row("composed", "total (already composed earlier: "
                  f"{s.composed_existing})", str(s.composed))
    for reason, n in s.not_composed.most_common():
        table.add_row("seed not composed", reason, str(n))
    for reason, n in s.rejected_steps.most_common():
        table.add_row("step rejected", reason, str(n))
    console = Console(file=sys.stdout, width=max(100, Console().width))
    console.print(table)
    console.print(f"{s.seeds_new + s.composed} questions written in {s.elapsed_s:.1f} s "
                  f"({s.questions_per_s:.0f} questions/s)")
