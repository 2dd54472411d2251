"""CLI command of the compose stage: `datagen compose` (kept light to import)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    UserError, WarehouseOpt, add_command, is_tty, make_config, read_config_section, user_errors,
)


def register(app: typer.Typer) -> None:
    add_command(app, "compose", compose)


@user_errors
def compose(
    warehouse: WarehouseOpt = None,
    backend: Annotated[Optional[str], typer.Option(
        "--backend", help="embedded (no model, the default) or llm.")] = None,
    endpoint: Annotated[Optional[str], typer.Option(
        "--endpoint", help="OpenAI-compatible base URL (llm backend).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Model name (llm backend).")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(
        "--api-key-env", help="Environment variable holding the API key (llm backend).")] = None,
    max_concurrency: Annotated[Optional[int], typer.Option(
        "--max-concurrency", min=1, help="Model calls in flight (llm backend).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached model "
                                           "replies (llm backend).")] = False,
    max_calls: Annotated[Optional[int], typer.Option(
        "--max-calls", min=1, help="Budget: stop the run after sending this many model calls.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(
        "--max-tokens", min=1, help="Budget: stop the run once this many tokens are used.")] = None,
    hops: Annotated[Optional[str], typer.Option(
        "--hops", help="Hops of a composed question: N or LO-HI (default 2-4).")] = None,
    max_questions: Annotated[Optional[int], typer.Option(
        "--max-questions", min=1, help="Stop after this many composed questions.")] = None,
    seed: Annotated[Optional[int], typer.Option(
        "--seed", help="Same pages + same seed -> same questions.")] = None,
    config: Annotated[Optional[Path], typer.Option(
        "--config", help="YAML/JSON file with ComposeConfig fields; flags override it.")] = None,
) -> None:
    """Mine seeds from the stored pages and compose harder multi-hop questions from them.

    Prints a summary: seeds, composed by hops, steps rejected by reason. With --model and no
    --endpoint it serves the model with vLLM for the run (a registry name, folder or hub id).
    """
    params = dict(locals())
    from datagen.cli_model import wants_local_endpoint, with_local_endpoint
    if wants_local_endpoint(model, endpoint, backend):
        return with_local_endpoint(compose, {**params, "backend": "llm"})
    cfg = _config(config, backend=backend, endpoint=endpoint, model=model,
                  api_key_env=api_key_env, max_concurrency=max_concurrency,
                  cache=False if no_cache else None, max_calls=max_calls, max_tokens=max_tokens,
                  hops=hops, max_questions=max_questions, seed=seed)
    from datagen.cli_common import open_warehouse
    from datagen.compose.run import NoPages, make_backend
    try:
        composer = make_backend(cfg)
    except ImportError as exc:
        if cfg.backend != "llm":
            raise
        raise UserError(f"the llm backend cannot be loaded ({exc}); "
                        "use --backend embedded") from None
    wh = open_warehouse(warehouse)
    try:
        summary = _run(wh, cfg, composer)
    except NoPages as exc:
        raise UserError(str(exc)) from None
    except Exception as exc:
        if _is_llm_stop(exc):  # a tripped breaker or a spent budget: its one-line reason
            raise UserError(str(exc).strip().splitlines()[0]) from None
        raise
    finally:
        wh.close()
    _print_summary(summary)
    if summary.seeds_total == 0:
        typer.echo(f"error: no facts to ask about in {summary.pages} pages "
                   f"({summary.pages_without_facts} without any fact); nothing composed", err=True)
        raise typer.Exit(1)


def _is_llm_stop(exc: BaseException) -> bool:
    try:
        from datagen.llm import LLMStop
    except ImportError:
        return False
    return isinstance(exc, LLMStop)


def _config(path: Optional[Path], hops: Optional[str], **flags):
    from datagen.compose import ComposeConfig, parse_hops
    data = read_config_section(path, "compose", "ComposeConfig")
    if "hops" in data:  # a config file may say `hops: 2-4` as the flag does
        data["hops_min"], data["hops_max"] = parse_hops(str(data.pop("hops")))
    if hops is not None:
        data["hops_min"], data["hops_max"] = parse_hops(hops)
    data.update({k: v for k, v in flags.items() if v is not None})
    return make_config(ComposeConfig, data, "compose")


def _run(wh, cfg, composer):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from datagen.cli_common import stderr_console
    from datagen.compose import run_compose
    columns = (TextColumn("compose"), BarColumn(), MofNCompleteColumn(),
               TextColumn("seeds {task.fields[seeds]} composed {task.fields[composed]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), disable=not is_tty(), transient=True) as bar:
        task = bar.add_task("compose", total=None, seeds=0, composed=0)

        def update(s) -> None:
            bar.update(task, completed=s.seeds_done, total=s.seeds_total, seeds=s.seeds,
                       composed=s.composed)
        return run_compose(wh, cfg, progress=update, backend=composer)


def _print_summary(s) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"compose {s.run_id} ({s.backend})", title_justify="left")
    table.add_column("what")
    table.add_column("detail")
    table.add_column("count", justify="right")
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
