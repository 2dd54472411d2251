"""JSON-schema output: the server path, the prompt fallback, repairs, and accounting rows."""

from __future__ import annotations

import json
import time

import pytest

from datagen.llm import ChatClient, ChatRequest
from tests.llm.loopback import Reply
from datagen.llm.structured import extract_json
from tests.llm.conftest import fast_endpoint, user

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}, "year": {"type": "integer"}},
          "required": ["answer", "year"], "additionalProperties": False}


def test_server_path_sends_response_format_and_validates(llm_server):
    llm_server.respond = lambda body: ['{"answer": "Paris", "year": 1900}', '{"answer": "Rome"}']
    with ChatClient(fast_endpoint(llm_server.base_url, max_repairs=0)) as client:
        result = client.chat(ChatRequest(user("q"), n=2, schema=SCHEMA))
    sent = llm_server.requests[0]
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert result.structured == "server" and result.status == "ok"
    assert result.samples[0].data == {"answer": "Paris", "year": 1900}
    assert result.samples[1].error.startswith("schema_invalid") and "year" in result.samples[1].error


def test_refused_schema_falls_back_to_prompt_and_parse(llm_server):
    def respond(body):
        if "response_format" in body:
            return Reply(status=400, body=b'{"error": {"message": "response_format is not supported"}}')
        return 'Sure! ```json\n{"answer": "Paris", "year": 1900,}\n```'
    llm_server.respond = respond
    with ChatClient(fast_endpoint(llm_server.base_url)) as client:
        first = client.chat(ChatRequest(user("q1"), schema=SCHEMA))
        second = client.chat(ChatRequest(user("q2"), schema=SCHEMA))
    assert first.structured == second.structured == "prompt"
    assert first.samples[0].data == {"answer": "Paris", "year": 1900}  # fence, trailing comma
    assert [("response_format" in b) for b in llm_server.requests] == [True, False, False]
    assert '"required"' in llm_server.requests[-1]["messages"][-1]["content"]


def test_broken_json_is_re_asked_a_bounded_number_of_times(llm_server):
    replies = iter(['{"answer": "Paris"', '{"answer": "Paris", "year": 1900}'])
    llm_server.respond = lambda body: next(replies)
    with ChatClient(fast_endpoint(llm_server.base_url, max_repairs=1)) as client:
        fixed = client.chat(ChatRequest(user("q"), schema=SCHEMA))
    assert fixed.status == "ok" and fixed.attempts == 2 and fixed.samples[0].data["year"] == 1900
    repair = llm_server.requests[-1]["messages"]
    assert repair[-2]["content"] == '{"answer": "Paris"' and "invalid_json" in repair[-1]["content"]

    llm_server.respond = lambda body: "no idea"
    with ChatClient(fast_endpoint(llm_server.base_url, max_repairs=2, cache=False)) as client:
        failed = client.chat(ChatRequest(user("q"), schema=SCHEMA))
    assert failed.status == "failed" and failed.error_code == "invalid_json" and failed.attempts == 3


@pytest.mark.parametrize("text,data", [
    ('{"a": 1}', {"a": 1}),
    ('Here you go: {"a": [1, 2,]} hope it helps', {"a": [1, 2]}),
    ('```\n{"a": "}"}\n```', {"a": "}"}),
])
def test_extract_json(text, data):
    assert extract_json(text) == data


def test_every_call_is_an_llm_calls_row(llm_server, wh):
    llm_server.respond = lambda body: (Reply(status=404, body=b"{}") if "bad" in json.dumps(body)
                                       else '{"answer": "x", "year": 1}')
    run_id = wh.start_run("compose", {"endpoint": llm_server.base_url})
    reqs = [ChatRequest(user("good"), schema=SCHEMA, purpose="compose/seed", item_id="s1"),
            ChatRequest(user("bad"), purpose="compose/inject", item_id="s2")]
    with ChatClient(fast_endpoint(llm_server.base_url), wh=wh, run_id=run_id, flush_s=0.05) as client:
        client.chat_many(reqs)
        deadline = time.monotonic() + 20  # written while the client is open: a killed run keeps them
        while wh.count("llm_calls") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert wh.count("llm_calls") == 2 and client.log.written == 2
    with ChatClient(fast_endpoint(llm_server.base_url), wh=wh, run_id=run_id) as client:
        client.chat_many(reqs)
        totals = client.totals()
    assert (wh.root / "cache" / "llm").is_dir()
    rows = wh.sql("SELECT purpose, item_id, status, error, attempts, cached, n, model, endpoint "
                  "FROM llm_calls ORDER BY created_at, purpose").to_pylist()
    assert [(r["purpose"], r["status"], r["cached"]) for r in rows] == [
        ("compose/inject", "failed", False), ("compose/seed", "ok", False),
        ("compose/inject", "failed", False), ("compose/seed", "cached", True)] or sorted(
        (r["purpose"], r["status"]) for r in rows) == [
        ("compose/inject", "failed"), ("compose/inject", "failed"),
        ("compose/seed", "cached"), ("compose/seed", "ok")]
    failed = [r for r in rows if r["status"] == "failed"]
    assert all(r["error"].startswith("http_4xx: 404") and r["item_id"] == "s2" for r in failed)
    assert {r["model"] for r in rows} == {"loopback"} and rows[0]["endpoint"] == llm_server.base_url
    assert totals["cached"] == 1 and totals["failed"] == 1


def test_the_judge_runs_on_the_client_it_is_given(llm_server, wh):
    from verifiers import JudgeError, LLMJudge
    llm_server.respond = lambda body: '{"alternatives": ["Rembrandt", " "]}'
    run_id = wh.start_run("verify", {})
    with ChatClient(fast_endpoint(llm_server.base_url), wh=wh, run_id=run_id) as client:
        judge = LLMJudge(client)
        assert judge.alternatives("Who painted it?", "Vermeer") == ["Rembrandt"]
        llm_server.respond = lambda body: '{"equivalent": "perhaps"}'
        with pytest.raises(JudgeError, match="schema_invalid"):
            judge.equivalent("q", "a", (), "b")
    assert llm_server.requests[0]["response_format"]["json_schema"]["schema"]["required"] == ["alternatives"]
    rows = wh.sql("SELECT purpose, status FROM llm_calls ORDER BY created_at").to_pylist()
    assert [(r["purpose"], r["status"]) for r in rows] == [
        ("verify/judge_alternatives", "ok"), ("verify/judge_equivalence", "failed")]
