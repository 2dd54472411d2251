"""Fixtures of the model registry's tests: a fake wheel in a local --find-links folder,
and a models folder in tmp_path (never the user's data folder)."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from datagen.models import REGISTRY, ModelSpec, WheelFile

FAKE_MEMBER = "fake_model/model.gguf"


def build_wheel(folder: Path, package: str, version: str, member: str, payload: bytes) -> Path:
    """A minimal valid wheel carrying one file, as pip expects it (dist-info included)."""
    dist = package.replace("-", "_")
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(member, payload)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\n"
                                        f"Version: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                                     "Root-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def crawled(demo_crawled, tmp_path) -> Path:
    """A writable warehouse holding the session's demo crawl (250 entities)."""
    from tests.conftest import _copy_warehouse
    _copy_warehouse(demo_crawled, tmp_path / "wh").close()
    return tmp_path / "wh"


@pytest.fixture
def models_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "models"
    monkeypatch.setenv("DATAGEN_MODELS", str(root))
    for var in ("DATAGEN_MODELS_INDEX_URL", "DATAGEN_MODELS_FIND_LINKS"):
        monkeypatch.delenv(var, raising=False)
    return root


@pytest.fixture
def fake_wheels(tmp_path) -> Path:
    """A --find-links folder with a wheel that has the real model's name and version but
    other bytes: what a corrupted or swapped download looks like."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    src = REGISTRY["smollm2-135m-instruct"].source
    build_wheel(folder, src.package, src.version, src.member, b"not the model")
    return folder


@pytest.fixture
def fake_spec(tmp_path, monkeypatch):
    """A registry entry added as a user would add one, whose wheel checks out but whose
    model file does not: (spec, find-links folder)."""
    folder = tmp_path / "fake_wheels"
    folder.mkdir()
    wheel = build_wheel(folder, "fake-model", "1.0", FAKE_MEMBER, b"gguf bytes")
    spec = ModelSpec(name="fake-model", description="a test entry", licence="none",
                     source=WheelFile("fake-model", "1.0", sha256(wheel.read_bytes()),
                                      FAKE_MEMBER, sha256(b"other bytes")), train_lr=1e-5)
    monkeypatch.setitem(REGISTRY, spec.name, spec)
    return spec, folder
