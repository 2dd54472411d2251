"""run_compose and `datagen compose`: resume without doubles, determinism, bad input."""

from __future__ import annotations

import json
from collections import Counter
import os
import subprocess
import sys

import pytest

import warehouse
from datagen.compose import ComposeConfig, NoPages, run_compose
from datagen.compose.backend import ComposeBackend
from warehouse import PageRecord
from warehouse.schema import utcnow

QUERY = "select question_id, parent_id, composer from questions order by question_id"


def _rows(wh):
    return wh.sql(QUERY).to_pylist()


def test_crash_then_rerun_continues_and_doubles_nothing(demo_crawled_copy, demo_composed):
    wh = demo_crawled_copy
    cfg = ComposeConfig(seed=0, batch_size=150)

    def crash_after_two_batches(summary):
        if summary.seeds_done >= 300:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_compose(wh, cfg, progress=crash_after_two_batches)
    partial = _rows(wh)
    assert 0 < len(partial)
    again = run_compose(wh, cfg)
    assert again.composed_existing > 0            # the first batches were not redone
    rows = _rows(wh)
    ids = [r["question_id"] for r in rows]
    assert len(ids) == len(set(ids))
    ref = warehouse.open(demo_composed, read_only=True)
    try:                                          # same rows as one uninterrupted run
        assert ids == [r["question_id"] for r in _rows(ref)]
    finally:
        ref.close()
    third = run_compose(wh, cfg)
    assert third.seeds_new == 0 and third.composed == 0 and len(_rows(wh)) == len(rows)
    runs = wh.sql("select status from runs where kind = 'compose' order by started_at").to_pylist()
    assert [r["status"] for r in runs] == ["interrupted", "succeeded", "succeeded"]


@pytest.mark.slow
@pytest.mark.integration
def test_same_pages_same_seed_same_questions_in_another_process(demo_crawled, demo_composed,
                                                                tmp_path):
    code = ("import sys, warehouse; from tests.conftest import _copy_warehouse; "
            "from datagen.compose import ComposeConfig, run_compose; "
            "wh = _copy_warehouse(sys.argv[1], sys.argv[2]); "
            "run_compose(wh, ComposeConfig(seed=0, max_questions=120))")
    subprocess.run([sys.executable, "-c", code, str(demo_crawled), str(tmp_path / "w")],
                   check=True, env={**os.environ, "PYTHONHASHSEED": "99"}, cwd=str(_repo()))
    other = warehouse.open(tmp_path / "w", read_only=True)
    ref = warehouse.open(demo_composed, read_only=True)
    try:
        theirs = {r["question_id"] for r in _rows(other)}
        ours = {r["question_id"] for r in _rows(ref)}
        composed = [r for r in _rows(other) if r["composer"].startswith("compose:")]
        assert len(composed) == 120 and theirs <= ours
    finally:
        other.close()
        ref.close()


def _repo():
    from pathlib import Path
    return Path(__file__).resolve().parents[2]


def test_empty_warehouse_is_a_clear_error(wh):
    with pytest.raises(NoPages, match="no stored pages"):
        run_compose(wh, ComposeConfig())
    assert wh.sql("select status from runs where kind = 'compose'").to_pylist()[0]["status"] == "failed"


def _page(url, title, text, links=()):
    from warehouse import Link
    return PageRecord(url=url, title=title, text=text, content_hash=url, fetched_at=utcnow(),
                      links=tuple(Link(u, a) for u, a in links))


def test_pages_without_facts_and_seeds_without_pages_are_counted(wh):
    wh.append([_page("http://x/a", "Notes", "some words without any fact at all"),
               _page("http://x/b", "Lumen Tower", "Lumen Tower was founded in 1950 by nobody.")])
    s = run_compose(wh, ComposeConfig())
    assert s.pages == 2 and s.pages_without_facts == 1 and s.seeds == 1
    assert s.composed == 0 and s.not_composed == {"no_page_to_bridge": 1}


def test_cli_bad_input_is_one_line(tmp_path, capsys):
    from datagen.cli import main
    empty = tmp_path / "w"
    for argv, needle in (
            (["compose", "--warehouse", str(empty)], "no stored pages"),
            (["compose", "--warehouse", str(empty), "--hops", "4-2"], "--hops"),
            (["compose", "--warehouse", str(empty), "--backend", "llm"], "endpoint"),
            (["compose", "--warehouse", str(empty), "--config", str(tmp_path / "no.yaml")],
             "no such file")):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert needle in err and len(err.strip().splitlines()) == 1
    assert main(["compose", "--help"]) == 0


