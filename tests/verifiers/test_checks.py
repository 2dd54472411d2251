"""Question checks on crafted good and bad questions, through the runner and a real warehouse."""

import json
import time

import pytest

from verifiers import (
    AnswerNotLeaked, CheckContext, CheckTally, Decontamination, Grounded, UniqueAnswer, WellFormed,
    run_checks,
)
from verifiers.checks import QuestionCheck

from .conftest import make_page, make_question

VG_URL, ALT_URL, OTHER_URL = "http://w/vangogh", "http://w/alt", "http://w/monet"
VG_TEXT = ("Vincent van Gogh was a Dutch painter born in 1853 in Zundert. "
           "He painted The Starry Night in 1889 while staying at Saint-Remy.")


def statuses(results):
    return [r.status for r in results]


@pytest.mark.parametrize("question,answer,ok", [
    ("Which Dutch painter born in 1853 painted The Starry Night?", "Vincent van Gogh", True),
    ("Name the river that flows through the capital of Hungary.", "Danube", True),
    ("Painter?", "Vincent van Gogh", False),  # too short
    ("The Starry Night was painted by a Dutch painter born in 1853.", "Van Gogh", False),
    ("Who painted The Starry Night? Who painted Water Lilies?", "Van Gogh", False),
    ("Who painted The Starry Night and who painted Water Lilies?", "Van Gogh", False),
    ("Who painted The Starry Night?", "", False),
    ("Who painted The Starry Night?", " ".join(["word"] * 20), False),
])
def test_well_formed(question, answer, ok):
    r = WellFormed().check_one(make_question("q", question, answer), CheckContext())
    assert (r.status == "pass") == ok, r.reason


@pytest.mark.parametrize("question,answer,aliases,ok", [
    ("Which Dutch painter born in 1853 painted The Starry Night?", "Vincent van Gogh", (), True),
    ("Which painter, like Vincent van Gogh, was Dutch?", "Vincent van Gogh", (), False),
    ("Where did Van Gogh paint his most famous night scene?", "Saint-Remy", (), True),
    ("Which painter did Gogh admire most?", "Vincent van Gogh", (), False),  # surname named
    ("Which city hosts the Big Apple marathon?", "New York City", ("Big Apple",), False),
    ("In which year, nineteen hundred and one, was the prize first given?", "1901", (), False),
    ("Is Paris the capital of France?", "yes", (), True),
])
def test_answer_not_leaked(question, answer, aliases, ok):
    r = AnswerNotLeaked().check_one(make_question("q", question, answer, aliases=aliases),
                                    CheckContext())
    assert (r.status == "pass") == ok, r.reason


@pytest.mark.parametrize("question,answer,kind,ok", [
    # a comparison's answer is one of the two it names (HotpotQA's: 72 of 76 'leaks' were these)
    ("Who was born first, Krzysztof Zanussi or Thom Andersen?", "Thom Andersen", "comparison",
     True),
    ("Who was born first, Krzysztof Zanussi or Thom Andersen?", "Krzysztof Zanussi",
     "comparison", True),
    ("Which magazine was started first Arthur's Magazine or First for Women?",
     "Arthur's Magazine", "comparison", True),
    ("Who died first, Zanussi or the director of Red Hook?", "Krzysztof Zanussi", "comparison",
     True),
    ("Which of the director of Red Hook and Krzysztof Zanussi was born earlier?",
     "Krzysztof Zanussi", "comparison", True),
    # named elsewhere than as an option, or not a comparison: a leak
    ("Which film did Thom Andersen make first, Red Hook or Los Angeles Plays Itself?",
     "Thom Andersen", "comparison", False),
    ("Who was born first, Krzysztof Zanussi or Thom Andersen?", "Thom Andersen", "bridge", False),
    ("Who was born first, Krzysztof Zanussi or Thom Andersen?", "Thom Andersen", "", False),
])
def test_a_comparison_may_name_its_answer_as_an_option(question, answer, kind, ok):
    from dataclasses import replace

    q = replace(make_question("q", question, answer), hop_kind=kind)
    r = AnswerNotLeaked().check_one(q, CheckContext())
    assert (r.status == "pass") == ok, r.reason


@pytest.fixture
def art_wh(wh):
    wh.append([make_page(VG_URL, "Vincent van Gogh", VG_TEXT),
               make_page(OTHER_URL, "Claude Monet",
                         "Claude Monet was a French painter who painted Water Lilies.")],
              run_id="crawl")
    return wh


