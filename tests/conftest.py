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
