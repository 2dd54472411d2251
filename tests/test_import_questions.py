"""`datagen import-questions` (issue 43, item 4e): people's questions of a corpus imported into
the warehouse built from its site, as composer `human`, with evidence chains quoted from the
gold pages (the page naming the other first), idempotent, skips counted by reason, and then
verified and banded like composed questions."""

from __future__ import annotations

import json
import re

import pytest

from datagen.human.evidence import evidence_chain
from datagen.human.records import GoldPage

CORPUS = [
    {"pid": "p1", "title": "Varo Bridge", "text": "The Varo Bridge crosses the Kesto river. It "
     "was built by Ada Krell and opened in 1934."},
    {"pid": "p2", "title": "Ada Krell", "text": "Ada Krell was a surveyor. She was born in "
     "Vellmar in 1890."},
    {"pid": "p3", "title": "Kesto Dam (1950)", "text": "The Kesto Dam is a dam on the Kesto "
     "river. It opened in 1950."},
]
ABSENT = {"pid": "p9", "title": "Nore Mill", "text": "Nore Mill was built in 1801."}
QUESTIONS = [   # gold_pids in the opposite order of the chain: the import orders them
    {"id": "b1", "question": "In which town was the builder of the Varo Bridge born?",
     "answers": ["Vellmar", "Vellmar town"], "type": None, "gold_pids": ["p2", "p1"],
     "split": "train"},
    {"id": "c1", "question": "Which opened first, the Varo Bridge or the Kesto Dam?",
     "answers": ["Varo Bridge"], "type": None, "gold_pids": ["p3", "p1"], "split": "train"},
    {"id": "y1", "question": "Are the Varo Bridge and the Kesto Dam both on the Kesto river?",
     "answers": ["yes"], "type": None, "gold_pids": ["p1", "p3"], "split": "train"},
    {"id": "m1", "question": "Which was built first, the Varo Bridge or Nore Mill?",
     "answers": ["Nore Mill"], "type": None, "gold_pids": ["p1", "p9"], "split": "train"},
    {"id": "e1", "question": "Where was the surveyor of the Varo Bridge born?",
     "answers": ["Vellmar"], "type": None, "gold_pids": ["p2", "p1"], "split": "eval"},
]


