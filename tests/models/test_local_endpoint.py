"""A stage given `--model NAME` and no `--endpoint` serves the model for the run, uses it,
stops it and says so; a dead endpoint is one line and loses nothing stored. The vLLM
launcher is replaced here by the scripted loopback model (the real server is in
test_real_model.py), so this checks the wiring in seconds."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

import warehouse
from datagen.llm import served as served_module
from datagen.cli import main
from tests.llm import scripted
from tests.llm.loopback import LoopbackLLM

pytestmark = pytest.mark.integration

NAME = "smollm2-135m-instruct"


@pytest.fixture
def fake_vllm(monkeypatch, tmp_path):
    """`served_endpoint` backed by the scripted loopback model; records starts and stops."""
    events: list[str] = []

    @contextlib.contextmanager
    def served(model: str, **kw):
        with LoopbackLLM(scripted.respond, models=(model,)) as server:
            events.append(f"start {model}")
            try:
                yield served_module.ServedEndpoint(model, server.base_url, 0.0, tmp_path / "log")
            finally:
                events.append(f"stop {model}")
    monkeypatch.setattr(served_module, "served_endpoint", served)
    return events


def counts(root: Path) -> dict[str, int]:
    with warehouse.open(root, read_only=True) as wh:
        return {t: wh.count(t) for t in ("pages", "questions")}


def test_compose_with_a_model_and_no_endpoint_serves_it_for_the_run(
        fake_vllm, crawled, capsys):
    root = str(crawled)
    assert main(["compose", "--warehouse", root, "--model", NAME, "--max-questions", "1",
                 "--hops", "2", "--max-concurrency", "4"]) == 0
    out = capsys.readouterr().out
    assert fake_vllm == [f"start {NAME}", f"stop {NAME}"]
    assert f"model {NAME}: served by a local vLLM at http://127.0.0.1:" in out
    with warehouse.open(root, read_only=True) as wh:
        assert wh.count("llm_calls") > 0
        assert wh.read(warehouse.QuestionRecord, where="composer = 'compose:llm'")


def test_embedded_backend_never_serves(fake_vllm, crawled):
    assert main(["compose", "--warehouse", str(crawled), "--backend", "embedded",
                 "--model", NAME, "--max-questions", "2"]) == 0
    assert fake_vllm == []


def test_dead_endpoint_is_one_line_and_loses_nothing(crawled, capsys):
    before = counts(crawled)
    assert main(["compose", "--warehouse", str(crawled), "--backend", "llm",
                 "--endpoint", "http://127.0.0.1:9/v1", "--model", NAME]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: LLM endpoint http://127.0.0.1:9/v1 is not usable")
    assert not any("Traceback" in line for line in err)
    assert counts(crawled) == before


@pytest.mark.parametrize("argv, says", [
    (["build", "--backend", "llm"], "--backend llm needs --model NAME"),
    (["build", "--backend", "vllm", "--model", NAME], "--backend vllm: use embedded or llm"),
])
def test_build_backend_mistakes_are_one_line(argv, says, fake_vllm, tmp_path, capsys):
    assert main(argv + ["--warehouse", str(tmp_path / "wh")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {says}") and len(err.splitlines()) == 1
    assert fake_vllm == []


def test_sigterm_while_serving_unwinds_so_the_server_is_stopped():
    """SIGTERM becomes KeyboardInterrupt, so served_endpoint's `finally` stops vLLM."""
    import os
    import signal
    import time
    before = signal.getsignal(signal.SIGTERM)
    from warehouse.runs import sigterm_interrupts
    with pytest.raises(KeyboardInterrupt):
        with sigterm_interrupts():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # interrupted at once
    assert signal.getsignal(signal.SIGTERM) is before
