"""Housekeeping with DuckLake's own functions (`datagen maintain`).

Hourly runs that each commit a few small batches leave many small Parquet files and
many snapshots. In order, `maintain`:

1. flushes data inlined in the catalog (tiny commits) into Parquet files
   (`ducklake_flush_inlined_data`);
2. merges adjacent small files of each table (`ducklake_merge_adjacent_files`) and
   rewrites files dominated by deleted rows (`ducklake_rewrite_data_files`);
3. expires snapshots older than the retention window (`ducklake_expire_snapshots`);
   time travel (`--as-of`) to an expired snapshot is no longer possible;
4. deletes the files no snapshot needs any more (`ducklake_cleanup_old_files`);
5. deletes orphaned files, i.e. files in the data folder the catalog does not know,
   such as those a crashed writer left behind (`ducklake_delete_orphaned_files`). Only
   files older than `orphan_min_age` go, so a commit in flight in another process keeps
   the files it is writing.

Every step is its own DuckLake commit and is retried like any commit when another
writer holds the catalog.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from warehouse.core import Warehouse
from warehouse.location import LAKE

log = logging.getLogger(__name__)


@dataclass
class MaintainReport:
    files_before: int = 0
    files_after: int = 0
    snapshots_before: int = 0
    snapshots_after: int = 0
    disk_files_before: int | None = None  # Parquet files under a local data path
    disk_files_after: int | None = None
    steps: dict[str, int] = field(default_factory=dict)  # step -> rows its function returned
    dry_run: bool = False


def data_file_count(wh: Warehouse) -> int:
    """Parquet data files the current snapshot uses, across all tables."""
    total = 0
    for (name,) in wh.con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_catalog = ? AND table_type = 'BASE TABLE'", [LAKE]).fetchall():
        total += wh.scalar(f"SELECT count(*) FROM ducklake_list_files('{LAKE}', ?)", [name])
    return total


def disk_file_count(wh: Warehouse) -> int | None:
    """Parquet files in a local data folder (None for object storage)."""
    data = wh.location.data_path
    if "://" in data:
        return None
    return sum(1 for _ in Path(data).rglob("*.parquet"))


def _snapshot_count(wh: Warehouse) -> int:
    return wh.scalar(f"SELECT count(*) FROM {LAKE}.snapshots()")


def maintain(wh: Warehouse, keep_snapshots_days: float = 7.0,
             orphan_min_age_hours: float = 1.0, dry_run: bool = False,
             progress: Callable[[str], None] | None = None) -> MaintainReport:
    """Compact, expire and clean the warehouse; returns counts before and after."""
    now = dt.datetime.now(dt.timezone.utc)
    expire_before = now - dt.timedelta(days=keep_snapshots_days)
    orphan_before = now - dt.timedelta(hours=orphan_min_age_hours)
    report = MaintainReport(files_before=data_file_count(wh), snapshots_before=_snapshot_count(wh),
                            disk_files_before=disk_file_count(wh), dry_run=dry_run)
    dry = "true" if dry_run else "false"
    steps: list[tuple[str, str, list]] = []
    if not dry_run:
        steps += [
            ("flush_inlined_data", f"CALL ducklake_flush_inlined_data('{LAKE}')", []),
            ("merge_adjacent_files", f"CALL ducklake_merge_adjacent_files('{LAKE}')", []),
            ("rewrite_data_files", f"CALL ducklake_rewrite_data_files('{LAKE}')", []),
        ]
    steps += [
        ("expire_snapshots",
         f"CALL ducklake_expire_snapshots('{LAKE}', dry_run => {dry}, older_than => ?)",
         [expire_before]),
        ("cleanup_old_files",
         f"CALL ducklake_cleanup_old_files('{LAKE}', dry_run => {dry}, cleanup_all => true)", []),
        ("delete_orphaned_files",
         f"CALL ducklake_delete_orphaned_files('{LAKE}', dry_run => {dry}, older_than => ?)",
         [orphan_before]),
    ]
    for name, sql, params in steps:
        if progress:
            progress(name)
        rows = wh.retrying(lambda con, sql=sql, params=params: con.execute(sql, params).fetchall())
        report.steps[name] = len(rows)
        log.info("maintain %s: %d", name, len(rows))
    report.files_after = data_file_count(wh)
    report.snapshots_after = _snapshot_count(wh)
    report.disk_files_after = disk_file_count(wh)
    return report


def maintain_with_status(wh: Warehouse, keep_snapshots_days: float,
                         orphan_min_age_hours: float, dry_run: bool) -> MaintainReport:
    """`maintain` with its current step on a status line (on a terminal's stderr only)."""
    import sys
    if not sys.stderr.isatty():
        return maintain(wh, keep_snapshots_days, orphan_min_age_hours, dry_run)
    from rich.console import Console
    with Console(stderr=True).status("maintaining…") as status:
        return maintain(wh, keep_snapshots_days, orphan_min_age_hours, dry_run,
                        progress=lambda step: status.update(f"maintain: {step}"))


def print_maintain_report(rep: MaintainReport) -> None:
    """Files and snapshots before and after, and what each step removed, on stderr."""
    from rich.console import Console
    from rich.table import Table
    table = Table(title="datagen maintain" + (" (dry run)" if rep.dry_run else ""))
    for col in ("", "before", "after"):
        table.add_column(col)
    table.add_row("data files in use", str(rep.files_before), str(rep.files_after))
    if rep.disk_files_before is not None:
        table.add_row("Parquet files on disk", str(rep.disk_files_before), str(rep.disk_files_after))
    table.add_row("snapshots", str(rep.snapshots_before), str(rep.snapshots_after))
    for step, n in rep.steps.items():
        table.add_row(f"  {step}", "", str(n))
    Console(stderr=True).print(table)
