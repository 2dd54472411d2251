"""Starting engines: the vLLM context length defaults to the model's own and a longer one is
one clear line; DeepSpeed's rendezvous comes from the entry point, never from the engine."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.vllm
def test_the_server_started_without_a_length_flag_serves_the_models_context(
        remote_engine, tiny_model_dir):
    """`python -m training.engines.vllm_server --model DIR` on a model of the project's own
    (1024 positions) stopped at start-up when the default was 2048 (the shared fixture starts
    the server exactly so)."""
    import httpx

    models = httpx.get(f"{remote_engine.base_url}/v1/models", timeout=30).json()["data"]
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert [m["max_model_len"] for m in models] == [config["max_position_embeddings"]]


def test_a_context_longer_than_the_models_is_refused_in_one_line(tiny_model_dir, capsys):
    from training.engines.vllm_engine import engine_args
    from training.engines.vllm_server import main, server_command

    limit = json.loads((tiny_model_dir / "config.json").read_text())["max_position_embeddings"]
    assert main(["--model", str(tiny_model_dir), "--max-model-len", str(2 * limit)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--max-model-len" in err
    assert str(2 * limit) in err and f"context length {limit}" in err
    with pytest.raises(ValueError, match=f"max_model_len {2 * limit} .* {limit}"):
        engine_args(tiny_model_dir, max_model_len=2 * limit)
    cmd = server_command(tiny_model_dir)
    assert cmd[cmd.index("--max-model-len") + 1] == str(limit)
    cmd = server_command(tiny_model_dir, max_model_len=limit // 2)
    assert cmd[cmd.index("--max-model-len") + 1] == str(limit // 2)


@pytest.mark.parametrize("config,tokenizer,expected", [
    ({"max_position_embeddings": 1024}, None, 1024),
    ({"max_position_embeddings": 4096, "seq_length": 2048}, None, 2048),  # the smallest key
    ({"text_config": {"max_position_embeddings": 512}}, None, 512),  # multimodal layout
    ({"max_position_embeddings": 1024}, {"model_max_length": 256}, 256),  # the tokenizer's
    ({"max_position_embeddings": 1024, "rope_scaling": {"rope_type": "linear", "factor": 4}},
     None, 4096),
    ({"max_position_embeddings": 1024, "rope_scaling": {"type": "yarn", "factor": 4}},
     None, 1024),  # YaRN configs state the scaled length already
    ({"hidden_size": 64}, None, None),  # no length key: vLLM's default applies
])
def test_model_max_len_reads_the_config_as_vllm_does(tmp_path, config, tokenizer, expected):
    from training.engines.vllm_engine import model_max_len

    (tmp_path / "config.json").write_text(json.dumps(config))
    if tokenizer:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(tokenizer))
    found = model_max_len(tmp_path)
    assert (found[0] if found else None) == expected
    assert model_max_len(tmp_path / "Qwen" / "Qwen3-8B") is None  # a hub id: nothing local


def test_lone_process_env_fills_only_what_is_missing():
    from training.engines.deepspeed_engine import LAUNCHER_VARS, lone_process_env

    launched = {k: "7" for k in LAUNCHER_VARS}
    assert lone_process_env(launched) == {}
    alone = lone_process_env({"PATH": "/bin"})
    assert set(alone) == set(LAUNCHER_VARS)
    assert (alone["RANK"], alone["WORLD_SIZE"], alone["LOCAL_RANK"]) == ("0", "1", "0")
    assert lone_process_env({"MASTER_PORT": "1234"}).get("MASTER_PORT") is None


def test_the_engine_names_the_missing_rendezvous_instead_of_setting_it(monkeypatch):
    import torch

    from training.engines.deepspeed_engine import init_distributed

    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    for key in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(RuntimeError, match="RANK, LOCAL_RANK .*lone_process_env"):
        init_distributed()
    import os
    assert "RANK" not in os.environ and "LOCAL_RANK" not in os.environ


def test_a_one_rank_world_whose_port_was_taken_since_moves_to_a_free_one(tmp_path):
    """The entry point chose MASTER_PORT, then another process listened on it (a server
    started before the trainer's first process group): the group still comes up, on another
    port, instead of failing with EADDRINUSE, and the environment is left as it was. In a
    fresh process: the group lives as long as its process."""
    import os
    import socket
    import subprocess
    import sys

    from training.engines.deepspeed_engine import LAUNCHER_VARS, lone_process_env

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
        env.update(lone_process_env({}), MASTER_PORT=str(port))
        code = ("import os, torch; from training.engines.deepspeed_engine import "
                "init_distributed; init_distributed(); "
                "print(torch.distributed.get_world_size(), os.environ['MASTER_PORT'])")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    size, env_port = out.stdout.split()[-2:]
    assert size == "1" and env_port == str(port)
    assert f"rendezvous port {port} is taken" in out.stderr
