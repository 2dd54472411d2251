"""`datagen site CORPUS OUT_DIR`: a corpus recognised by its shape and written as a site (a page
per paragraph, links where titles are named); an unknown shape is one line; the real
hotpotqa_dev685 corpus crawls whole."""

from __future__ import annotations

import json
import time

import pytest

from datagen.corpus_site import CorpusShapeError, write_corpus_site
from datagen.sites import page_name, title_of

ROWS = [
    {"pid": "p1", "title": "Lake Ouro", "text": "Lake Ouro lies north of Vellmar Town.",
     "sources": ["t"]},
    {"pid": "p2", "title": "Vellmar Town", "text": "Vellmar Town was founded by Ada Krell.",
     "sources": ["t"]},
    {"pid": "p3", "title": "Ada Krell", "text": "Ada Krell (1801-1870) was a surveyor.",
     "sources": ["t"]},
]


@pytest.fixture
def corpus(tmp_path):
    """A folder shaped like hotpotqa_dev685: corpus.jsonl, and a questions.jsonl that must
    never be read (it is not JSON, so reading it would fail)."""
    folder = tmp_path / "tiny_corpus"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    (folder / "questions.jsonl").write_text("Who founded Vellmar Town? <not json>\n")
    return folder


def _page(site, title: str) -> str:
    return (site / "wiki" / f"{page_name(title)}.html").read_text()


def test_a_page_per_paragraph_linked_where_titles_are_named(corpus, tmp_path):
    w = write_corpus_site(corpus, tmp_path / "site")
    assert (w.shape, w.pages, w.links) == ("paragraphs", 3, 2)
    lake = _page(w.out, "Lake Ouro")
    assert "<h1>Lake Ouro</h1>" in lake and "north of" in lake
    assert '<a href="Vellmar_Town.html">Vellmar Town</a>' in lake
    assert '<a href="Ada_Krell.html">' in _page(w.out, "Vellmar Town")
    assert "<a href" not in _page(w.out, "Ada Krell")  # names no other title, not itself
    assert "Who founded" not in "".join(f.read_text() for f in w.out.rglob("*.html"))


def test_the_corpus_file_itself_and_the_other_shapes(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("\n".join(json.dumps(r) for r in ROWS))
    assert write_corpus_site(rows, tmp_path / "a").shape == "paragraphs"
    kilt = tmp_path / "kilt.jsonl"
    kilt.write_text(json.dumps({"wikipedia_title": "Ada Krell",
                                "text": ["Ada Krell", "Ada Krell was a surveyor."]}))
    assert write_corpus_site(kilt, tmp_path / "b").shape == "kilt"
    title_map = tmp_path / "c.json"
    title_map.write_text(json.dumps({"Ada Krell": ["Ada Krell was ", "a surveyor."]}))
    assert write_corpus_site(title_map, tmp_path / "c").pages == 1


@pytest.mark.parametrize("name, content, says", [
    ("questions.jsonl", json.dumps({"id": "q", "question": "Who?"}), "neither"),
    ("list.json", json.dumps([{"title": "x"}]), "not a corpus"),
    ("broken.json", "{not json", "not JSON"),
    ("notes.txt", "Ada Krell", "not a corpus"),
    ("empty_folder", None, "without corpus.jsonl"),
])
def test_an_unknown_shape_is_one_line_naming_the_input(tmp_path, name, content, says):
    path = tmp_path / name
    path.mkdir() if content is None else path.write_text(content)
    with pytest.raises(CorpusShapeError) as err:
        write_corpus_site(path, tmp_path / "out")
    assert says in str(err.value) and name in str(err.value)
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()


def test_the_command_says_what_it_wrote_and_what_to_run_next(corpus, tmp_path, capsys):
    from datagen.cli import main
    assert main(["site", str(corpus), str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert "wrote 3 pages and 2 links" in out and f"datagen crawl {tmp_path / 'site'}" in out
    assert main(["site", str(corpus), str(tmp_path / "site")]) == 2  # not over another site
    assert main(["site", str(corpus / "questions.jsonl"), str(tmp_path / "s2")]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 2 and len(err.strip().splitlines()) == 2
    assert "Traceback" not in err


@pytest.mark.shared_data
@pytest.mark.integration
def test_dev685_site_crawls_a_page_per_paragraph(shared_data, tmp_path, wh):
    from datagen.crawl import run_crawl
    from tests.crawl.conftest import fast_config
    src = shared_data / "corpus" / "hotpotqa_dev685"
    titles = {json.loads(line)["title"] for line in (src / "corpus.jsonl").open()}
    w = write_corpus_site(src, tmp_path / "site")
    assert w.pages == len(titles) == 6640 and w.links > 6000
    t = time.perf_counter()
    summary = run_crawl(fast_config([str(w.out)], extract_processes=2, batch_size=256), wh)
    print(f"dev685: wrote {w.pages} pages, {w.links} links in {w.seconds:.1f} s; "
          f"crawled in {time.perf_counter() - t:.1f} s")
    assert summary.failed == 0, summary.by_reason
    stored = {title_of(r["url"]) for r in wh.sql("SELECT url FROM pages").to_pylist()}
    assert {page_name(t) for t in titles} <= stored
