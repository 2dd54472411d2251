"""The shortcut check (verifiers/shortcut.py): one search of a multi-hop question's own text
(k = 3, the warehouse's BM25 index) must not return the page holding the answer, nor, for a
comparison, every compared page."""

from __future__ import annotations

from dataclasses import replace

import pytest

from verifiers import CheckContext, run_checks
from verifiers.shortcut import (
    COMPARISON, Shortcut, is_shortcut, shortcut_flags, shortcut_pages,
)
from warehouse import StoredPages

from .conftest import make_page, make_question

SITE = "https://site.test/"
PAGES = {
    "vesk": ("Orlan Vesk", "Orlan Vesk is a painter. Vesk studied at the Marlow Academy."),
    "marlow": ("Marlow Academy", "The Marlow Academy is a school founded in 1821 in Tessaly."),
    "harrow": ("Quenby Harrow", "Quenby Harrow is a composer born in Dunmere. Harrow wrote the "
                                "Grey Sonata."),
    "dunmere": ("Dunmere", "Dunmere is a harbour town. Its lighthouse was lit in 1790."),
    "tessaly": ("Tessaly", "Tessaly is a river valley with vineyards and orchards."),
}


def url(key: str) -> str:
    return SITE + key


@pytest.fixture
def site_wh(wh):
    wh.append([make_page(url(k), t, x) for k, (t, x) in PAGES.items()], run_id="crawl")
    return wh


def two_hop(qid, question, answer, *evidence):
    """A stored two-hop question whose evidence is (page key, quote) in chain order."""
    q = make_question(qid, question, answer, evidence=[(url(k), x) for k, x in evidence])
    return replace(q, hops=2)


SHORTCUT_Q = two_hop("short", "In what year was the Marlow Academy school founded?", "1821",
                     ("vesk", "Vesk studied at the Marlow Academy"), ("marlow", "founded in 1821"))
HARD_Q = two_hop("hard", "What year is the beacon of the Grey Sonata composer's birthplace from?",
                 "1790", ("harrow", "Harrow is a composer born in Dunmere"),
                 ("dunmere", "Its lighthouse was lit in 1790"))
ONE_HOP = replace(make_question("one", "In what year was the Marlow Academy founded?", "1821",
                                evidence=[(url("marlow"), "founded in 1821")]), hops=1)


def test_one_search_finds_the_answer_page_of_a_shortcut_only(site_wh):
    pages = StoredPages.of(site_wh)
    assert url("marlow") in shortcut_pages(pages, SHORTCUT_Q.question)
    assert url("dunmere") not in shortcut_pages(pages, HARD_Q.question)
    assert shortcut_flags(pages, [SHORTCUT_Q, HARD_Q, ONE_HOP]) == [True, False, None]


@pytest.mark.parametrize("hits,answer,compared,kind,expected", [
    ([url("marlow"), url("vesk")], url("marlow"), (), "bridge", True),
    ([url("vesk"), url("tessaly")], url("marlow"), (), "bridge", False),
    ([url("vesk"), url("marlow")], url("marlow"), [url("vesk"), url("marlow")], COMPARISON, True),
    ([url("vesk"), url("tessaly")], url("marlow"), [url("vesk"), url("marlow")], COMPARISON, False),
    ([], "", (), "bridge", False),
])
def test_is_shortcut(hits, answer, compared, kind, expected):
    assert is_shortcut(hits, answer, compared, kind) is expected


def test_an_unknown_hop_kind_is_refused():
    with pytest.raises(ValueError, match="hop kind 'chain'"):
        is_shortcut([], "", (), "chain")


def test_the_check_stores_a_shortcut_verdict(site_wh):
    summary = run_checks(site_wh, [SHORTCUT_Q, HARD_Q, ONE_HOP], [Shortcut()], run_id="verify-1")
    rows = {r["question_id"]: r for r in site_wh.sql(
        "select question_id, check_name, status, reason from verdicts").to_pylist()}
    assert {r["check_name"] for r in rows.values()} == {"shortcut"}
    assert (rows["short"]["status"], rows["short"]["reason"]) == ("fail", "shortcut")
    assert rows["hard"]["status"] == "pass" and rows["one"]["status"] == "pass"
    assert summary.checks["shortcut"].failed == 1 and summary.passed_all == 2


def test_the_check_uses_an_injected_search_and_opens_none_for_one_hop_questions(site_wh):
    pages = StoredPages.of(site_wh)
    given = Shortcut().run([SHORTCUT_Q, HARD_Q], CheckContext(pages=pages))
    assert [r.status for r in given] == ["fail", "pass"]
    assert given[0].details["hits"][0] == url("marlow")
    alone = Shortcut().run([ONE_HOP], CheckContext())  # no warehouse, no search: not needed
    assert alone[0].status == "pass" and alone[0].details == {"applicable": False}


def test_the_verify_stage_runs_it_and_a_shortcut_is_not_train_ready(site_wh, tmp_path):
    from flows.verify import summary_lines
    from verifiers.config import VerifyConfig
    from verifiers.stage import build_checks, run_verify
    from warehouse import DifficultyRecord
    from warehouse.export import export
    assert "shortcut" in [c.name for c in build_checks(VerifyConfig(decontamination="off"))]
    site_wh.append([SHORTCUT_Q, HARD_Q], run_id="compose")
    summary = run_verify(site_wh, VerifyConfig(decontamination="off"),
                         only=["grounded", "shortcut"])
    assert summary.by_check["shortcut"]["reason:shortcut"] == 1
    assert summary.shortcuts_by_hops == {"2": {"judged": 2, "shortcuts": 1}}
    assert "  shortcuts, 2 hops: 1 of 2 (0.500)" in summary_lines(summary)
    site_wh.append([DifficultyRecord(question_id=q, solver="s", k=4, n_correct=2, pass_rate=0.5,
                                     band="medium") for q in ("short", "hard")], run_id="band")
    ready = site_wh.sql("select question_id from train_ready").to_pylist()
    assert [r["question_id"] for r in ready] == ["hard"]
    export(site_wh.root, tmp_path / "out")  # the card: what the filter took out, by hops
    card = (tmp_path / "out" / "README.md").read_text()
    assert "## Shortcuts by hops" in card and "| 2 | 1 of 2 (0.500) |" in card


def test_a_comparison_is_a_shortcut_only_when_the_search_returns_every_compared_page(site_wh):
    both = replace(two_hop("both", "Was the Marlow Academy founded before Orlan Vesk studied?",
                           "yes", ("vesk", "Vesk studied at the Marlow Academy"),
                           ("marlow", "founded in 1821")), hop_kind="comparison")
    # the search finds the answer's page (marlow) but not the other compared page (harrow)
    half = replace(both, question_id="half", evidence=HARD_Q.evidence[:1] + both.evidence[1:])
    pages = StoredPages.of(site_wh)
    assert shortcut_flags(pages, [both, half]) == [True, False]
    # the same question read as a bridge (or stored before hop_kind): the answer's page suffices
    assert shortcut_flags(pages, [replace(half, hop_kind="bridge"),
                                  replace(half, hop_kind="")]) == [True, True]