def _write(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(warehouse, questions file): the corpus less Nore Mill written as a site and crawled;
    the questions file sits beside the whole corpus (hotpotqa_dev685's layout)."""
    from datagen.cli import main
    from datagen.corpus_site import write_corpus_site

    base = tmp_path_factory.mktemp("import_questions")
    (base / "site_corpus").mkdir()
    _write(base / "site_corpus" / "corpus.jsonl", CORPUS)
    write_corpus_site(base / "site_corpus", base / "site")
    assert main(["crawl", str(base / "site"), "--warehouse", str(base / "wh")]) == 0
    (base / "hotpot").mkdir()
    _write(base / "hotpot" / "corpus.jsonl", CORPUS + [ABSENT])
    _write(base / "hotpot" / "questions.jsonl", QUESTIONS)
    return base / "wh", base / "hotpot" / "questions.jsonl"


def _import(built, capsys) -> str:
    from datagen.cli import main

    wh, questions = built
    assert main(["import-questions", str(questions), "--split", "train", "-w", str(wh)]) == 0
    return capsys.readouterr().out


def _human_rows(wh_path) -> dict[str, dict]:
    import warehouse

    with warehouse.open(wh_path, read_only=True) as wh:
        rows = wh.sql("select * from questions where composer = 'human'").to_pylist()
        pages = {r["url"]: r["text"] for r in wh.sql("select url, text from pages").to_pylist()}
    return {json.loads(r["trace"])["id"]: {**r, "page_texts": pages} for r in rows}


def test_import_stores_ordered_verbatim_chains_and_skips_with_a_reason(built, capsys):
    out = _import(built, capsys)
    new, stored = map(int, re.search(r"imported (\d+), already stored (\d+)", out).groups())
    assert new + stored == 3 and "gold_page_missing 1" in out
    rows = _human_rows(built[0])
    assert sorted(rows) == ["b1", "c1", "y1"]    # eval's e1 not imported, m1 skipped
    bridge, comparison = rows["b1"], rows["c1"]
    assert (bridge["hops"], bridge["hop_kind"]) == (2, "bridge")
    assert (comparison["hops"], comparison["hop_kind"]) == (2, "comparison")
    assert (rows["y1"]["hop_kind"], rows["y1"]["answer_type"]) == ("comparison", "yes_no")
    assert bridge["answer"] == "Vellmar" and bridge["answer_aliases"] == ["Vellmar town"]
    chain = [(e["url"].rsplit("/", 1)[-1], e["quote"]) for e in bridge["evidence"]]
    assert chain == [("Varo_Bridge.html", "It was built by Ada Krell and opened in 1934."),
                     ("Ada_Krell.html", "She was born in Vellmar in 1890.")]
    assert comparison["evidence"][-1]["url"].endswith("/Varo_Bridge.html")  # states the answer
    for row in rows.values():
        assert all(e["quote"] in row["page_texts"][e["url"]] for e in row["evidence"])


def test_importing_again_adds_nothing(built, capsys):
    _import(built, capsys)
    first = _human_rows(built[0])
    out = _import(built, capsys)
    assert "imported 0, already stored 3" in out
    assert _human_rows(built[0]).keys() == first.keys()
    import warehouse
    with warehouse.open(built[0], read_only=True) as wh:
        stored = wh.sql("select count(*) as n from questions where composer = 'human'")
        summary = json.loads(wh.sql("select summary from runs where kind = 'import' order by "
                                    "started_at desc limit 1").column(0)[0].as_py())
    assert stored.column(0)[0].as_py() == 3
    assert summary["skipped"] == {"gold_page_missing": 1} and summary["existing"] == 3


def test_band_and_verify_take_the_imported_questions_alone(built, capsys):
    """Banded first: on a three-page site every question is a one-search shortcut, and band
    skips a question that failed a check, as it does a composed one."""
    from datagen.cli import main

    _import(built, capsys)
    wh = str(built[0])
    human = "question_id in (select question_id from questions where composer = 'human')"
    assert main(["band", "--where", human, "-w", wh]) == 0   # band's rows have no composer
    assert main(["verify", "--where", human, "--decontamination", "off", "-w", wh]) == 0
    assert "checked 3 questions" in capsys.readouterr().out
    import warehouse
    with warehouse.open(built[0], read_only=True) as wh_:
        banded = wh_.sql(f"select distinct question_id from difficulty where {human}")
        verdicts = wh_.sql(f"select check_name, status from verdicts where {human}").to_pylist()
    assert banded.num_rows == 3
    assert [v["status"] for v in verdicts if v["check_name"] == "grounded"] == ["pass"] * 3   # a yes: two pages' quotes
    assert len({v["check_name"] for v in verdicts}) == 6   # every check but decontamination


def test_an_answer_on_the_naming_page_closes_the_chain():
    film = GoldPage("u/film", "Oru", "Oru\nOru is a film by Ila Senn. It won the Gold Lion.",
                    {"u/ila": "Ila Senn"})
    person = GoldPage("u/ila", "Ila Senn", "Ila Senn\nIla Senn is a director born in 1950.")
    got = evidence_chain([person, film], "Which film by a director born in 1950 won a prize?",
                         ["Oru"])
    assert [(e.url, e.quote) for e in got] == [
        ("u/film", "Oru is a film by Ila Senn."),
        ("u/ila", "Ila Senn is a director born in 1950."),
        ("u/film", "Oru is a film by Ila Senn.")]


@pytest.mark.parametrize("content, args, says", [
    ("{not json\n", [], "questions.jsonl:1: not JSON"),
    (None, [], "no such file"),
    (json.dumps({"id": "x", "question": "Q?"}) + "\n", [], "needs `question` and `answers`"),
    (json.dumps(QUESTIONS[0]) + "\n", ["--split", "dev"], "no row of"),
    ("[1, 2]\n", [], "questions.jsonl:1: a row must be a JSON object, not list"),
])
def test_bad_input_is_one_line(built, tmp_path, capsys, content, args, says):
    from datagen.cli import main

    path = tmp_path / "questions.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["import-questions", str(path), *args, "-w", str(built[0])]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_missing_warehouse_is_one_line(built, tmp_path, capsys):
    from datagen.cli import main

    assert main(["import-questions", str(built[1]), "-w", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "no warehouse at" in err and len(err.strip().splitlines()) == 1