def test_grounded(art_wh):
    good = make_question("good", "Which Dutch painter born in 1853 painted The Starry Night?",
                         "Vincent van Gogh",
                         evidence=[(VG_URL, "He painted The Starry Night in 1889"),
                                   (VG_URL, "Vincent van Gogh was a Dutch painter born in 1853")])
    reflowed = make_question("reflowed", "Which painter was born in Zundert in 1853?",
                             "Van Gogh", evidence=[(VG_URL, "Vincent  van Gogh was a Dutch\n"
                                                            "painter born in 1853 in Zundert.")])
    invented = make_question("invented", "Which Dutch painter was born in 1853?", "Van Gogh",
                             evidence=[(VG_URL, "Vincent van Gogh was a Dutch painter born in 1854")])
    missing_page = make_question("missing", "Which Dutch painter was born in 1853?", "Van Gogh",
                                 evidence=[("http://w/nowhere", "Van Gogh was born in 1853")])
    unsupported = make_question("unsupported", "Which French painter painted Water Lilies?",
                                "Edgar Degas", evidence=[(OTHER_URL, "painted Water Lilies")])
    no_evidence = make_question("none", "Which French painter painted Water Lilies?", "Monet")
    qs = [good, reflowed, invented, missing_page, unsupported, no_evidence]
    results = Grounded().run(qs, CheckContext(wh=art_wh))
    assert statuses(results) == ["pass", "pass", "fail", "fail", "fail", "fail"]
    assert "not verbatim" in results[2].reason and "not in the warehouse" in results[3].reason
    assert "does not state the answer" in results[4].reason


def test_a_yes_no_answer_is_grounded_only_as_a_comparison_of_two_pages(art_wh):
    from dataclasses import replace
    quotes = [(VG_URL, "Vincent van Gogh was a Dutch painter born in 1853"),
              (OTHER_URL, "Claude Monet was a French painter")]
    base = make_question("yn", "Were Van Gogh and Monet both painters?", "yes", evidence=quotes)
    good = replace(base, answer_type="yes_no", hop_kind="comparison")
    one_page = replace(good, question_id="one", evidence=good.evidence[:1])
    invented = replace(good, question_id="inv", evidence=(
        good.evidence[0], replace(good.evidence[1], quote="Claude Monet was a Dutch painter")))
    not_yes_no = replace(good, question_id="ny", answer="Claude Monet")
    untyped = replace(base, question_id="untyped")   # a yes no page states
    results = Grounded().run([good, one_page, invented, not_yes_no, untyped],
                             CheckContext(wh=art_wh))
    assert statuses(results) == ["pass", "fail", "fail", "fail", "fail"]
    assert "two pages" in results[1].reason and "not verbatim" in results[2].reason
    assert "yes_no" in results[3].reason and "does not state" in results[4].reason


def test_grounded_without_warehouse_is_an_error():
    q = make_question("q", "Which Dutch painter was born in 1853?", "Van Gogh",
                      evidence=[(VG_URL, "born in 1853")])
    [r] = Grounded().run([q], CheckContext(wh=None))
    assert r.status == "error" and "warehouse" in r.reason


def test_unique_answer_offline(art_wh):
    q = make_question("q", "Which Dutch painter born in 1853 painted The Starry Night?",
                      "Vincent van Gogh", evidence=[(VG_URL, "He painted The Starry Night")])
    [r] = UniqueAnswer().run([q], CheckContext(wh=art_wh))
    assert r.status == "pass", r.reason
    # Another page about a different person satisfies every word of the question.
    art_wh.append([make_page(ALT_URL, "Jan Vermeer the Younger",
                             "Jan Vermeer the Younger, a Dutch painter born in 1853, also painted "
                             "a work he called The Starry Night.")], run_id="crawl")
    [r] = UniqueAnswer().run([q], CheckContext(wh=art_wh))
    assert r.status == "fail" and "Jan Vermeer the Younger" in r.reason
    assert r.details["alternatives"][0]["url"] == ALT_URL


@pytest.mark.integration
def test_unique_answer_with_llm_judge(chat_server):
    from tests.verifiers.test_reward import judge_client
    from verifiers import LLMJudge
    judge = LLMJudge(judge_client(chat_server.base_url, "judge"))
    q = make_question("q", "Which Dutch painter painted The Starry Night?", "Vincent van Gogh")
    chat_server.reply = lambda prompt: '{"alternatives": ["Van Gogh", "Vincent Willem van Gogh"]}'
    [r] = UniqueAnswer().run([q], CheckContext(judge=judge))
    assert r.status == "pass", r.reason  # both proposals are the same person
    chat_server.reply = lambda prompt: '```json\n{"alternatives": ["Rembrandt"]}\n```'
    [r] = UniqueAnswer().run([q], CheckContext(judge=judge))
    assert r.status == "fail" and "Rembrandt" in r.reason
    assert "Which Dutch painter" in chat_server.requests[-1]["messages"][0]["content"]


