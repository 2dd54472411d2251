"""`runner: dask`: the build's stages run as tasks on a local Dask cluster of 2 worker processes
and compose the same questions as the default runner."""

from __future__ import annotations

import json
import os

import pytest

import warehouse
from tests.warehouse.team_build import CONFIG, dask_build

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return dask_build(tmp_path_factory.getbasetemp() / "dask-build")


def _ids(root) -> set[str]:
    with warehouse.open(root, read_only=True) as wh:
        return {r["question_id"] for r in wh.sql("select question_id from questions").to_pylist()}


def test_tasks_ran_on_two_workers_with_the_default_runners_questions(built, tmp_path):
    from flows import BuildConfig
    from flows.build import compose_flow, crawl_flow
    with warehouse.open(built.root, read_only=True) as wh:
        runs = wh.sql("select run_id, kind, status, parent_run_id, summary from runs").to_pylist()
        ready = wh.scalar("select count(*) from train_ready")
    build = next(r for r in runs if r["kind"] == "build")
    assert build["status"] == "succeeded" and ready > 0
    workers = set()
    for r in runs:
        summary = json.loads(r["summary"] or "{}")
        if summary.get("runner") == "dask":  # a stage cut in shards: its run lists the workers
            assert r["parent_run_id"] == build["run_id"] and summary["shards"] >= 2
            shard_parents = {s["parent_run_id"] for s in runs if s["run_id"] in summary["shard_runs"]}
            assert shard_parents == {r["run_id"]}
            workers |= set(summary["workers"])
    pids = {w.rsplit(":", 1)[1] for w in workers}
    assert len(pids) >= 2 and str(os.getpid()) not in pids, workers
    # the same config on the default runner (crawl + compose decide the question ids)
    cfg = BuildConfig(**{**CONFIG, "runner": "default"}).model_dump()
    crawl_flow(str(tmp_path / "wh"), cfg)
    compose_flow(str(tmp_path / "wh"), cfg)
    assert _ids(tmp_path / "wh") == _ids(built.root) != set()


def test_dask_settings_are_checked():
    from flows import BuildConfig
    with pytest.raises(ValueError, match="runner"):
        BuildConfig(runner="ray")
    assert BuildConfig(runner="dask", dask_address="tcp://10.0.0.5:8786").dask_workers == 2


def test_crawl_shards_by_host_and_stage_summary_sums_shards():
    from flows.runner import _by_host, merge
    from flows.stages import StageResult
    parts = _by_host(["http://a.org/x", "https://b.org/", "http://a.org/y", "/data/site"])
    assert parts == [{"seeds": ["/data/site"]}, {"seeds": ["http://a.org/x", "http://a.org/y"]},
                     {"seeds": ["https://b.org/"]}]
    out = merge([StageResult("verify", "v1", "k", 3, {"verdicts": 3, "worker": "h:1"}),
                 StageResult("verify", "v2", "k", 4, {"verdicts": 4, "worker": "h:2"})])
    assert out["rows"] == 7 and out["totals"]["verdicts"] == 7 and out["workers"] == ["h:1", "h:2"]
