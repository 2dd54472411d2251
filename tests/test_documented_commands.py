"""Every `datagen query|eval|export|band` example shown in README.md and in the comments of
examples/*.yaml runs against a small demo warehouse: rc 0, or one clear line for a user
mistake (a checkpoint that this test never trained), never a traceback."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERBS = ("query", "eval", "export", "band")
pytestmark = [pytest.mark.slow, pytest.mark.integration]


def readme_examples(text: str) -> list[str]:
    """`datagen VERB ...` in inline code and bash blocks; synopses (`[--opt]`, `a|b`, `...`) skipped."""
    spans = re.findall(r"`([^`]+)`", re.sub(r"```.*?```", _block_lines, text, flags=re.S))
    found = [" ".join(s.replace(".venv/bin/datagen", "datagen").split()) for s in spans]
    return [c for c in found if c.split()[:2][0:1] == ["datagen"] and _runnable(c)]


def _block_lines(m: re.Match) -> str:
    return " ".join(f"`{line.strip()}`" for line in m.group(0).splitlines()[1:-1])


def _runnable(cmd: str) -> bool:
    words = cmd.split()
    return (len(words) > 1 and words[1] in VERBS
            and not any(mark in cmd for mark in ("[", "\\|", "...", "…", "FILE", "SQL\"")))


def yaml_examples(text: str) -> list[str]:
    """`#   datagen VERB ...` comment lines of an example config (up to a trailing comment)."""
    cmds = [line.lstrip("# ").split("  #")[0].strip() for line in text.splitlines()
            if line.lstrip().startswith("#") and "datagen " in line]
    return [c for c in cmds if c.startswith("datagen ") and _runnable(c)]


def documented() -> list[str]:
    cmds = readme_examples((REPO / "README.md").read_text())
    for path in sorted((REPO / "examples").glob("*.yaml")):
        cmds += yaml_examples(path.read_text())
    return list(dict.fromkeys(cmds))


def test_the_examples_are_found():
    cmds = documented()
    assert any(c.startswith("datagen query") for c in cmds), cmds
    assert any(c.startswith("datagen eval") for c in cmds), cmds
    assert any(c.startswith("datagen export") for c in cmds), cmds


@pytest.fixture(scope="module")
def small_build(tmp_path_factory) -> Path:
    """A 30-entity demo build, run as a user would: a subprocess, with a ~/.prefect that a newer
    Prefect made and no PREFECT_* variables (the build must use its own Prefect home)."""
    from tests.test_prefect_home import _datagen, user_env
    base = tmp_path_factory.mktemp("documented")
    cfg = base / "build.yaml"
    cfg.write_text("demo: {entities: 30, seed: 3}\nseed: 0\n")
    env = user_env(base)
    before = (base / "user" / ".prefect" / "prefect.db").read_bytes()
    done = _datagen(["build", "--config", str(cfg), "--warehouse", str(base / "wh")], env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Loading weights" not in done.stderr  # no library progress bars in a log
    assert (base / "user" / ".prefect" / "prefect.db").read_bytes() == before
    assert sorted(p.name for p in (base / "user" / ".prefect").iterdir()) == ["prefect.db"]
    assert (base / "xdg" / "datagen" / "prefect" / "prefect.db").is_file()
    return base / "wh"


def test_build_beside_a_newer_prefect_home_uses_its_own(small_build):
    assert (small_build / "WAREHOUSE.json").is_file()


@pytest.mark.parametrize("cmd", documented())
def test_documented_command_runs_or_says_one_line(cmd, small_build, tmp_path, monkeypatch, capfd):
    from datagen.cli import main
    monkeypatch.chdir(tmp_path)  # relative outputs (out/, runs/) land here
    rc = main([*shlex.split(cmd)[1:], "--warehouse", str(small_build)])
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception" not in err, err[-2000:]
    if rc != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), err[-2000:]
        paths = [w.split(":", 1)[-1] for w in shlex.split(cmd) if "/" in w]
        assert any(p in lines[0] for p in paths), lines[0]  # it names what is missing