class Exploding(QuestionCheck):
    name = "exploding"

    def check_one(self, q, ctx):
        if "boom" in q.question:
            raise ValueError("kaboom")
        return WellFormed().check_one(q, ctx)


class ExplodingBatch:
    name = "exploding_batch"

    def run(self, questions, ctx):
        raise RuntimeError("index unavailable")


class Slow:
    name = "slow"

    def run(self, questions, ctx):
        time.sleep(3)
        return []


def test_runner_writes_verdicts_in_one_commit_and_errors_are_verdicts(art_wh, tmp_path):
    qs = [make_question("ok", "Which Dutch painter born in 1853 painted The Starry Night?",
                        "Vincent van Gogh", evidence=[(VG_URL, "He painted The Starry Night")]),
          make_question("boom", "Which boom painter painted The Starry Night?", "Vincent van Gogh")]
    before = art_wh.current_snapshot()
    summary = run_checks(art_wh, qs, [Exploding(), ExplodingBatch(), AnswerNotLeaked(), Slow()],
                         run_id="verify-1", timeout_s=0.5)
    assert art_wh.current_snapshot() == before + 1  # one commit for the whole batch
    rows = {(r["question_id"], r["check_name"]): r for r in art_wh.sql(
        "select question_id, check_name, status, reason, run_id from verdicts").to_pylist()}
    assert len(rows) == 8 and {r["run_id"] for r in rows.values()} == {"verify-1"}
    assert rows[("ok", "exploding")]["status"] == "pass"
    assert rows[("boom", "exploding")]["status"] == "error"
    assert "kaboom" in rows[("boom", "exploding")]["reason"]
    assert all(rows[(q, "exploding_batch")]["status"] == "error" for q in ("ok", "boom"))
    assert all(rows[(q, "slow")]["status"] == "error" for q in ("ok", "boom"))
    assert "timed out" in rows[("ok", "slow")]["reason"]
    assert summary.checks["exploding"] == CheckTally(1, 0, 1, {"ValueError": 1})
    assert summary.passed_all == 0 and summary.verdicts_written == 8


def _write_jsonl(path, questions):
    path.write_text("".join(json.dumps({"question": q, "answers": ["x"]}) + "\n" for q in questions))