def test_cli_summary_on_small_real_like_pages(wh, capsys):
    from datagen.cli import main
    pages = _real_like_pages()
    wh.append(pages)
    root = wh.root
    wh.close()
    config = root.parent / "compose.yaml"
    config.write_text("compose:\n  hops: 2-3\n  max_questions: 1\n")
    for _ in range(2):  # the rerun finds its one question stored: a success, not an error
        assert main(["compose", "--warehouse", str(root), "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "seeds" in out and "questions/s" in out and "already composed earlier: 1" in out


def _real_like_pages():
    """Three linked 'encyclopedia' pages of plain prose (no infobox)."""
    a = ("Harlow Vance (born 4 June 1931) is an English architect known for coastal museums. "
         "Vance designed the Marrow Bay Museum in Kestrel Point.")
    b = ("The Marrow Bay Museum is a maritime museum in Kestrel Point that opened in 1962. "
         "It was designed by Harlow Vance.")
    c = ("Kestrel Point is a fishing town on the north coast of Amberland. "
         "Kestrel Point was founded in 1204 by herring merchants.")
    return [_page("http://r/vance", "Harlow Vance", a,
                  [("http://r/museum", "Marrow Bay Museum"), ("http://r/kestrel", "Kestrel Point")]),
            _page("http://r/museum", "Marrow Bay Museum", b,
                  [("http://r/kestrel", "Kestrel Point"), ("http://r/vance", "Harlow Vance")]),
            _page("http://r/kestrel", "Kestrel Point", c)] + _other_pages()


def _other_pages():
    """Other fishing towns, architects and museums: with only the three pages above, one
    search (k = 3) would return every page and every multi-page question would be a
    shortcut; in a real corpus many pages share a question's nouns."""
    texts = [("Gull Harbour", "Gull Harbour is a fishing town on the west coast of Dorland, "
              "founded in 1310 by salt traders."),
             ("Brimford", "Brimford is a fishing town in the south of Amberland, with a "
              "weekly herring market."),
             ("Osric Hale", "Osric Hale (born 2 March 1902) is an English architect who "
              "designed town halls and was born in Carrow."),
             ("Ada Lorne", "Ada Lorne (born 9 May 1948) is an English architect of schools; "
              "she designed the Carrow Library."),
             ("Carrow Maritime Museum", "The Carrow Maritime Museum is a maritime museum that "
              "opened in 1930 in a fishing town of Dorland."),
             ("Dune Point", "Dune Point is a fishing town on the north coast of Dorland, "
              "founded in 1410."),
             ("Ivo Brenn", "Ivo Brenn (born 1 July 1960) is an English architect known for "
              "museums and lighthouses.")]
    return [_page(f"http://r/o{i}", title, text) for i, (title, text) in enumerate(texts)]


def test_real_like_pages_compose_two_hops_with_search_uniqueness(wh):
    wh.append(_real_like_pages())
    s = run_compose(wh, ComposeConfig(seed=1))
    rows = wh.sql("select * from questions").to_pylist()
    assert s.seeds >= 4 and any(r["hops"] >= 2 for r in rows), [r["question"] for r in rows]
    for r in rows:
        trace = json.loads(r["trace"])
        if r["hops"] >= 2:
            assert trace["uniqueness"]["method"] == "search"
        assert r["answer"] not in r["question"]


class _ThreadedBackend(ComposeBackend):
    """The embedded backend behind the hooks a model-driven backend uses."""

    name = "threaded"
    max_concurrency = 4

    def __init__(self):
        from datagen.compose.embedded import EmbeddedBackend
        self.inner, self.calls = EmbeddedBackend(), Counter()

    def next_step(self, chain, options, target_hops, rng):
        return self.inner.next_step(chain, options, target_hops, rng)

    def word(self, chain, rng):
        self.calls["word"] += 1
        return self.inner.word(chain, rng)

    def write_seed(self, chain, rng):
        self.calls["write_seed"] += 1
        return None          # keep the template wording

    def summary(self):
        return dict(self.calls)


def test_backend_hooks_and_threads_keep_the_output(demo_crawled_copy, demo_composed):
    backend = _ThreadedBackend()
    s = run_compose(demo_crawled_copy, ComposeConfig(seed=0, max_questions=80), backend=backend)
    assert s.composed == 80 and s.llm["write_seed"] >= s.seeds and s.llm["word"] > 0
    ours = {r["question"] for r in demo_crawled_copy.sql(
        "select question from questions where composer = 'compose:threaded'").to_pylist()}
    ref = warehouse.open(demo_composed, read_only=True)
    try:
        theirs = {r["question"] for r in ref.sql(
            "select question from questions where composer = 'compose:embedded'").to_pylist()}
    finally:
        ref.close()
    assert ours <= theirs   # same chains, whatever the threads' timing


class _SeedWorder(_ThreadedBackend):
    """Words every other seed itself ("So, ..."), leaving the rest to the templates."""

    name = "worder"

    def write_seed(self, chain, rng):
        from datagen.seeds.chain import render_question
        draft = render_question(chain) or ""
        if rng.random() < 0.5 or not draft:
            return None
        return "So, " + draft[0].lower() + draft[1:]


def test_a_seed_row_names_what_worded_it(small_crawled, tmp_path):
    """Lineage: a seed the backend worded is stored with the backend's name, a seed left to
    the templates with "embedded" (every seed said "embedded": the loop asked the backend
    for a `seed_backend` that no backend had)."""
    from tests.conftest import _copy_warehouse
    wh = _copy_warehouse(small_crawled, tmp_path / "wh")
    run_compose(wh, ComposeConfig(seed=0, max_questions=10), backend=_SeedWorder())
    seeds = wh.sql("select question, backend from questions where composer like 'seed:%'")
    by_wording = Counter((r["question"].startswith("So, "), r["backend"])
                         for r in seeds.to_pylist())
    assert by_wording[(True, "worder")] > 0 and by_wording[(False, "embedded")] > 0
    assert set(by_wording) == {(True, "worder"), (False, "embedded")}


def test_a_partial_crawl_composes_what_its_pages_allow(tmp_path):
    """Facts whose object page was not crawled (no noun for it) are skipped, not a crash:
    `crawl_demo(max_pages=8)` then compose raised IndexError on an empty template choice."""
    from datagen.crawl.demo import crawl_demo

    wh = warehouse.open(tmp_path / "wh")
    crawl_demo(wh, n=30, seed=7, max_pages=8)
    summary = run_compose(wh, ComposeConfig(seed=0))
    assert wh.scalar("select count(*) from pages") <= 8
    assert not summary.error
    assert summary.seeds > 0   # 8 pages of 30 entities: too few bridges to compose one
    assert summary.seeds + summary.composed == wh.scalar("select count(*) from questions")


class _GreedyInjector(ComposeBackend):
    """A backend that always INJECTs when it can, whatever the target (SmolLM2's habit)."""

    name = "greedy"

    def next_step(self, chain, options, target_hops, rng):
        return next((o for o in options if o.action == "INJECT"), None)

    def word(self, chain, rng):
        from datagen.seeds.chain import render_question
        return render_question(chain)


@pytest.fixture(scope="module")
def small_crawled(tmp_path_factory):
    """A crawl of the 30-entity demo world (seed 7), copied by each test that writes."""
    from datagen.crawl.demo import crawl_demo
    root = tmp_path_factory.mktemp("small") / "wh"
    with warehouse.open(root) as wh:
        crawl_demo(wh, n=30, seed=7)
    return root


def test_hops_max_holds_whatever_the_backend_picks(small_crawled, tmp_path):
    """The loop, not the backend, keeps hops_max: a model that INJECTs past its target
    stored a 6-hop question under the default 2-4."""
    from tests.conftest import _copy_warehouse
    wh = _copy_warehouse(small_crawled, tmp_path / "wh")
    s = run_compose(wh, ComposeConfig(seed=0, hops_min=2, hops_max=3), backend=_GreedyInjector())
    hops = Counter(r["hops"] for r in wh.sql(
        "select hops from questions where composer = 'compose:greedy'").to_pylist())
    assert s.composed > 0 and 3 in hops        # it does go as far as it may
    assert max(hops) <= 3 and min(hops) >= 2


def test_a_model_backend_words_no_more_seeds_than_the_budget_needs(small_crawled, tmp_path):
    """Under max_questions, a threaded backend's batches shrink to the questions still
    wanted: a budget of 3 with batch_size 200 worded every seed of the world first."""
    from tests.conftest import _copy_warehouse
    wh = _copy_warehouse(small_crawled, tmp_path / "wh")
    backend = _ThreadedBackend()
    s = run_compose(wh, ComposeConfig(seed=0, max_questions=3, batch_size=200), backend=backend)
    assert s.composed == 3 and s.seeds_total > 40
    # batches of max(wanted, 4): a dozen or so seeds until 3 of them bridge to another page
    assert backend.calls["write_seed"] == s.seeds_done <= 40 < s.seeds_total
