"""`datagen build` end to end on a small demo world: what it leaves, that a rerun adds nothing,
that a build killed with SIGKILL resumes to the same result, and bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse

KILLER = Path(__file__).with_name("kill_at_commit.py")  # SIGKILLs a stage at its Nth batch

pytestmark = [pytest.mark.slow, pytest.mark.integration]

# Small batches, so that each stage commits many times and a kill lands between commits.
# The smallest demo world (30 entities: ~220 questions, several bands, hops 2-4; each stage
# commits more than the 3 batches its kill waits for): this file runs the build five times.
CONFIG = ("demo: {entities: 30, seed: 7}\nseed: 0\n"
          "crawl: {batch_size: 5}\n"
          "compose: {batch_size: 5}\nband: {batch_size: 16}\n")


def _build(root: Path, cfg: Path, capsys=None) -> int:
    from datagen.cli import main
    return main(["build", "--config", str(cfg), "--warehouse", str(root)])


@pytest.fixture(scope="module")
def build_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("build")
    cfg = base / "build.yaml"
    cfg.write_text(CONFIG)
    return base, cfg


@pytest.fixture(scope="module")
def built(build_env):
    """One uninterrupted build: (warehouse root, seconds)."""
    base, cfg = build_env
    mp = pytest.MonkeyPatch()
    mp.setenv("DATAGEN_CACHE", str(base / "cache"))
    t = time.perf_counter()
    try:
        assert _build(base / "wh", cfg) == 0
    finally:
        mp.undo()
    return base / "wh", time.perf_counter() - t


def state(root: Path) -> dict:
    """What a build decided: train_ready ids and bands, latest verdicts, and duplicate counts."""
    wh = warehouse.open(root, read_only=True)
    try:
        q = lambda sql: [tuple(r.values()) for r in wh.sql(sql).to_pylist()]  # noqa: E731
        return {
            "train_ready": sorted(q("select question_id, band from train_ready")),
            "verdicts": sorted(q("select question_id, check_name, status from verdicts")),
            "questions": sorted(q("select question_id from questions")),
            "difficulty": sorted(q("select question_id, band, k, n_correct from difficulty")),
        }
    finally:
        wh.close()


def test_build_fills_train_ready_and_links_its_runs(built):
    root, _ = built
    s = state(root)
    assert len(s["questions"]) == len(set(s["questions"])), "a question stored twice"
    assert len({b for _, b in s["train_ready"]}) >= 2
    wh = warehouse.open(root, read_only=True)
    try:
        runs = wh.sql("select run_id, kind, status, parent_run_id, config from runs").to_pylist()
        deep = wh.scalar("select count(*) from train_ready where hops >= 2")
    finally:
        wh.close()
    assert deep > 0
    build = [r for r in runs if r["kind"] == "build"]
    assert len(build) == 1 and build[0]["status"] == "succeeded"
    assert '"decontamination": "off"' in build[0]["config"]  # the demo build says so
    stages = {r["kind"]: r for r in runs if r["parent_run_id"] == build[0]["run_id"]}
    assert set(stages) == {"crawl", "compose", "verify", "band"}
    assert all(r["status"] == "succeeded" for r in stages.values())


def test_second_build_with_the_same_config_adds_nothing(built, build_env, monkeypatch):
    root, first_s = built
    base, cfg = build_env
    monkeypatch.setenv("DATAGEN_CACHE", str(base / "cache"))
    before = state(root)
    counts = _counts(root)
    t = time.perf_counter()
    assert _build(root, cfg) == 0
    second_s = time.perf_counter() - t
    assert state(root) == before
    assert _counts(root) == counts
    wh = warehouse.open(root, read_only=True)
    try:
        summary = wh.sql("select summary from runs where kind = 'build' order by started_at desc "
                         "limit 1").to_pylist()[0]["summary"]
    finally:
        wh.close()
    assert summary.count('"cached": true') == 4
    print(f"first build {first_s:.1f} s, second {second_s:.1f} s")


def _counts(root: Path) -> dict:
    wh = warehouse.open(root, read_only=True)
    try:
        return {t: wh.count(t) for t in ("questions", "verdicts", "difficulty", "llm_calls",
                                         "pages", "fetches")}
    finally:
        wh.close()


def _rows_of_last(root: Path, kind: str, table: str) -> tuple[str, int]:
    """The status of the latest `kind` run and how many rows of `table` it committed."""
    wh = warehouse.open(root, read_only=True)
    try:
        run = wh.sql("select run_id, status from runs where kind = ? order by started_at desc "
                     "limit 1", [kind]).to_pylist()[0]
        return run["status"], wh.scalar(f"select count(*) from {table} where run_id = ?",
                                        [run["run_id"]])
    finally:
        wh.close()


def test_sigkill_in_crawl_compose_and_band_then_rerun_gives_the_same_result(built, build_env,
                                                                             tmp_path):
    base, cfg = build_env
    root = tmp_path / "wh"
    env = {**os.environ, "DATAGEN_CACHE": str(base / "cache")}
    cmd = [sys.executable, "-m", "datagen", "build", "--config", str(cfg), "--warehouse",
           str(root)]
    stored_before_resume: set[str] = set()
    for kind, table in (("crawl", "fetches"), ("compose", "questions"), ("band", "difficulty")):
        killed = subprocess.run([sys.executable, str(KILLER), kind, table, "3", *cmd[3:]],
                                env=env, capture_output=True, text=True, timeout=900,
                                start_new_session=True)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        status, rows = _rows_of_last(root, kind, table)
        assert status == "running" and rows > 0, (kind, status, rows)  # killed mid-stage
        if kind == "crawl":
            stored_before_resume = _stored_urls(root)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert state(root) == state(built[0])
    assert stored_before_resume and not _refetched(root, stored_before_resume)
    wh = warehouse.open(root, read_only=True)
    try:
        builds = wh.sql("select status, resumed_from from runs where kind = 'build' "
                        "order by started_at").to_pylist()
    finally:
        wh.close()
    assert [b["status"] for b in builds] == ["interrupted"] * 3 + ["succeeded"]
    assert all(b["resumed_from"] for b in builds[1:])


def _stored_urls(root: Path) -> set[str]:
    wh = warehouse.open(root, read_only=True)
    try:
        return {r["url"] for r in wh.sql("select url from pages").to_pylist()}
    finally:
        wh.close()


def _refetched(root: Path, stored: set[str]) -> set[str]:
    """URLs stored by the first (killed) crawl that a later crawl requested again."""
    wh = warehouse.open(root, read_only=True)
    try:
        rows = wh.sql("select url from fetches where run_id in (select run_id from runs where "
                      "kind = 'crawl' and started_at > (select min(started_at) from runs "
                      "where kind = 'crawl'))").to_pylist()
    finally:
        wh.close()
    return {r["url"] for r in rows} & stored


def test_unknown_config_key_is_one_line_and_a_failed_run(tmp_path, capsys):
    from datagen.cli import main
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("demo: {entities: 40}\ncompose_typo: 1\n")
    code = main(["build", "--config", str(cfg), "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert code == 2 and "compose_typo" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    _assert_failed_build(tmp_path / "wh", "compose_typo")


@pytest.mark.parametrize("seed", ["empty_site", "http://unreachable.invalid/"])
def test_an_empty_or_unreachable_crawl_fails_the_build_with_its_reason(tmp_path, capsys, seed):
    from datagen.cli import main
    site = tmp_path / "empty_site"
    site.mkdir()
    (site / "index.html").write_text("<html><body></body></html>")  # nothing to extract
    target = str(site) if seed == "empty_site" else seed
    cfg = tmp_path / "off.yaml"  # offline, real seeds need a decontamination setting (preflight)
    cfg.write_text("verify: {decontamination: off}\n")
    code = main(["build", target, "--config", str(cfg), "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "page" in err.lower(), err
    _assert_failed_build(tmp_path / "wh", "page")


def _assert_failed_build(root: Path, reason_part: str) -> None:
    wh = warehouse.open(root, read_only=True)
    try:
        rows = wh.sql("select status, summary from runs where kind = 'build'").to_pylist()
    finally:
        wh.close()
    assert rows and rows[-1]["status"] == "failed"
    assert reason_part in rows[-1]["summary"]


def test_a_model_endpoint_that_is_down_fails_the_build_with_one_line(tmp_path, capsys,
                                                                     monkeypatch):
    from datagen.cli import main
    from tests.training.engine_helpers import free_port
    monkeypatch.setenv("DATAGEN_CACHE", str(tmp_path / "cache"))
    cfg = tmp_path / "llm.yaml"
    cfg.write_text("demo: {entities: 30, seed: 3}\n")   # the smallest world: it is crawled first
    dead = f"http://127.0.0.1:{free_port()}/v1"          # nothing listens there
    code = main(["build", "--config", str(cfg), "--endpoint", dead, "--model", "m",
                 "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "127.0.0.1" in err
    _assert_failed_build(tmp_path / "wh", "127.0.0.1")
