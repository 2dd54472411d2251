"""`datagen eval`: scores, avg@k / pass@k, question sets, the scripted policies on in-memory
pages, and the HotpotQA environment (oracle, random, no-tool baseline) with the real CLI."""

from __future__ import annotations

import asyncio
import json

import pytest

from datagen.tools import PageTools
from training.evaluation import run_eval
from training.evaluation.policies import OraclePolicy, RandomPolicy
from training.evaluation.questions import (EvalQuestion, load_questions_jsonl,
                                           write_hotpotqa_questions)
from training.evaluation.scoring import Attempt, score_attempt, summarize

PAGES = {"http://w/a": ("Varo Bridge", "The Varo Bridge crosses the Kesto. It opened in 1934 "
                        "after six years of work."),
         "http://w/b": ("Kesto", "The Kesto is a river of 6,960 metres. Its source is Lake Ila.")}
Q = [EvalQuestion("q1", "When did the bridge over the Kesto open?", ("1934",), "easy", 2,
                  ("Varo Bridge", "Kesto")),
     EvalQuestion("q2", "How long is the Kesto?", ("6,960 metres", "6960 m"), "hard", 1,
                  ("Kesto",))]


@pytest.mark.parametrize("answer,em,f1,judge,reward", [
    ("1934", 1, 1, 1, 1), ("in 1934", 0, 2 / 3, 1, 1), ("1933", 0, 0, 0, 0),
    (None, 0, 0, 0, 0)])
def test_scores(answer, em, f1, judge, reward):
    got = score_attempt(Attempt(answer), EvalQuestion("q", "When did it open?", ("1934",)))
    assert got == pytest.approx({"em": em, "f1": f1, "judge": judge, "reward": reward})


def test_avg_and_pass_at_k_by_group():
    rows = [{"question_id": q, "band": b, "hops": 2, "reward": r, "em": r, "f1": r, "judge": r,
             "turns": 2, "tool_calls": 1, "searches": 1, "pages_seen": 2, "answer": "x"}
            for q, b, r in [("a", "easy", 1), ("a", "easy", 0), ("b", "hard", 0), ("b", "hard", 0)]]
    s = summarize(rows, 2)
    assert (s["all"]["reward_avg@2"], s["all"]["reward_pass@2"]) == (0.25, 0.5)
    assert s["by_band"]["easy"]["reward_pass@2"] == 1.0 and s["by_band"]["hard"]["em_avg@2"] == 0
    assert s["by_hops"]["2"]["questions"] == 2


def test_a_comparison_answered_with_one_of_its_candidates_is_counted():
    from training.evaluation.scoring import chose_an_option

    q = EvalQuestion("c", "Which came out first, Tron or The Million Dollar Duck?",
                     ("The Million Dollar Duck",), kind="comparison")
    assert chose_an_option(Attempt("Tron"), q) is True   # wrong, but one of the two
    assert chose_an_option(Attempt("Million Dollar Duck"), q) is True
    assert chose_an_option(Attempt("Farrah Fawcett"), q) is False
    assert chose_an_option(Attempt(None), q) is False
    yes_no = EvalQuestion("y", "Are Tron and Tarzan both films?", ("yes",), kind="comparison")
    bridge = EvalQuestion("b", "Who directed Tron or its sequel?", ("Steven Lisberger",),
                          kind="bridge")
    assert chose_an_option(Attempt("yes"), yes_no) is None
    assert chose_an_option(Attempt("Tron"), bridge) is None
    rows = [{"question_id": str(i), "reward": 0, "em": 0, "f1": 0, "judge": 0, "turns": 1,
             "tool_calls": 1, "searches": 1, "pages_seen": 1, "answer": "x", "option": o}
            for i, o in enumerate([True, False, None, True])]
    assert summarize(rows, 1)["all"]["option_rate"] == round(2 / 3, 4)


