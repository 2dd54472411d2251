"""CLI commands of the crawl stage: `demo-world`, `serve`, `crawl` (kept light to import)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import (
    UserError, WarehouseOpt, add_command, is_tty, open_warehouse, user_errors,
)
from datagen.config_io import read_config_section, validate


def register(app: typer.Typer) -> None:
    add_command(app, "demo-world", demo_world)
    add_command(app, "serve", serve)
    add_command(app, "crawl", crawl)


@user_errors
def demo_world(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the site into.")],
    entities: Annotated[int, typer.Option("--entities", "-n", min=30,
                                          help="Number of entities (pages).")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Random seed (same seed, same world).")] = 0,
) -> None:
    """Write the built-in demo world: HTML pages + index + sitemap + robots.txt + ground truth."""
    import time

    from datagen.demo_world import build_world, write_world
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder")
    t = time.perf_counter()
    world = build_world(entities, seed)
    write_world(world, out)
    typer.echo(f"wrote {len(world)} entity pages and {len(world.facts)} facts to {out} "
               f"in {time.perf_counter() - t:.1f} s (ground truth: {out / 'facts.jsonl'})")


@user_errors
def serve(
    folder: Annotated[Path, typer.Argument(help="Folder to serve.")],
    port: Annotated[int, typer.Option("--port", "-p", help="Port on 127.0.0.1 (0: any free).")] = 8000,
) -> None:
    """Serve a folder as a website on loopback (127.0.0.1 only) until interrupted."""
    from datagen.crawl.server import serve_forever
    if not folder.is_dir():
        raise UserError(f"no such folder: {folder}")
    try:
        serve_forever(folder, port, on_ready=lambda url: typer.echo(
            f"serving {folder} at {url}/ (Ctrl-C to stop)", err=True))
    except OSError as exc:
        raise UserError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None


CrawlSeedsArg = Annotated[Optional[list[str]], typer.Argument(
    help="URLs, sitemap URLs (.xml, .xml.gz), local folders/files (.html, .md, .txt), web "
         "archives (.warc, .warc.gz), folders or quoted globs of them.")]
DemoOpt = Annotated[bool, typer.Option("--demo", help="Build, serve and crawl the built-in "
                                       "demo world (offline; no seeds needed).")]
PrivateOpt = Annotated[bool, typer.Option(
    "--allow-private", help="Allow private, loopback and link-local addresses.")]
_Int, _Float, _List = Optional[int], Optional[float], Optional[list[str]]
CrawlConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", help="YAML/TOML/JSON file with CrawlConfig fields; flags override it.")]
WarcOutOpt = Annotated[Optional[Path], typer.Option(
    "--warc-out", help="Also write every response received to rotating gzipped WARC files in "
                       "this folder.")]
# CLI flag -> CrawlConfig field, where the two names differ.
_FIELDS = {"concurrency": "global_concurrency", "per_host": "per_host_concurrency",
          "delay": "per_host_delay_s", "deadline": "request_deadline_s",
          "prefix": "url_prefixes"}


@user_errors
def crawl(
    seeds: CrawlSeedsArg = None, warehouse: WarehouseOpt = None, demo: DemoOpt = False,
    allow_private: PrivateOpt = False,
    max_pages: Annotated[_Int, typer.Option("--max-pages", min=1)] = None,
    max_depth: Annotated[_Int, typer.Option("--max-depth", min=0)] = None,
    concurrency: Annotated[_Int, typer.Option("--concurrency", min=1,
                                                help="Requests in flight overall.")] = None,
    per_host: Annotated[_Int, typer.Option("--per-host", min=1,
                                             help="Requests in flight per host.")] = None,
    delay: Annotated[_Float, typer.Option("--delay", min=0,
                                            help="Seconds between requests per host.")] = None,
    deadline: Annotated[_Float, typer.Option("--deadline", min=0.1,
                                               help="Total seconds per request.")] = None,
    include: Annotated[_List, typer.Option("--include", help="Regex a URL must match.")] = None,
    exclude: Annotated[_List, typer.Option("--exclude", help="Regex to skip.")] = None,
    prefix: Annotated[_List, typer.Option("--prefix", help="Stay under this URL prefix.")] = None,
    config: CrawlConfigOpt = None, warc_out: WarcOutOpt = None,
) -> None:
    """Crawl pages into the warehouse; prints a summary (stored / skipped / failed by reason)."""
    overrides = _settings(dict(locals()))
    with open_warehouse(warehouse) as wh:
        summary = _run_with_progress(wh, demo, overrides)
    _print_summary(summary, wh.root)


def _settings(flags: dict) -> dict:
    """CrawlConfig fields from the config file and the flags given (flags win), checked
    before a warehouse is made for a crawl that cannot start."""
    from datagen.crawl import CrawlConfig
    seeds, demo, warc_out = flags["seeds"], flags["demo"], flags["warc_out"]
    given = {_FIELDS.get(k, k): v for k, v in flags.items() if k not in
             ("seeds", "demo", "warehouse", "config") and v is not None and v is not False
             and v != []}  # not given (0 is a value: --max-depth 0)
    out = {**read_config_section(flags["config"], "crawl", "CrawlConfig"), **given}
    if not demo and not seeds and not out.get("seeds"):
        raise UserError("give URLs or folders to crawl, or --demo for the built-in demo world")
    if demo and seeds:
        raise UserError("--demo crawls the built-in demo world; drop the seeds or drop --demo")
    if warc_out is not None and warc_out.exists() and not warc_out.is_dir():
        raise UserError(f"--warc-out {warc_out} is a file; give a folder")
    out.update({"seeds": list(seeds)} if seeds else {})
    out.update({"warc_out": str(warc_out)} if warc_out else {})
    validate(CrawlConfig, out, "crawl settings")
    return out


def _run_with_progress(wh, demo: bool, overrides: dict):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from datagen.crawl import CrawlConfig, SeedError, crawl_demo, run_crawl
    from datagen.cli_common import stderr_console
    columns = (TextColumn("crawl"), BarColumn(), MofNCompleteColumn(), TextColumn(
        "stored {task.fields[stored]} skipped {task.fields[skipped]} failed {task.fields[failed]}"),
        TimeElapsedColumn())
    with Progress(*columns, console=stderr_console(), disable=not is_tty(), transient=True) as bar:
        task = bar.add_task("crawl", total=None, stored=0, skipped=0, failed=0)

        def update(s) -> None:
            bar.update(task, completed=s.attempted, total=max(s.discovered, s.attempted),
                       stored=s.stored, skipped=s.skipped, failed=s.failed)
        try:
            if demo:
                return crawl_demo(wh, on_progress=update, **overrides)
            return run_crawl(CrawlConfig(**overrides), wh, on_progress=update)
        except SeedError as exc:
            raise UserError(str(exc)) from None


def _print_summary(summary, root: Path) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"crawl {summary.run_id}", title_justify="left")
    table.add_column("outcome")
    table.add_column("reason")
    table.add_column("URLs", justify="right")
    for (outcome, reason), n in sorted(summary.by_reason.items(), key=lambda kv: (kv[0][0], -kv[1])):
        table.add_row(outcome, reason or "-", str(n))
    table.add_section()
    table.add_row("total", f"stored {summary.stored} / skipped {summary.skipped} / "
                  f"failed {summary.failed}", str(summary.attempted))
    console = Console(file=sys.stdout, width=max(100, Console().width))
    console.print(table)
    rate = summary.stored / summary.elapsed_s if summary.elapsed_s else 0.0
    console.print(f"{summary.stored} pages stored in {summary.elapsed_s:.1f} s "
                  f"({rate:.0f} pages/s) -> warehouse {root}")
