"""CLI commands over the warehouse: `query`, `export`, `maintain` (kept light to import:
duckdb and pyarrow load inside the command bodies)."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from datagen.cli_common import WarehouseOpt, add_command, user_errors


# choices of --format and --layout (a str Enum: Typer lists and checks them)
QueryFormat = Enum("QueryFormat", {v: v for v in ("table", "csv", "json")}, type=str)
ExportFormat = Enum("ExportFormat", {v: v for v in ("parquet", "jsonl", "hf")}, type=str)
Layout = Enum("Layout", {v: v for v in ("plain", "verl")}, type=str)

AsOfOpt = Annotated[Optional[int], typer.Option(
    "--as-of", help="Read the warehouse as of this DuckLake snapshot id "
                    "(list them: datagen query \"from snapshots()\").")]


@user_errors
def query(
    sql: Annotated[str, typer.Argument(help="One read-only SQL statement; tables by plain name, "
                                            "e.g. \"select band, count(*) from train_ready group by 1\".")],
    fmt: Annotated[QueryFormat, typer.Option("--format", "-f", help="table, csv (header + rows) "
                                             "or json (one array of row objects).")] = QueryFormat.table,
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Run read-only SQL over the warehouse. Writes, ATTACH, COPY, INSTALL/LOAD, SET and
    reading files outside the warehouse are refused."""
    from warehouse.query import FORMATTERS, run_query
    table = run_query(warehouse, sql, as_of=as_of)
    sys.stdout.write(FORMATTERS[fmt.value](table))


@user_errors
def export(
    out_dir: Annotated[Path, typer.Argument(help="Folder to write (created; must be empty "
                                                 "unless --overwrite).")],
    fmt: Annotated[ExportFormat, typer.Option("--format", "-f", help="parquet, jsonl, or hf "
                                              "(datasets.load_from_disk).")] = ExportFormat.parquet,
    where: Annotated[Optional[str], typer.Option(
        "--where", help="SQL filter on the exported columns, e.g. \"band = 'hard'\".")] = None,
    layout: Annotated[Layout, typer.Option(
        "--layout", help="verl: the Parquet rows verl/SkyRL trainers read (data_source, prompt, "
                         "ability, reward_model, extra_info).")] = Layout.plain,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace OUT_DIR.")] = False,
    as_of: AsOfOpt = None,
    warehouse: WarehouseOpt = None,
) -> None:
    """Export the training set: the train_ready questions (all checks passed, with a band)
    joined with their question rows (hops, evidence, sources and their licences, composer),
    with a dataset card (OUT_DIR/README.md: counts per band and hops, how it was built,
    licences and source domains)."""
    from warehouse.export import export as run_export
    res = run_export(warehouse, out_dir, fmt=fmt.value, where=where, layout=layout.value,
                     overwrite=overwrite, as_of=as_of)
    typer.echo(f"exported {res.rows} rows (snapshot {res.snapshot}) to {res.out_dir}: "
               f"{', '.join(res.files)}", err=True)
    typer.echo(str(res.out_dir))


KeepDaysOpt = Annotated[float, typer.Option(
    "--keep-snapshots-days", min=0, help="Keep snapshots (time travel) this many days.")]
OrphanAgeOpt = Annotated[float, typer.Option(
    "--orphan-min-age-hours", min=0,
    help="Delete unreferenced files only when older than this (protects commits in flight).")]
DryRunOpt = Annotated[bool, typer.Option(
    "--dry-run", help="Report what expiry and cleanup would remove; change nothing.")]


@user_errors
def maintain(keep_snapshots_days: KeepDaysOpt = 7.0, orphan_min_age_hours: OrphanAgeOpt = 1.0,
             dry_run: DryRunOpt = False, warehouse: WarehouseOpt = None) -> None:
    """Compact small files, expire old snapshots and delete unused files (DuckLake's own
    maintenance functions)."""
    from datagen.cli_common import open_warehouse
    from warehouse.maintain import maintain_with_status, print_maintain_report
    with open_warehouse(warehouse, create=False) as wh:
        rep = maintain_with_status(wh, keep_snapshots_days, orphan_min_age_hours, dry_run)
    print_maintain_report(rep)


def register(app: typer.Typer) -> None:
    add_command(app, "query", query)
    add_command(app, "export", export)
    add_command(app, "maintain", maintain)
