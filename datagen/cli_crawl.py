"""CLI commands of the crawl stage: `demo-world`, `site`, `serve`, `crawl` (kept light to
import)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import UserError, WarehouseOpt, add_command, open_warehouse, user_errors


def register(app: typer.Typer) -> None:
    add_command(app, "demo-world", demo_world)
    add_command(app, "site", site)
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
    from datagen.demo_world import write_demo_world
    typer.echo(write_demo_world(out, entities, seed))


@user_errors
def site(
    corpus: Annotated[Path, typer.Argument(help="A corpus of ../shared/data/corpus/: a folder "
                                           "holding corpus.jsonl, a .json {title: [sentences]}, "
                                           "a KILT .jsonl or the wikispeedia_subset folder.")],
    out: Annotated[Path, typer.Argument(help="New (or empty) folder to write the site into.")],
) -> None:
    """Write a real corpus as a local site: a page per title, links where titles are named.

    Only the corpus text is read, never a questions file beside it.
    """
    from datagen.corpus_site import write_corpus_site
    typer.echo(write_corpus_site(corpus, out).report())


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
ConcurrencyOpt = Annotated[_Int, typer.Option("--concurrency", min=1,
                                              help="Requests in flight overall.")]
PerHostOpt = Annotated[_Int, typer.Option("--per-host", min=1, help="Requests in flight per host.")]
DelayOpt = Annotated[_Float, typer.Option("--delay", min=0,
                                          help="Seconds between requests per host.")]
DeadlineOpt = Annotated[_Float, typer.Option("--deadline", min=0.1,
                                             help="Total seconds per request.")]
WarcOutOpt = Annotated[Optional[Path], typer.Option(
    "--warc-out", help="Also write every response received to rotating gzipped WARC files in "
                       "this folder.")]


@user_errors
def crawl(
    seeds: CrawlSeedsArg = None, warehouse: WarehouseOpt = None, demo: DemoOpt = False,
    allow_private: PrivateOpt = False,
    max_pages: Annotated[_Int, typer.Option("--max-pages", min=1)] = None,
    max_depth: Annotated[_Int, typer.Option("--max-depth", min=0)] = None,
    concurrency: ConcurrencyOpt = None, per_host: PerHostOpt = None, delay: DelayOpt = None,
    deadline: DeadlineOpt = None,
    include: Annotated[_List, typer.Option("--include", help="Regex a URL must match.")] = None,
    exclude: Annotated[_List, typer.Option("--exclude", help="Regex to skip.")] = None,
    prefix: Annotated[_List, typer.Option("--prefix", help="Stay under this URL prefix.")] = None,
    config: CrawlConfigOpt = None, warc_out: WarcOutOpt = None,
) -> None:
    """Crawl pages into the warehouse; prints a summary (stored / skipped / failed by reason)."""
    flags = dict(locals())
    from datagen.crawl.config import crawl_settings
    from datagen.crawl.summary import crawl_with_progress, print_crawl_summary
    overrides = crawl_settings(flags)
    with open_warehouse(warehouse) as wh:
        summary = crawl_with_progress(wh, demo, overrides)
    print_crawl_summary(summary, wh.root)
