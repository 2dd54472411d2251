"""A folder warehouse is a folder: moved or copied (`cp -r`), it opens where it is now, and
a copy reads and writes only its own files."""

from __future__ import annotations

import shutil

import warehouse
from warehouse.maintain import maintain
from warehouse.schema import QuestionRecord


def _questions(prefix, n=30):
    return [QuestionRecord(question_id=f"{prefix}{i}", question="?", answer="a") for i in range(n)]


def _files(root):
    return {p.relative_to(root): p.stat().st_mtime_ns for p in root.rglob("*.parquet")}


def test_copy_opens_and_writes_only_into_its_own_folder(tmp_path):
    original, copy = tmp_path / "warehouse", tmp_path / "backup"
    with warehouse.open(original) as wh:
        wh.append(_questions("o"))
    shutil.copytree(original, copy)
    files = _files(original)
    with warehouse.open(copy, create=False) as wh:
        wh.append(_questions("c"))
        maintain(wh, keep_snapshots_days=0, orphan_min_age_hours=0)  # cleanup stays inside too
        assert wh.count("questions") == 60
    assert _files(original) == files  # not one file added, removed or rewritten
    with warehouse.open(original, read_only=True) as wh:
        assert sorted(r.question_id for r in wh.read(QuestionRecord))[0] == "o0"
        assert wh.count("questions") == 30
    with warehouse.open(copy, read_only=True) as wh:
        assert wh.count("questions") == 60


def test_moved_folder_opens_where_it_is_now(tmp_path):
    with warehouse.open(tmp_path / "here") as wh:
        wh.append(_questions("q"))
    moved = shutil.move(tmp_path / "here", tmp_path / "there")
    with warehouse.open(moved, create=False) as wh:
        wh.append(_questions("r"))
        assert wh.count("questions") == 60
    assert not (tmp_path / "here").exists()  # nothing was written to the old place
