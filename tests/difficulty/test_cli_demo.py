"""`datagen band` end to end, and the must-show figures on the composed demo world."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import warehouse
from datagen.cli import main
from tests.difficulty.conftest import PAGES
from tests.difficulty.test_solvers import QUESTIONS
from warehouse import PageRecord, QuestionRecord, VerdictRecord


def _small_world(root: Path) -> None:
    import datetime as dt
    wh = warehouse.open(root)
    now = dt.datetime.now(dt.timezone.utc)
    wh.append([PageRecord(url=u, title=t, text=x, content_hash=hashlib.sha1(x.encode()).hexdigest(),
                          fetched_at=now) for u, (t, x) in PAGES.items()])
    wh.append([QuestionRecord(question_id=q, question=text, answer=a, hops=h)
               for q, text, a, h in QUESTIONS])
    wh.append([VerdictRecord(question_id=q[0], check_name="x", status="pass") for q in QUESTIONS])
    wh.close()


@pytest.mark.integration
def test_datagen_band_prints_table_and_writes_plot(tmp_path, capsys):
    root = tmp_path / "wh"
    _small_world(root)
    assert main(["band", "-w", str(root), "--max-k", "4"]) == 0
    out = capsys.readouterr().out
    assert "too_easy" in out and "mean pass rate" in out and "4 banded" in out
    plot = Path(out.split("plot:")[1].split()[0])
    assert plot.is_file() and plot.read_bytes()[:4] == b"\x89PNG"
    assert main(["band", "-w", str(root), "--max-k", "4"]) == 0  # rerun: all skipped
    assert "0 banded (4 already banded" in capsys.readouterr().out


@pytest.mark.parametrize("args,needle", [
    (["--solver", "policy:/no/such/dir"], "model folder /no/such/dir does not exist"),
    (["--solver", "llm"], "--endpoint"),
    (["--solver", "magic"], "solver"),
    (["--confidence", "1.5"], "confidence"),
    (["--from-rollouts", "nope"], "no rollouts"),
])
def test_user_mistakes_are_one_line(tmp_path, capsys, args, needle):
    root = tmp_path / "wh"
    _small_world(root)
    assert main(["band", "-w", str(root), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


@pytest.mark.integration
@pytest.mark.slow
def test_demo_world_must_show(demo_composed, tmp_path):
    """Embedded solver >= 0.5 on one-hop; mean pass rate falls 1 -> 2 -> 3 hops; >= 3 bands,
    >= 2 of them among hops >= 2 (an eighth of the questions, to keep the suite fast)."""
    from difficulty import BandConfig, run_band
    from tests.conftest import _copy_warehouse
    src = warehouse.open(demo_composed, read_only=True)
    questions = src.read(QuestionRecord)
    src.close()
    wh = _copy_warehouse(demo_composed, tmp_path / "wh")
    try:
        wh.append(questions)
        s = run_band(wh, BandConfig(where="hash(question_id) % 8 = 0"))
    finally:
        wh.close()
    rate = {int(h): r for h, r in s.mean_pass_rate_by_hops.items()}
    assert rate[1] >= 0.5 and rate[1] > rate[2] > rate[3]
    assert sum(1 for n in s.by_band.values() if n) >= 3
    deep = {b for h, row in s.by_band_hops.items() if int(h) >= 2 for b, n in row.items() if n}
    assert len(deep) >= 2
    assert Path(s.plot_path).is_file()