def test_questions_jsonl(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text('{"id": "x", "question": "Q?", "answers": ["A", "a1"]}\n\n'
                 '{"question": "R?", "answer": "B", "answer_aliases": ["b"], "hops": 3}\n')
    qs = load_questions_jsonl(f)
    assert [(q.question_id, q.answers, q.hops) for q in qs] == [("x", ("A", "a1"), 0),
                                                               ("3", ("B", "b"), 3)]
    f.write_text('{"question": "Q?"}\n')
    with pytest.raises(ValueError, match=":1: a question needs"):
        load_questions_jsonl(f)


def test_oracle_finds_answers_with_open_and_random_does_not():
    tools = PageTools.from_pages(PAGES)
    rows = asyncio.run(run_eval(Q, OraclePolicy(tools), k=1))
    assert [r["answer"] for r in rows] == ["1934", "6,960 metres"]
    assert all(r["reward"] == 1.0 and r["tool_calls"] >= 2 for r in rows)
    # the oracle's answer is text it opened: without the supporting titles it has nothing
    blind = [EvalQuestion(q.question_id, q.question, q.answers) for q in Q]
    assert all(r["answer"] is None for r in asyncio.run(run_eval(blind, OraclePolicy(tools))))
    rand = asyncio.run(run_eval(Q, RandomPolicy(tools, seed=1), k=8))
    assert sum(r["reward"] for r in rand) / len(rand) <= 0.25 and rand[0]["tool_calls"] == 3


@pytest.fixture(scope="module")
def hotpotqa_env(tmp_path_factory):
    """The HotpotQA train-100 corpus as a crawled site, and its questions as eval JSONL."""
    from datagen import sites
    from datagen.cli import main
    from tests.conftest import SHARED_DATA

    corpus = SHARED_DATA / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"needs the shared reference data at {SHARED_DATA} (absent)")
    base = tmp_path_factory.mktemp("hotpotqa")
    site = sites.write_hotpotqa_site(corpus / "hotpotqa_train100_corpus.json", base / "site")
    assert main(["crawl", str(site), "--warehouse", str(base / "wh")]) == 0
    q = write_hotpotqa_questions(corpus / "hotpotqa_train100_with_context.json", base / "q.jsonl")
    return base / "wh", q


@pytest.mark.shared_data
@pytest.mark.integration
def test_hotpotqa_oracle_random_and_no_tool_baseline(hotpotqa_env, tmp_path, capsys):
    """The CLI with the oracle; random and the no-tool baseline (a tiny random checkpoint,
    through the inference engine) through the same library calls the CLI makes."""
    import warehouse
    from datagen.cli import main
    from training.evaluation.policies import checkpoint_policy, run_settings
    from training.models import build_tiny_model

    wh_root, q = hotpotqa_env
    assert main(["eval", "--questions", str(q), "-w", str(wh_root), "--policy", "oracle",
                 "--out", str(tmp_path / "oracle"), "--format", "json"]) == 0
    oracle = json.loads(capsys.readouterr().out)
    verbatim = oracle["by_answer_in_support"]["True"]
    assert verbatim["questions"] >= 80 and verbatim["reward_avg@1"] >= 0.9
    rows = [json.loads(x) for x in (tmp_path / "oracle" / "trajectories.jsonl").open()]
    assert {"question_id", "turns", "tool_calls", "answer", "reward", "em", "f1"} <= set(rows[0])

    questions = load_questions_jsonl(q)
    wh = warehouse.open(wh_root, read_only=True)
    try:
        tools = PageTools.open(wh)
        rand = summarize(asyncio.run(run_eval(questions, RandomPolicy(tools))), 1)
        model = build_tiny_model(tmp_path / "tiny", hidden=64, heads=2, kv_heads=1,
                                 intermediate=128, layers=1)
        policy, close = checkpoint_policy(model, tools, run_settings(model), use_tools=False,
                                          max_turns=4)
        try:
            notool = summarize(asyncio.run(run_eval(questions[:6], policy)), 1)
        finally:
            close()
    finally:
        wh.close()
    print("oracle", oracle["all"], "random", rand["all"], "no-tool", notool["all"])
    assert rand["all"]["reward_avg@1"] <= 0.05 and rand["all"]["tool_calls"] == 3
    assert (notool["all"]["tool_calls"], notool["all"]["turns"]) == (0, 1)


def test_eval_user_mistakes(tmp_path, capsys):
    from datagen.cli import main

    assert main(["eval", "--policy", "oracle", "-w", str(tmp_path / "none")]) != 0
    assert "one of --questions" in capsys.readouterr().err


