"""`runner: dask`: the build's stages run as tasks on a local Dask cluster of 2 worker processes
and compose the same questions as the default runner. The build is shared with
tests/warehouse/test_object_storage.py (tests/warehouse/team_build.py): one per session."""

from __future__ import annotations

import json
import os

import pytest

import warehouse
from tests.warehouse.team_build import CONFIG, dask_build


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return dask_build(tmp_path_factory.getbasetemp() / "dask-build")


def _ids(root) -> set[str]:
    with warehouse.open(root, read_only=True) as wh:
        return {r["question_id"] for r in wh.sql("select question_id from questions").to_pylist()}


def _runs(root) -> list[dict]:
    with warehouse.open(root, read_only=True) as wh:
        rows = wh.sql("select run_id, kind, status, parent_run_id, summary from runs").to_pylist()
    return [{**r, "summary": json.loads(r["summary"] or "{}")} for r in rows]


@pytest.mark.slow
@pytest.mark.integration
def test_tasks_ran_on_two_workers_with_the_default_runners_questions(built, tmp_path):
    """The Dask build: compose, verify and band ran in shards under one stage run each, in >= 2
    worker processes (near-duplicates over every question, the other checks by range); the
    default runner's compose on the same pages writes the same question ids (the shards' seeds
    partition its seeds); a sharded rerun on top adds nothing (resume)."""
    from flows import BuildConfig
    from flows.build import compose_flow
    from tests.conftest import _copy_warehouse
    runs = _runs(built.root)
    build = next(r for r in runs if r["kind"] == "build")
    assert build["status"] == "succeeded"
    sharded = {r["kind"]: r for r in runs if r["summary"].get("runner") == "dask"}
    assert {"compose", "verify", "band"} <= set(sharded), sorted(sharded)
    workers = set()
    for stage in sharded.values():
        assert stage["parent_run_id"] == build["run_id"] and stage["summary"]["shards"] == 2
        shards = [r for r in runs if r["run_id"] in stage["summary"]["shard_runs"]]
        assert {s["parent_run_id"] for s in shards} == {stage["run_id"]} and len(shards) == 2
        workers |= set(stage["summary"]["workers"])
    pids = {w.rsplit(":", 1)[1] for w in workers}
    assert len(pids) >= 2 and str(os.getpid()) not in pids, workers
    checks = {tuple(sorted(r["summary"]["by_check"])): r["summary"]["questions"] for r in runs
              if r["run_id"] in sharded["verify"]["summary"]["shard_runs"]}
    assert checks[("near_duplicates",)] == len(_ids(built.root))
    assert sum(checks.values()) == 2 * len(_ids(built.root)) and len(checks) == 2, checks
    # the default runner's compose stage on the same pages (crawl + compose decide the ids)
    _copy_warehouse(built.root, tmp_path / "wh").close()
    cfg = BuildConfig(**{**CONFIG, "runner": "default"}).model_dump()
    whole = compose_flow(str(tmp_path / "wh"), cfg).result
    assert _ids(tmp_path / "wh") == _ids(built.root) != set()
    shard_seeds = sum(s["summary"]["seeds_total"] for s in runs
                      if s["run_id"] in sharded["compose"]["summary"]["shard_runs"])
    assert shard_seeds == whole.summary["seeds_total"] > 0
    _rerun_a_shard_adds_nothing(tmp_path / "wh", cfg)


def _rerun_a_shard_adds_nothing(root, cfg) -> None:
    from datagen.compose import run_compose
    from flows import BuildConfig
    count = "select count(*) as n from questions"
    with warehouse.open(root) as wh:
        before = wh.sql(count).to_pylist()
        again = run_compose(wh, BuildConfig(**cfg).compose_config(), shard=(1, 2))
        assert again.composed == again.seeds_new == 0 and again.composed_existing > 0
        assert wh.sql(count).to_pylist() == before


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


def test_question_batches_are_cut_no_smaller_than_a_commit_batch():
    from flows.runner import ranges
    ids = [f"q{i:02d}" for i in range(10)]
    assert ranges(ids, 2, 3) == [ids[:5], ids[5:]]
    assert ranges(ids, 4, 4) == [ids[:5], ids[5:]]   # 2 batches' worth: 2 shards, not 4
    assert ranges(ids, 2, 1000) == [ids] and ranges([], 2, 1) == []


def test_a_compose_shard_is_checked():
    from datagen.compose import ComposeConfig, run_compose
    for shard, cfg in [((2, 2), {}), ((0, 2), {"max_questions": 5})]:
        with pytest.raises(ValueError, match="shard|max_questions"):
            run_compose(None, ComposeConfig(**cfg), shard=shard)