def test_decontamination(tmp_path, caplog):
    bench = tmp_path / "bench"
    bench.mkdir()
    _write_jsonl(bench / "hotpot.jsonl", [
        "Which magazine was started first, Arthur's Magazine or First for Women?",
        "Who directed the film that starred Tom Hanks as a castaway on an island?"])
    _write_jsonl(bench / "nq.jsonl", ["when was the eiffel tower completed"])
    qs = [make_question("copy", "Which magazine was started first, Arthur's Magazine or "
                                "First for Women?", "x"),
          make_question("reorder", "On an island, who directed the film that starred Tom Hanks "
                                   "as a castaway?", "x"),
          make_question("pronoun", "Who directed the film that starred him as a castaway on an island?", "x"),
          make_question("reword", "In what year was the Eiffel Tower completed?", "x"),
          make_question("topic", "How many films did Tom Hanks direct?", "x"),
          make_question("topic2", "Which magazine did Arthur's publisher sell in 1850?", "x")]
    check = Decontamination(source=bench)
    results = check.run(qs, CheckContext())
    assert statuses(results) == ["fail", "fail", "fail", "fail", "pass", "pass"]
    assert results[0].details["set"] == "hotpot"
    assert results[4].details["sets_checked"] == ["hotpot", "nq"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with caplog.at_level("WARNING"):
        results = Decontamination(source=empty).run(qs[:2], CheckContext())
    assert statuses(results) == ["error", "error"]
    assert "NO BENCHMARK SETS" in caplog.text


def test_hub_benchmarks_use_the_cache_and_never_pass_silently_offline(tmp_path, caplog,
                                                                     monkeypatch):
    from verifiers.decontam import BenchmarkSpec, load_hub
    spec = BenchmarkSpec("nq_open", "google-research-datasets/nq_open", "validation")
    missing = BenchmarkSpec("popqa", "akariasai/PopQA", "test")
    _write_jsonl(tmp_path / "nq_open.jsonl", ["when was the eiffel tower completed"])
    with caplog.at_level("WARNING"):
        sets = load_hub([spec, missing], cache_dir=tmp_path)  # HF_HUB_OFFLINE=1 in tests
    assert sets == {"nq_open": ["when was the eiffel tower completed"]}
    assert "popqa" in caplog.text
    monkeypatch.setattr("verifiers.decontam.CACHE_DIR", tmp_path / "nothing-cached")
    q = make_question("q", "When was the Eiffel Tower completed?", "1889")
    results = Decontamination(source="hub").run([q], CheckContext())
    assert [r.status for r in results] == ["error"]
    assert results[0].details["sets_checked"] == []


def test_default_checks_end_to_end(art_wh, tmp_path, embedder):
    from verifiers import default_checks
    bench = tmp_path / "bench"
    bench.mkdir()
    _write_jsonl(bench / "nq.jsonl", ["when was the eiffel tower completed"])
    ev = [(VG_URL, "Vincent van Gogh was a Dutch painter born in 1853")]
    good = make_question("good", "Which Dutch painter born in 1853 painted The Starry Night?",
                         "Vincent van Gogh", evidence=ev, source_urls=[VG_URL])
    dup = make_question("dup", "Which Dutch painter, born in 1853, painted The Starry Night?",
                        "Vincent van Gogh", evidence=ev, source_urls=[VG_URL])
    leaked = make_question("leaked", "Which painter is Vincent van Gogh, born in 1853?",
                           "Vincent van Gogh", evidence=ev, source_urls=[VG_URL])
    checks = default_checks(benchmarks=str(bench), embedder=embedder)
    assert [c.name for c in checks] == ["well_formed", "answer_not_leaked", "grounded",
                                        "unique_answer", "shortcut", "near_duplicates",
                                        "decontamination"]
    summary = run_checks(art_wh, [good, dup, leaked], checks, run_id="verify-2")
    rows = art_wh.sql("select question_id, check_name, status from verdicts "
                      "where run_id = 'verify-2'").to_pylist()
    failed = {(r["question_id"], r["check_name"]) for r in rows if r["status"] != "pass"}
    assert ("dup", "near_duplicates") in failed and ("leaked", "answer_not_leaked") in failed
    assert not {c for q, c in failed if q == "good"}
    assert summary.passed_all == 1 and summary.verdicts_written == 21
    assert summary.checks["decontamination"].sets_checked == ["nq"]


def test_default_checks_leave_the_environment_alone_so_decontamination_reaches_the_hub(
        art_wh, tmp_path, monkeypatch):
    """The default checks in their default order, HF_HUB_OFFLINE unset (the test conftest and
    CI export it), and the hub served from a local benchmark folder: near-duplicates loads the
    embedder first and must not switch the process offline, or decontamination after it finds
    no benchmark set and every verdict is `error`."""
    from verifiers import decontam, default_checks
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "hub"  # what the hub would serve; nothing cached yet
    folder.mkdir()
    _write_jsonl(folder / "nq_open.jsonl", ["when was the eiffel tower completed"])
    monkeypatch.setattr(decontam, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(decontam, "tcp_reachable", lambda host, port, timeout_s: True)

    def fetch(spec, target):  # the hub has only nq_open here
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((folder / f"{spec.name}.jsonl").read_bytes())

    monkeypatch.setattr(decontam, "_fetch", fetch)
    copied = make_question("copied", "When was the Eiffel Tower completed?", "1889",
                           evidence=[(VG_URL, "Vincent van Gogh was a Dutch painter born in 1853")],
                           source_urls=[VG_URL])
    fresh = make_question("fresh", "Which Dutch painter born in 1853 painted The Starry Night?",
                          "Vincent van Gogh", source_urls=[VG_URL],
                          evidence=[(VG_URL, "Vincent van Gogh was a Dutch painter born in 1853")])
    hub_before = _hub_switches()
    checks = default_checks()  # the real embedder, loaded by near-duplicates as in production
    summary = run_checks(art_wh, [copied, fresh], checks, run_id="verify-env", write=False)
    decon = summary.checks["decontamination"]
    assert (decon.errors, decon.sets_checked) == (0, ["nq_open"]), decon
    assert (decon.failed, decon.passed) == (1, 1)
    assert _hub_switches() == hub_before and "HF_HUB_OFFLINE" not in hub_before


def _hub_switches() -> dict:
    """The hub clients' variables in this process (torch's import sets others of its own)."""
    import os
    return {k: v for k, v in os.environ.items() if k.startswith(("HF_", "TRANSFORMERS_"))}
