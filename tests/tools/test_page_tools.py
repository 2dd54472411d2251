"""PageTools: BM25 search over stored pages (index persisted per pages-snapshot) and paged open."""

from __future__ import annotations

import pytest

from datagen.tools import PageTools
from warehouse import page_index as bm25_index
from warehouse import PageRecord, QuestionRecord
from warehouse.schema import utcnow

PAGES = {
    "http://site/a": ("Thiaburg", "Thiaburg is a city in Limwaneth. It was founded in 1204 "
                      "by river traders and has a population of 52,000."),
    "http://site/b": ("Kiarport", "Kiarport is a port city in Markganistan, famous for its "
                      "lighthouse and its winter market."),
    "http://site/c": ("Gipa Industries", "Gipa Industries is a company that builds tractors. "
                      + "It employs many people. " * 400 + "The last line mentions Thiaburg."),
}


def _add_pages(wh, pages):
    wh.append([PageRecord(url=u, title=t, text=x, content_hash=str(hash(x)),
                          fetched_at=utcnow(), final_url=u + "?final") for u, (t, x) in pages.items()])


@pytest.fixture
def page_wh(wh):
    _add_pages(wh, PAGES)
    return wh


def test_search_ranks_the_page_that_matches(page_wh):
    tools = PageTools.open(page_wh)
    hits = tools.search("city with a lighthouse and a winter market", k=2)
    assert hits[0].url == "http://site/b" and hits[0].title == "Kiarport"
    assert "lighthouse" in hits[0].snippet and hits[0].score > 0
    assert len(tools.search("Thiaburg", k=1)) == 1
    assert tools.search("the of and", k=5) == []          # stop words only: nothing to match
    assert tools.search("zzzunseenword", k=5) == []       # no positive score: no hit


def test_open_pages_through_the_whole_text(page_wh):
    tools = PageTools.open(page_wh)
    title, full = tools.page("http://site/c")
    views, offset = [], 0
    while offset is not None:
        view = tools.open("http://site/c", offset, length=500)
        assert len(view.text) <= 500 and view.offset == offset
        views.append(view)
        offset = view.next_offset
    assert len(views) > 3 and "".join(v.text for v in views) == full
    assert views[-1].text.endswith("mentions Thiaburg.")
    assert tools.open("http://site/a?final").title == "Thiaburg"   # by final URL too
    with pytest.raises(KeyError):
        tools.open("http://site/missing")
    with pytest.raises(ValueError):
        tools.open("http://site/a", -1)


def test_index_is_persisted_per_pages_snapshot(page_wh, monkeypatch):
    first = PageTools.open(page_wh)
    folder = bm25_index.index_dir(page_wh.root, first.index.snapshot)
    assert (folder / "docs.json").is_file()
    # Commits that leave `pages` alone keep the key: the next open loads, never rebuilds.
    page_wh.append([QuestionRecord(question_id="q1", question="Where is Thiaburg?",
                                   answer="Limwaneth")])
    monkeypatch.setattr(bm25_index, "build_index", lambda *a, **k: pytest.fail("index rebuilt"))
    again = PageTools.open(page_wh)
    assert again.index.snapshot == first.index.snapshot
    assert again.search("lighthouse", 1)[0].url == "http://site/b"
    monkeypatch.undo()
    _add_pages(page_wh, {"http://site/d": ("Zaewick", "Zaewick hosts a glass museum.")})
    newer = PageTools.open(page_wh)
    assert newer.index.snapshot > first.index.snapshot
    assert newer.search("glass museum", 1)[0].url == "http://site/d"


def test_empty_warehouse_searches_nothing(wh):
    tools = PageTools.open(wh)
    assert tools.search("anything at all", 5) == []
    assert PageTools.open(wh).urls == []
