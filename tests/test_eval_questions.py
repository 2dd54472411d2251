"""`datagen eval` on human-written questions over a corpus site (issue 43, item 3): --split
keeps one split of the file, gold_pids become support titles through the corpus beside it,
a question's type is derived where the file has none, and the report gives reward, searches
and pages seen per episode by type (yes/no apart)."""

from __future__ import annotations

import json

import pytest

from training.evaluation.questions import (EvalQuestion, derive_kind, load_questions_jsonl,
                                           type_group)

CORPUS = [
    {"pid": "p1", "title": "Varo Bridge", "text": "The Varo Bridge crosses the Kesto. It was "
     "built by Ada Krell and opened in 1934."},
    {"pid": "p2", "title": "Ada Krell", "text": "Ada Krell was a surveyor born in Vellmar."},
    {"pid": "p3", "title": "Kesto Dam (1950)", "text": "The Kesto Dam opened in 1950. It is "
     "forty metres high."},
    {"pid": "p4", "title": "Lake Ouro", "text": "Lake Ouro lies north of the Kesto."},
]
QUESTIONS = [
    {"id": "b1", "question": "Where was the builder of the Varo Bridge born?",
     "answers": ["Vellmar"], "type": None, "gold_pids": ["p1", "p2"], "split": "eval"},
    {"id": "c1", "question": "Which opened first, the Varo Bridge or the Kesto Dam?",
     "answers": ["Varo Bridge"], "type": None, "gold_pids": ["p1", "p3"], "split": "eval"},
    {"id": "y1", "question": "Are the Varo Bridge and the Kesto Dam both in Vellmar?",
     "answers": ["no"], "type": None, "gold_pids": ["p1", "p3"], "split": "eval"},
    {"id": "t1", "question": "What lies north of the Kesto?", "answers": ["Lake Ouro"],
     "type": None, "gold_pids": ["p4"], "split": "train"},
]


