"""`datagen maintain`: DuckLake compaction, snapshot expiry and file cleanup."""

from __future__ import annotations

import warehouse
from datagen.cli import main
from tests.warehouse.helpers import add_ready
from warehouse.maintain import data_file_count, disk_file_count, maintain

def _many_small_commits(path, n_commits=20, rows=12):
    """Batches just above DuckLake's inlining limit (10 rows), so each commit writes files."""
    with warehouse.open(path) as wh:
        for c in range(n_commits):
            add_ready(wh, [f"c{c:02d}-{i}" for i in range(rows)], run_id=f"run{c}")
        wh.append([warehouse.RolloutRecord(question_id="tiny", policy_version=1, reward=1.0)])

def _content(wh):
    return {t: wh.sql(f"select * from {t} order by all").to_pylist()
            for t in ("questions", "verdicts", "difficulty", "rollouts", "train_ready")}

def test_maintain_reduces_files_and_data_reads_back_identical(tmp_path):
    path = tmp_path / "wh"
    _many_small_commits(path)
    with warehouse.open(path) as wh:
        before = _content(wh)
        files_before = data_file_count(wh)
        assert files_before >= 60 and disk_file_count(wh) >= 60
        rep = maintain(wh, keep_snapshots_days=0, orphan_min_age_hours=0)
        assert rep.files_before == files_before
        assert rep.files_after < files_before / 10
        assert rep.disk_files_after < rep.disk_files_before / 10
        assert rep.snapshots_after < rep.snapshots_before
        assert _content(wh) == before
    with warehouse.open(path) as wh:  # and from a fresh process view of the catalog
        assert _content(wh) == before
        assert disk_file_count(wh) == data_file_count(wh)

def test_orphaned_file_from_a_crashed_writer_is_removed(wh_path):
    with warehouse.open(wh_path) as wh:
        add_ready(wh, [f"q{i}" for i in range(20)])
    orphan = wh_path / "data" / "main" / "questions" / "ducklake-crashed-writer.parquet"
    orphan.write_bytes(b"PAR1 half written")
    with warehouse.open(wh_path) as wh:
        rep = maintain(wh, keep_snapshots_days=7, orphan_min_age_hours=0)
        assert rep.steps["delete_orphaned_files"] >= 1
        assert wh.count("questions") == 20
    assert not orphan.exists()

def test_recent_orphans_and_snapshots_within_retention_are_kept(wh_path):
    with warehouse.open(wh_path) as wh:
        add_ready(wh, [f"q{i}" for i in range(20)])
        add_ready(wh, [f"r{i}" for i in range(20)])
        first = wh.current_snapshot() - 1
    orphan = wh_path / "data" / "main" / "questions" / "ducklake-in-flight.parquet"
    orphan.write_bytes(b"PAR1")
    with warehouse.open(wh_path) as wh:
        maintain(wh, keep_snapshots_days=7, orphan_min_age_hours=1)
    assert orphan.exists()
    with warehouse.open(wh_path, snapshot=first) as old:  # time travel still works
        assert old.count("questions") == 20

def test_cli_maintain_and_dry_run(tmp_path, capsys):
    path = tmp_path / "wh"
    _many_small_commits(path, n_commits=6)
    with warehouse.open(path) as wh:
        files = disk_file_count(wh)
    assert main(["maintain", "--dry-run", "--keep-snapshots-days", "0", "-w", str(path)]) == 0
    with warehouse.open(path) as wh:
        assert disk_file_count(wh) == files
    assert main(["maintain", "--keep-snapshots-days", "0", "--orphan-min-age-hours", "0",
                 "-w", str(path)]) == 0
    err = capsys.readouterr().err
    assert "data files in use" in err and "snapshots" in err
    with warehouse.open(path) as wh:
        assert disk_file_count(wh) < files
    assert main(["maintain", "-w", str(tmp_path / "absent")]) == 2
