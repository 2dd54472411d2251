"""The LLM composer against a competent scripted loopback model: `datagen compose --backend
llm` stores real questions; faults cost items, never the stage; a dead endpoint trips the
breaker and keeps what was stored; an identical rerun is answered from the cache."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import warehouse
from datagen.cli import main
from datagen.compose import ComposeConfig, run_compose
from datagen.compose.llm_backend import LLMBackend
from datagen.llm import CircuitOpen
from tests.llm.loopback import LoopbackLLM, Reply
from tests.conftest import _copy_warehouse
from tests.llm import scripted
from tests.llm.conftest import fast_endpoint
from verifiers import AnswerNotLeaked, CheckContext, Grounded

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def composed(wh) -> list[warehouse.QuestionRecord]:
    return wh.read(warehouse.QuestionRecord, where="composer = 'compose:llm'")


def compose_args(root, server, *more: str) -> list[str]:
    return ["compose", "--warehouse", str(root), "--backend", "llm", "--endpoint",
            server.base_url.removesuffix("/v1"), "--model", server.models[0], *more]


def kill_when_rows_are_stored(cmd: list[str], root, server, timeout_s: float = 240) -> int:
    """Run `datagen` in a subprocess, SIGKILL it once llm_calls has rows (so mid-run: the
    accounting is written while the run goes on); how many rows it had seen. The warehouse
    is looked at only once the server has calls (each look opens DuckDB: CPU the run needs)."""
    proc = subprocess.Popen([sys.executable, "-m", "datagen.cli", *cmd], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline, seen = time.monotonic() + timeout_s, 0
    try:
        while not seen and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5 if server.count else 0.2)
            seen = llm_rows(root) if server.count else 0
    finally:
        proc.send_signal(signal.SIGKILL)
        err = proc.communicate()[1].decode(errors="replace")
    assert seen and proc.returncode == -signal.SIGKILL, (proc.returncode, err[-2000:])
    return seen


def llm_rows(root) -> int:
    """Rows in llm_calls, read from another process (0 before the warehouse has the table)."""
    try:
        with warehouse.open(root, read_only=True) as wh:
            return wh.count("llm_calls")
    except Exception:  # noqa: BLE001 - not created yet, or a commit in progress: ask again
        return 0


@pytest.mark.slow
def test_competent_model_composes_grounded_questions_and_a_killed_run_keeps_its_calls(
        demo_crawled, tmp_path, capsys):
    """A run SIGKILLed mid-way keeps the llm_calls rows of its finished calls; the resumed
    run writes its own rows (cache replays), never the killed run's again, pays no call twice,
    and ends with >= 50 stored questions that pass the grounding and leak checks."""
    root = tmp_path / "wh"
    _copy_warehouse(demo_crawled, root).close()
    with LoopbackLLM(scripted.respond, models=("scripted",)) as server:
        args = compose_args(root, server, "--max-questions", "52", "--max-concurrency", "8")
        seen = kill_when_rows_are_stored(args, root, server)
        killed = rows_by_run(root)
        assert len(killed) == 1 and seen <= sum(killed.values())
        code = main(args)
    assert code == 0, capsys.readouterr().err
    wh = warehouse.open(root)
    try:
        [(killed_run, n_killed)] = killed.items()
        assert rows_by_run(wh)[killed_run] == n_killed  # the resumed run did not rewrite them
        paid_twice = wh.sql("SELECT request_key FROM llm_calls WHERE status = 'ok' "
                            "GROUP BY ALL HAVING count(*) > 1").num_rows
        assert paid_twice == 0 and wh.scalar("SELECT count(*) FROM llm_calls WHERE status = "
                                             "'cached'") > 0
        qs = composed(wh)
        ctx = CheckContext(wh=wh)
        grounded, unleaked = Grounded().run(qs, ctx), AnswerNotLeaked().run(qs, ctx)
        passing = [q for q, g, u in zip(qs, grounded, unleaked)
                   if g.status == u.status == "pass"]
        assert len(passing) >= 50, [(g.reason, u.reason) for g, u in zip(grounded, unleaked)][:5]
        assert all(q.hops >= 2 and q.backend == "llm" for q in qs)
        runs = wh.sql("SELECT run_id, status, summary FROM runs WHERE kind = 'compose' "
                      "ORDER BY started_at").to_pylist()
        assert [r["status"] for r in runs] == ["interrupted", "succeeded"]
        calls = wh.sql("SELECT purpose, count(*) AS n FROM llm_calls WHERE run_id = ? "
                       "GROUP BY ALL", [runs[1]["run_id"]]).to_pylist()
        assert {"compose/step", "compose/word", "compose/self_check"} <= {r["purpose"] for r in calls}
        llm = json.loads(runs[1]["summary"])["llm"]  # the client's totals reach runs.summary
        assert llm["calls"] == sum(r["n"] for r in calls) and set(llm["structured"]) == {"server"}
    finally:
        wh.close()


def rows_by_run(wh_or_root) -> dict[str, int]:
    if not isinstance(wh_or_root, warehouse.Warehouse):
        with warehouse.open(wh_or_root) as wh:
            return rows_by_run(wh)
    return {r["run_id"]: r["n"] for r in wh_or_root.sql(
        "SELECT run_id, count(*) AS n FROM llm_calls GROUP BY ALL").to_pylist()}


FAULTS = {  # by a hash of the request body: transient faults hit its first sending only
    1: ("transient", Reply(status=503, body=b"<html><title>503</title></html>")),
    2: ("transient", Reply(status=429, body=b"{}", headers={"Retry-After": "0"})),
    3: ("transient", Reply(reset=True)),
    4: ("permanent", Reply(status=400, body=b'{"error": {"message": "bad"}}')),
    5: ("permanent", Reply(body=b'{"error": {"message": "model crashed"}}')),
    6: ("permanent", Reply(contents=[])),
    7: ("permanent", Reply(body=b'{"choices": "\xff"}')),
    8: ("permanent", Reply(contents=["cut"], finish_reasons=["length"])),
}


class Faulty:
    """The scripted model behind a fault injector (about one request in three faults)."""

    def __init__(self):
        self.seen: set[str] = set()

    def __call__(self, body):
        key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        kind, fault = FAULTS.get(int(key, 16) % 24, (None, None))
        first = key not in self.seen
        self.seen.add(key)
        if kind == "permanent" or (kind == "transient" and first):
            return fault
        return scripted.respond(body)


def run_llm(wh, server, questions: int = 8, batch: int = 4, **kw):
    backend = LLMBackend(fast_endpoint(server.base_url, model="loopback", **kw))
    cfg = ComposeConfig(backend="llm", endpoint=server.base_url, model="loopback",
                        max_questions=questions, batch_size=batch)
    return run_compose(wh, cfg, backend=backend), backend


def test_faults_cost_items_not_the_stage_and_rerun_uses_the_cache(demo_crawled, tmp_path,
                                                                  capsys):
    wh = _copy_warehouse(demo_crawled, tmp_path / "wh")
    try:
        with LoopbackLLM(Faulty()) as server:
            summary, backend = run_llm(wh, server)
            rows = wh.sql("SELECT * FROM llm_calls").to_pylist()
            failed = [r for r in rows if r["status"] == "failed"]
            codes = {r["error"].split(":")[0] for r in failed}
            assert {"http_4xx", "error_body", "empty_choices"} <= codes, codes
            assert all(r["item_id"] and r["purpose"].startswith("compose/") for r in failed)
            assert sum(r["attempts"] > 1 for r in rows) >= 3  # transient faults were retried
            assert summary.composed >= 5
            first = sorted(q.question for q in composed(wh))
            # an identical run on a fresh copy with the same cache: only the failed calls go out
            wh2 = _copy_warehouse(demo_crawled, tmp_path / "wh2")
            try:
                (tmp_path / "wh2" / "cache").mkdir(exist_ok=True)
                (tmp_path / "wh2" / "cache" / "llm").symlink_to(tmp_path / "wh" / "cache" / "llm")
                before = server.count
                run_llm(wh2, server)
                again = wh2.sql("SELECT status, attempts FROM llm_calls").to_pylist()
                assert sorted(q.question for q in composed(wh2)) == first
                assert server.count - before == sum(r["attempts"] for r in again
                                                    if r["status"] == "failed")
                assert sum(r["status"] == "cached" for r in again) == sum(
                    r["status"] == "ok" for r in rows)
            finally:
                wh2.close()
            budget_stops_the_stage_with_one_line(tmp_path / "wh2", server, capsys)
    finally:
        wh.close()


# calls the endpoint answers before it dies: enough for a committed batch or more (a seed
# without a bridge to another page is worded, then not composed, so a question costs more
# calls since hops became pages)
LIVE_CALLS = 700


def test_dead_endpoint_trips_the_breaker_and_keeps_what_was_stored(demo_crawled, tmp_path):
    wh = _copy_warehouse(demo_crawled, tmp_path / "wh")
    calls = {"n": 0}

    def dies(body):
        calls["n"] += 1
        return scripted.respond(body) if calls["n"] <= LIVE_CALLS else Reply(status=502, body=b"<html/>")
    try:
        with LoopbackLLM(dies) as server, pytest.raises(CircuitOpen) as err:
            run_llm(wh, server, questions=40, batch=5, max_retries=2, max_concurrency=4)
        assert "\n" not in str(err.value) and "in a row" in str(err.value)
        run = wh.sql("SELECT status, summary FROM runs WHERE kind = 'compose'").to_pylist()[0]
        assert run["status"] == "failed" and "in a row" in json.loads(run["summary"])["error"]
        assert len(composed(wh)) >= 5  # the batches committed before the endpoint died
        assert server.count - LIVE_CALLS <= 20 + 4  # the breaker, plus calls already in flight
    finally:
        wh.close()


def budget_stops_the_stage_with_one_line(root, server, capsys) -> None:
    """`--max-calls`: the run stops after that many calls sent, one line, a non-zero exit, its
    run marked failed with the reason; the calls it cut short are rows of their own."""
    capsys.readouterr()
    code = main(compose_args(root, server, "--no-cache", "--max-calls", "5"))
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0 and "max_calls=5" in err, err
    with warehouse.open(root) as wh:
        run = wh.sql("SELECT run_id, status, summary FROM runs WHERE kind = 'compose' "
                     "ORDER BY started_at DESC LIMIT 1").to_pylist()[0]
        assert run["status"] == "failed" and "max_calls=5" in json.loads(run["summary"])["error"]
        rows = wh.sql("SELECT error FROM llm_calls WHERE run_id = ?", [run["run_id"]]).to_pylist()
    assert sum(not r["error"].startswith("stopped") for r in rows) == 5 < len(rows)


def test_budget_caps_reach_the_client_from_the_build_config():
    from datagen.compose.llm_backend import endpoint_config
    from flows.config import BuildConfig
    build = BuildConfig(model={"endpoint": "http://h:1/v1", "model": "m", "max_tokens": 900},
                        compose={"max_calls": 40})
    ep = endpoint_config(ComposeConfig(**build.compose_fields()))
    assert (ep.max_calls, ep.max_tokens) == (40, 900)


def weak_model(body):
    """A small model's habits (what SmolLM2-135M did): wordings that invent a place, run on
    past the question mark or are no question at all; a self-check that says every question
    names its answer."""
    prompt = body["messages"][-1]["content"]
    if '"names_answer"' in prompt:
        return json.dumps({"names_answer": True, "states_all_facts": True, "one_answer": False})
    if '{"question"' in prompt and "Your reply could not be used" not in prompt:
        draft = scripted._field(prompt, "Draft:")
        return [json.dumps({"question": q}) for q in (
            "In Essex, " + draft[0].lower() + draft[1:], draft.split()[-1].rstrip("?"),
            draft + " It was a good one,")][: int(body.get("n") or 1)]
    return scripted.respond(body)


def test_a_weak_model_still_composes_and_stops_asking_its_unreliable_self_check(
        demo_crawled, tmp_path):
    """Inventions and run-on wordings are caught locally (the draft is kept where no sample
    passes); a self-check wrong on most verdicts is no longer called after the calibration."""
    from datagen.compose.llm_backend import CHECK_CALIBRATION
    wh = _copy_warehouse(demo_crawled, tmp_path / "wh")
    try:
        with LoopbackLLM(weak_model) as server:
            summary, backend = run_llm(wh, server, questions=6, batch=8, max_concurrency=2)
        rejections = summary.llm["backend_rejections"]
        assert summary.composed >= 6 and rejections["self_check_unreliable"] >= CHECK_CALIBRATION // 2
        assert rejections["word_adds_unknown_names"] and rejections["word_kept_the_draft"]
        checks = wh.scalar("SELECT count(*) FROM llm_calls WHERE purpose = 'compose/self_check'")
        assert CHECK_CALIBRATION <= checks <= CHECK_CALIBRATION + 2  # + those in flight
        questions = [q.question for q in composed(wh)]
        assert not any("Essex" in q or "good one" in q for q in questions)
    finally:
        wh.close()


def test_a_wording_only_model_words_the_engines_multi_page_chains_alone(demo_crawled,
                                                                        tmp_path):
    """`compose.llm_role: word`: the engine picks every step; the model is asked to word only
    chains over two pages or more (no step, no seed prompt), and what it words is stored."""
    from datagen.compose.embedded import EmbeddedBackend

    wh = _copy_warehouse(demo_crawled, tmp_path / "wh")
    try:
        with LoopbackLLM(scripted.respond, models=("loopback",)) as server:
            backend = LLMBackend(fast_endpoint(server.base_url, model="loopback"),
                                 engine=EmbeddedBackend())
            cfg = ComposeConfig(backend="llm", endpoint=server.base_url, model="loopback",
                                max_questions=6, batch_size=3, llm_role="word")
            summary = run_compose(wh, cfg, backend=backend)
        purposes = {r["purpose"] for r in wh.sql("SELECT purpose FROM llm_calls").to_pylist()}
        assert summary.composed >= 3 and "compose/word" in purposes
        assert not purposes & {"compose/step", "compose/seed"}, purposes
        assert all(q.hops >= 2 for q in composed(wh))
    finally:
        wh.close()