def test_a_run_checkpoint_is_evaluated_with_its_run_agent_settings(tmp_path):
    """A checkpoint inside a run (RUN/weights/vN) is evaluated with the search results, snippet
    form and budgets it was trained with; a bare model folder keeps the defaults; a run config
    that does not load is a user error naming it."""
    import yaml

    from training.config import AgentConfig
    from training.evaluation.policies import OUTSIDE_RUN_MAX_NEW_TOKENS, PolicyError, run_settings

    ckpt = tmp_path / "run" / "weights" / "v20"
    ckpt.mkdir(parents=True)
    (tmp_path / "run" / "final").mkdir()
    bare = run_settings(ckpt)
    assert (bare.agent, bare.max_new_tokens, bare.reward_mode, bare.config) == (
        AgentConfig(), OUTSIDE_RUN_MAX_NEW_TOKENS, "reward", None)
    (tmp_path / "run" / "metrics.jsonl").write_text("")
    (tmp_path / "run" / "config.yaml").write_text(yaml.safe_dump({
        "agent": {"search_k": 1, "snippet": "sentence", "snippet_chars": 80, "max_turns": 2},
        "rollout": {"workflow": "search", "max_new_tokens": 24, "reward": "strict"}}))
    assert run_settings(tmp_path / "run" / "final") == run_settings(ckpt)
    got = run_settings(ckpt)
    a = got.agent
    assert (a.search_k, a.snippet, a.snippet_chars, a.max_turns, got.max_new_tokens,
            got.reward_mode) == (1, "sentence", 80, 2, 24, "strict")
    assert "from the run config" in got.note(ckpt)
    (tmp_path / "run" / "config.yaml").write_text("agent: {search_k: 0}\n")
    with pytest.raises(PolicyError, match="config.yaml"):
        run_settings(ckpt)


def test_an_endpoint_runs_the_training_agent_loop():
    """`--policy endpoint`: the training agent's loop over chat messages (the search result
    comes back as a user turn); its answer is scored like training's. A reply cut by the token
    budget is no usable sample for the client, so the episode has no answer."""
    from tests.llm.loopback import LoopbackLLM, Reply
    from training.evaluation.policies import endpoint_policy

    def respond(body):
        if body["messages"][-1]["role"] == "user" and "Varo" in body["messages"][-1]["content"]:
            return Reply(["<answer>1934</answer>"], ["length" if "cut" in str(body) else "stop"])
        return "Let me look. <search>Kesto bridge</search>"

    with LoopbackLLM(respond) as server:
        policy, close = endpoint_policy(PageTools.from_pages(PAGES), server.base_url,
                                        "loopback", max_turns=3)
        try:
            rows = asyncio.run(run_eval(Q[:1], policy))
            cut = asyncio.run(run_eval([EvalQuestion("q3", "cut: when?", ("1934",))], policy))
        finally:
            close()
        first = server.requests[0]
    assert first["max_tokens"] == 256 and first["messages"][0]["content"].startswith("Answer")
    r = rows[0]
    assert (r["answer"], r["turns"], r["tool_calls"], r["reward"]) == ("1934", 2, 1, 1.0)
    assert json.loads(r["transcript"])[1]["content"].startswith("Varo Bridge | http://w/a")
    assert (cut[0]["answer"], cut[0]["reward"], cut[0]["turns"]) == (None, 0.0, 3)


