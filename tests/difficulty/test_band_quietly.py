"""`datagen band` runs quietly: what a solver's libraries print goes to the warehouse's
reports/band.log, the band's own progress (a line per batch off a terminal) to stderr."""

from __future__ import annotations

import os
import subprocess

import pytest

from datagen.cli import main
from tests.difficulty.conftest import RateSolver, add_questions


class NoisySolver(RateSolver):
    """Prints as vLLM's engine core and Triton do: on descriptors 1 and 2, from this process
    and from a child process."""

    def solve(self, questions, k):
        os.write(1, b"INFO engine core xyzzy\n")
        os.write(2, b"WARNING triton xyzzy\n")
        subprocess.run(["sh", "-c", "echo child stdout xyzzy; echo child stderr xyzzy >&2"],
                       check=True)
        return super().solve(questions, k)


@pytest.fixture
def noisy_band(wh, rates, tmp_path, monkeypatch):
    """argv of a band over 30 questions in batches of 10, its solver the noisy one."""
    import difficulty.run

    add_questions(wh, rates)
    root = wh.root
    wh.close()
    monkeypatch.setattr(difficulty.run, "make_solver", lambda wh, cfg: NoisySolver(rates))
    config = tmp_path / "band.yaml"
    config.write_text("band:\n  batch_size: 10\n")
    return ["band", "-w", str(root), "--max-k", "4", "--config", str(config)], root


def test_band_chatter_goes_to_its_log_and_progress_to_stderr(noisy_band, capfd):
    argv, root = noisy_band
    assert main(argv) == 0
    shown = capfd.readouterr()
    log = (root / "reports" / "band.log").read_text()
    for chatter in ("engine core", "triton", "child stdout", "child stderr"):
        assert f"{chatter} xyzzy" in log
    assert "xyzzy" not in shown.out + shown.err
    progress = [line for line in shown.err.splitlines() if " questions" in line]
    assert [line.split(" ", 1)[1] for line in progress] == [
        f"band {n}/30 questions" for n in (10, 20, 30)]
    assert f"library logs: {root / 'reports' / 'band.log'}" in shown.err
    assert "30 banded" in shown.out  # the summary table, after the quiet run


def test_band_verbose_leaves_the_chatter_on_the_terminal(noisy_band, capfd):
    argv, root = noisy_band
    assert main(["--verbose", *argv]) == 0
    shown = capfd.readouterr()
    assert "engine core xyzzy" in shown.out and "triton xyzzy" in shown.err
    assert not (root / "reports" / "band.log").exists()