def _write(folder, questions=QUESTIONS, corpus=CORPUS):
    """A folder laid out like hotpotqa_dev685: corpus.jsonl beside questions.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("corpus.jsonl", corpus), ("questions.jsonl", questions)):
        if rows is not None:
            (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder / "questions.jsonl"


@pytest.fixture(scope="module")
def site_eval(tmp_path_factory):
    """(warehouse, questions file): the tiny corpus written as a site and crawled."""
    from datagen.cli import main
    from datagen.corpus_site import write_corpus_site

    base = tmp_path_factory.mktemp("human_questions")
    q = _write(base / "corpus")
    write_corpus_site(base / "corpus", base / "site")
    assert main(["crawl", str(base / "site"), "--warehouse", str(base / "wh")]) == 0
    return base / "wh", q


def test_split_keeps_its_rows_and_gold_pids_name_the_support_titles(tmp_path):
    q = _write(tmp_path / "c")
    got = load_questions_jsonl(q, "eval")
    assert [x.question_id for x in got] == ["b1", "c1", "y1"]
    assert got[0].support_titles == ("Varo Bridge", "Ada Krell")
    assert [x.question_id for x in load_questions_jsonl(q)] == ["b1", "c1", "y1", "t1"]
    # no corpus beside the file: no support titles, so only yes/no gets a type
    bare = _write(tmp_path / "bare", corpus=None)
    assert [(x.support_titles, x.kind) for x in load_questions_jsonl(bare, "eval")] == [
        ((), ""), ((), ""), ((), "comparison")]


@pytest.mark.parametrize("rows, split, says", [
    (QUESTIONS[:2] + [{"question": "Q?", "answers": ["A"]}], "eval",
     "questions.jsonl:3: the row has no `split` field"),
    (QUESTIONS, "dev", "--split dev: no row of"),
    ([{**QUESTIONS[0], "gold_pids": ["p1", "p9"]}], None, "questions.jsonl:1: gold_pids ['p9']"),
])
def test_split_and_gold_mistakes_are_one_line(tmp_path, rows, split, says):
    q = _write(tmp_path / "c", rows)
    with pytest.raises(ValueError) as err:
        load_questions_jsonl(q, split)
    assert says in str(err.value) and "\n" not in str(err.value)
    if split == "dev":
        assert "(its splits: eval, train)" in str(err.value)


@pytest.mark.parametrize("question, answer, titles, kind, group", [
    ("Are Ila and Oru both lakes?", "Yes", ("Ila", "Oru"), "comparison", "yes/no"),
    ("Is the Varo Bridge older?", "no", (), "comparison", "yes/no"),
    ("Which is older, Varo Bridge or Kesto Dam?", "Kesto Dam", ("Varo Bridge", "Kesto Dam"),
     "comparison", "comparison"),
    # the answer names one of the two (a fuller name), no comparing word
    ("Who was born earlier: Thomas Mann, Ada Krell?", "Paul Thomas Mann",
     ("Thomas Mann", "Ada Krell (surveyor)"), "comparison", "comparison"),
    ("What do Ada Krell and Ila Moro have in common?", "surveyor", ("Ada Krell", "Ila Moro"),
     "comparison", "comparison"),
    ("Where was the builder of the Varo Bridge born?", "Vellmar", ("Varo Bridge", "Ada Krell"),
     "bridge", "bridge"),
    # both named, but no comparing word and the answer is neither: a bridge through both
    ("Ada Krell drew which map of Vellmar?", "the Kesto map", ("Ada Krell", "Vellmar"),
     "bridge", "bridge"),
    ("Who built the Varo Bridge?", "Ada Krell", (), "", ""),
])
def test_question_type_is_derived_where_the_file_has_none(question, answer, titles, kind,
                                                          group):
    assert derive_kind(question, (answer,), titles) == kind
    assert type_group(EvalQuestion("q", question, (answer,), kind=kind)) == group


def test_a_files_own_type_is_kept(tmp_path):
    q = _write(tmp_path / "c", [{**QUESTIONS[0], "type": "comparison"}])
    assert load_questions_jsonl(q)[0].kind == "comparison"


def test_the_report_gives_searches_and_pages_seen_by_type(site_eval, tmp_path, capsys):
    """The CLI over the crawled corpus site, --split eval, the oracle: one block per type,
    yes/no apart; the oracle opens both gold pages of a two-page question (2 pages seen)."""
    from datagen.cli import main

    wh, q = site_eval
    args = ["eval", "--questions", str(q), "--split", "eval", "-w", str(wh),
            "--policy", "oracle", "--out", str(tmp_path / "o")]
    assert main([*args, "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["all"]["questions"] == 3 and set(s["by_type"]) == {"bridge", "comparison", "yes/no"}
    bridge = s["by_type"]["bridge"]
    assert (bridge["reward_avg@1"], bridge["searches"], bridge["pages_seen"]) == (1.0, 2.0, 2.0)
    assert s["by_type"]["comparison"]["reward_avg@1"] == 1.0
    assert s["by_type"]["yes/no"]["pages_seen"] == 2.0
    rows = [json.loads(x) for x in (tmp_path / "o" / "trajectories.jsonl").open()]
    assert {r["question_id"]: r["type"] for r in rows} == {"b1": "bridge", "c1": "comparison",
                                                          "y1": "yes/no"}
    assert main(args) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split("\t")[-2:] == ["searches", "pages_seen"]
    assert [line.split("\t")[0] for line in table[1:]] == [
        "all", "type=bridge", "type=comparison", "type=yes/no"]


def test_a_split_no_row_has_is_one_line_in_the_cli(site_eval, tmp_path, capsys):
    from datagen.cli import main

    wh, q = site_eval
    assert main(["eval", "--questions", str(q), "--split", "dev", "-w", str(wh),
                 "--policy", "oracle", "--out", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --split dev: no row of") and "\n" not in err
    assert main(["eval", "--where", "hops = 1", "--split", "eval", "-w", str(wh),
                 "--policy", "oracle"]) != 0
    assert "--split selects rows of a --questions file" in capsys.readouterr().err


def test_random_policy_counts_what_it_was_shown(site_eval):
    """The random policy's pages seen are the distinct hits and pages it was shown."""
    import asyncio

    import warehouse
    from datagen.tools import PageTools
    from training.evaluation import run_eval
    from training.evaluation.policies import RandomPolicy

    wh_root, q = site_eval
    wh = warehouse.open(wh_root, read_only=True)
    try:
        rows = asyncio.run(run_eval(load_questions_jsonl(q), RandomPolicy(PageTools.open(wh))))
    finally:
        wh.close()
    assert all(1 <= r["pages_seen"] <= 4 and r["searches"] >= 1 for r in rows)