def test_the_cli_evaluates_an_endpoint_over_warehouse_pages(tmp_path, capsys):
    """`datagen eval --policy endpoint`: parse, build the policy in training, run, print."""
    from datagen.cli import main
    from tests.llm.loopback import LoopbackLLM

    q = _bridge_question(tmp_path)

    def respond(body):
        seen = body["messages"][-1]["content"]
        return "<answer>1934</answer>" if "1934" in seen else "<search>Varo Bridge</search>"

    with LoopbackLLM(respond) as server:
        assert main(["eval", "--questions", str(q), "-w", str(tmp_path / "wh"), "--policy",
                     "endpoint", "--endpoint", server.base_url, "--model", "loopback",
                     "--out", str(tmp_path / "out"), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)["all"]
    assert (got["reward_avg@1"], got["turns"], got["tool_calls"]) == (1.0, 2.0, 1.0)


def test_an_endpoint_that_cannot_be_reached_is_one_line(tmp_path, capsys):
    """A wrong --endpoint fails every episode alike: `datagen eval` exits 1 with the
    client's one line and where the library output went, no traceback."""
    import socket

    from datagen.cli import main

    q = _bridge_question(tmp_path)
    with socket.socket() as s:     # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["eval", "--questions", str(q), "-w", str(tmp_path / "wh"), "--policy",
                 "endpoint", "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m",
                 "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert f"127.0.0.1:{port}" in line and "is not usable" in line
    assert line.endswith(f"(library output: {tmp_path / 'out' / 'eval.log'})")


def test_eval_keeps_library_output_in_its_log(tmp_path, monkeypatch, capfd):
    """`datagen eval`'s body runs quietly: what libraries write to descriptors 1 and 2 goes to
    OUT/eval.log, the project's lines (settings, episodes done) stay on the console."""
    import os

    from training.evaluation import EvalConfig
    from training.evaluation import run as eval_run

    def noisy(cfg, note, advance):
        os.write(1, b"INFO vllm engine chatter\n")
        os.write(2, b"WARNING triton\n")
        note("agent settings from the run config")
        advance(10, 100)
        return "report"

    monkeypatch.setattr(eval_run, "evaluate", noisy)
    cfg = EvalConfig("oracle", where="hops = 1", out=tmp_path / "out")
    assert eval_run.evaluate_quietly(cfg) == "report"
    log = (tmp_path / "out" / "eval.log").read_text()
    assert "vllm engine chatter" in log and "triton" in log
    shown = capfd.readouterr()
    assert "agent settings" in shown.err and "eval 10/100 episodes" in shown.err
    assert "chatter" not in shown.out + shown.err


def test_an_eval_reports_its_episodes_as_it_goes():
    """run_eval tells `advance` every twentieth episode and the last: a long eval off a
    terminal prints lines as it goes instead of nothing until its summary."""
    import asyncio

    from training.evaluation.questions import EvalQuestion
    from training.evaluation.run import run_eval
    from training.evaluation.scoring import Attempt

    class Echo:
        reward_mode = "reward"

        async def attempt(self, q, sample):
            return Attempt(q.answers[0])

    qs = [EvalQuestion(f"q{i}", f"What is {i}?", (str(i),)) for i in range(45)]
    calls = []
    rows = asyncio.run(run_eval(qs, Echo(), advance=lambda d, t: calls.append((d, t))))
    assert len(rows) == 45 and calls[-1] == (45, 45) and len(calls) == 23
    assert [d for d, _ in calls[:-1]] == list(range(2, 45, 2))


def test_an_episode_that_raises_is_counted_and_the_eval_goes_on():
    """One episode's own error is a failed attempt (scored 0, its error named, counted); a
    failure every episode would meet (the engine unreachable) ends the eval."""
    import asyncio

    from training.evaluation.questions import EvalQuestion
    from training.evaluation.run import EvalFailed, _play, run_eval
    from training.evaluation.scoring import Attempt, summarize

    class Flaky:
        reward_mode = "reward"

        async def attempt(self, q, sample):
            if q.question_id == "q3":
                raise ValueError("a tool answered garbage")
            return Attempt(q.answers[0])

    qs = [EvalQuestion(f"q{i}", f"What is {i}?", (str(i),)) for i in range(6)]
    rows = asyncio.run(run_eval(qs, Flaky()))
    bad = [r for r in rows if r["question_id"] == "q3"]
    assert [(r["error"], r["reward"]) for r in bad] == [("ValueError: a tool answered garbage",
                                                          0.0)]
    summary = summarize(rows, 1)["all"]
    assert (summary["episodes_failed"], summary["reward_avg@1"]) == (1, round(5 / 6, 4))

    class Unreachable:
        reward_mode = "reward"

        async def attempt(self, q, sample):
            raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(EvalFailed, match="^the inference engine is unreachable"):
        _play(qs, Unreachable(), 1, lambda done, total: None)


def test_a_sigterm_ends_an_eval_with_its_policy_closed(tmp_path, monkeypatch):
    """SIGTERM to `datagen eval` raises in the eval and closes the policy (an in-process vLLM
    engine's processes were left behind, busy, when it was not)."""
    import os
    import signal
    import threading

    from training.evaluation import EvalConfig
    from training.evaluation import run as eval_run
    from training.evaluation.scoring import Attempt

    q = _bridge_question(tmp_path)
    closed = []

    class Slow:
        reward_mode = "reward"

        async def attempt(self, q, sample):
            import asyncio
            await asyncio.sleep(30)
            return Attempt("1934")

    monkeypatch.setattr(eval_run, "build_policy",
                        lambda cfg, tools, note: (Slow(), lambda: closed.append(True)))
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    cfg = EvalConfig("oracle", questions=q, warehouse=tmp_path / "wh", out=tmp_path / "out")
    with pytest.raises(KeyboardInterrupt):
        eval_run.evaluate(cfg)
    assert closed == [True]


def _bridge_question(tmp_path):
    """A warehouse of PAGES at tmp_path/wh and a one-question file beside it (its path)."""
    import datetime as dt

    import warehouse
    from warehouse import PageRecord

    now = dt.datetime.now(dt.timezone.utc)
    with warehouse.open(tmp_path / "wh") as wh:
        wh.append([PageRecord(url=u, title=t, text=x, content_hash=u, fetched_at=now)
                   for u, (t, x) in PAGES.items()])
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q1", "question": "When did the Varo Bridge open?", "answers": ["1934"]}\n')
    return q
