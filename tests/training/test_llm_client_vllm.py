"""The model client (datagen.llm) and `datagen compose --backend llm` against a real vLLM
OpenAI server: the session's server farm of the trainer's tests (`vllm_servers` in this
folder's conftest), so the whole suite starts one server for both, not one each. (It lives
here, not in tests/llm, because a session fixture is shared only below its conftest.)

The model is the tiny random one, so its text is nonsense: this checks the protocol (schema
requests enforced by the server, n samples, concurrent calls, accounting rows) and that
nonsense is rejected with reasons instead of stored. Other tests of the session may have
loaded other weights into the server: nonsense either way.
"""

from __future__ import annotations

import os

import pytest

import warehouse
from datagen.llm import ChatClient, ChatRequest, EndpointConfig

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.vllm]

MODEL = os.environ.get("HARDQA_TEST_VLLM_MODEL", "policy")
SCHEMA = {"type": "object", "required": ["answer"], "properties": {"answer": {"type": "string"}}}


@pytest.fixture(scope="module")
def vllm_url(request) -> str:
    """The farm's first server (served as "policy"), or the running one named by
    HARDQA_TEST_VLLM_URL (serving a model named as HARDQA_TEST_VLLM_MODEL says, or "policy")."""
    if os.environ.get("HARDQA_TEST_VLLM_URL"):
        return os.environ["HARDQA_TEST_VLLM_URL"].rstrip("/")
    return request.getfixturevalue("vllm_servers").get(1)[0].url


def test_protocol_against_vllm(vllm_url, wh):
    ep = EndpointConfig(base_url=f"{vllm_url}/v1", model=MODEL, send_seed=False,
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
    # a random model rarely stops by itself: a reply cut at max_tokens fails as "truncated",
    # one that stops at its first token (unseeded: it happens) as "empty_content"
    assert all(len(r.samples) == 1 and (r.ok or r.error_code in ("truncated", "empty_content"))
               for r in many), [
        (r.error, r.samples[0].text[:40] if r.samples else None) for r in many]
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
                 "--model", MODEL, "--max-concurrency", "2"])
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
