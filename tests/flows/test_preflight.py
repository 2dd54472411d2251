"""A build checks what it needs before its first stage (flows/preflight.py): offline with no
decontamination set it stops in seconds, before the crawl, with one line saying what to set;
with `off` or a local folder it proceeds."""

from __future__ import annotations

import socket
import time

import pytest

import warehouse
from flows.config import BuildConfig
from flows.preflight import PreflightError, check_build, check_decontamination, check_endpoint

SITE = ("<html><head><title>{t}</title></head><body><article><h1>{t}</h1><p>{t} is a town in "
        "the Vell Valley. It was founded in {y} by the surveyor Ada Krell.</p></article>"
        "</body></html>")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """The hub unreachable as a user offline says so, and no benchmark set cached."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DATAGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("verifiers.decontam.CACHE_DIR", tmp_path / "no-benchmarks-cached")


@pytest.fixture
def site(tmp_path):
    folder = tmp_path / "site"
    folder.mkdir()
    for i, (t, y) in enumerate([("Ouro", 1901), ("Vellmar", 1877), ("Krellby", 1923)]):
        (folder / f"p{i}.html").write_text(SITE.format(t=t, y=y))
    return folder


def _runs_and_pages(root) -> tuple[list[tuple[str, str]], int]:
    wh = warehouse.open(root, read_only=True)
    try:
        runs = [(r["kind"], r["status"]) for r in wh.sql("select kind, status from runs "
                                                         "order by started_at").to_pylist()]
        return runs, wh.count("pages")
    finally:
        wh.close()


def test_offline_build_without_decontamination_stops_before_the_crawl(offline, site, tmp_path,
                                                                      capsys):
    from datagen.cli import main
    t = time.perf_counter()
    code = main(["build", str(site), "--warehouse", str(tmp_path / "wh")])
    seconds = time.perf_counter() - t
    err = capsys.readouterr().err
    print(f"preflight failed the build in {seconds:.1f} s")
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "verify.decontamination" in err and "../shared/data/qa_benchmarks/" in err
    assert "off" in err and seconds < 30
    runs, pages = _runs_and_pages(tmp_path / "wh")
    assert runs == [("build", "failed")] and pages == 0  # no crawl run, nothing stored


def test_decontamination_sources_that_resolve_offline(offline, tmp_path, monkeypatch):
    check_decontamination("off")
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    with pytest.raises(PreflightError, match="holds no .jsonl files"):
        check_decontamination(str(folder))
    (folder / "hotpotqa.jsonl").write_text('{"question": "Who?"}\n')
    check_decontamination(str(folder))
    with pytest.raises(PreflightError, match="hub is unreachable and 9 benchmark sets"):
        check_decontamination("hub")
    from verifiers import decontam
    cache = tmp_path / "cached"
    cache.mkdir()
    for spec in decontam.DEFAULT_BENCHMARKS:
        (cache / f"{spec.name}.jsonl").write_text('{"question": "Who?"}\n')
    monkeypatch.setattr(decontam, "CACHE_DIR", cache)
    check_decontamination("hub")  # every set cached: no hub needed


def test_offline_means_unreachable_without_a_probe(offline, monkeypatch):
    from verifiers import decontam

    def no_probe(*_):
        raise AssertionError("probed the network although HF_HUB_OFFLINE=1")
    monkeypatch.setattr(decontam, "tcp_reachable", no_probe)
    t = time.perf_counter()
    assert not decontam.hub_reachable()
    assert time.perf_counter() - t < 0.1


def test_a_model_endpoint_is_probed_before_the_build(tmp_path):
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        check_endpoint("compose", f"http://127.0.0.1:{port}/v1")
    t = time.perf_counter()
    with pytest.raises(PreflightError, match=f"compose endpoint http://127.0.0.1:{port}/v1 is "
                                             "not reachable"):
        check_endpoint("compose", f"http://127.0.0.1:{port}/v1")  # nothing listens now
    assert time.perf_counter() - t < 5
    cfg = BuildConfig(seeds=["http://example.test/"], verify={"decontamination": "off"},
                      model={"endpoint": f"http://127.0.0.1:{port}/v1", "model": "m"})
    with pytest.raises(PreflightError, match="compose endpoint"):
        check_build(tmp_path / "wh", cfg)


def test_too_little_disk_for_the_warehouse(tmp_path, monkeypatch):
    monkeypatch.setattr("flows.preflight.MIN_FREE_BYTES", 1 << 62)
    cfg = BuildConfig(verify={"decontamination": "off"})
    with pytest.raises(PreflightError, match="MiB free at .*--warehouse"):
        check_build(tmp_path / "not" / "made" / "yet", cfg)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("source", ["off", "folder"])
def test_with_off_or_a_local_folder_the_build_proceeds(offline, site, tmp_path, capsys, source):
    from datagen.cli import main
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "hotpotqa.jsonl").write_text('{"question": "Who founded Ouro?"}\n')
    cfg = tmp_path / "build.yaml"
    cfg.write_text(f"verify: {{decontamination: {'off' if source == 'off' else folder}}}\n")
    main(["build", str(site), "--config", str(cfg), "--warehouse", str(tmp_path / "wh")])
    assert "decontamination" not in capsys.readouterr().err
    runs, pages = _runs_and_pages(tmp_path / "wh")
    assert ("crawl", "succeeded") in runs and pages >= 3
