"""The demo world: deterministic, complete, and its ground truth is on its pages."""

from __future__ import annotations

import asyncio
import hashlib
import html
import re
from collections import Counter
from pathlib import Path

import lxml.html
import pytest

from datagen.crawl import Crawler, run_crawl
from datagen.demo_world import RELATIONS, build_world, load_facts, read_infobox, write_world
from datagen.demo_world.builder import Builder
from tests.crawl.conftest import fast_config


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_site_other_seed_other_site(tmp_path):
    write_world(build_world(150, seed=3), tmp_path / "a")
    write_world(build_world(150, seed=3), tmp_path / "b")
    write_world(build_world(150, seed=4), tmp_path / "c")
    a, b, c = (_tree_digest(tmp_path / x) for x in "abc")
    assert a == b
    assert a["facts.jsonl"] != c["facts.jsonl"]


@pytest.mark.integration
def test_world_is_identical_across_processes(tmp_path):
    """No dependence on hash randomisation or anything else process-specific."""
    import os
    import subprocess
    import sys
    code = ("import sys; from datagen.demo_world import build_world, write_world; "
            "write_world(build_world(120, seed=9), sys.argv[1])")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "sub")], check=True, env=env)
    write_world(build_world(120, seed=9), tmp_path / "here")
    assert _tree_digest(tmp_path / "sub") == _tree_digest(tmp_path / "here")


def test_default_size_and_relation_coverage():
    world = build_world()  # the default demo size
    assert 1500 <= len(world) <= 2500
    rels = Counter(f.relation for f in world.facts)
    for needed in ("born_in", "founded_by", "located_in", "member_of", "directed_by",
                   "born_on", "held_on", "population", "employees", "released_year"):
        assert rels[needed] > 10, needed
    assert set(rels) <= set(RELATIONS)
    labels = [r.label for r in RELATIONS.values()]
    assert len(labels) == len(set(labels)), "an infobox label must name one relation"
    names = [e.name for e in world]
    assert len(names) == len(set(names)), "entity names must be unique (answers must be)"
    ids = set(world.entities)
    assert all(f.object_id in ids for f in world.facts if f.value_type == "entity")
    assert all(f.object_id is None and f.value is not None
               for f in world.facts if f.value_type != "entity")


def test_every_fact_is_on_its_page_with_links(small_world_dir):
    out, world = small_world_dir
    assert load_facts(out) == world.facts
    index = (out / "index.html").read_text()
    sitemap = (out / "sitemap.xml").read_text()
    for e in world:
        page = (out / e.path.lstrip("/")).read_text()
        assert f"<title>{html.escape(e.name)}</title>" in page
        assert f'href="{e.path}"' in index and f"<loc>{e.path}</loc>" in sitemap
        infobox = re.search(r'<table class="infobox".*?</table>', page).group(0)
        for f in world.facts_about(e.entity_id):
            assert html.escape(f.obj) in infobox
            assert page.count(html.escape(f.obj)) >= 2  # infobox and prose
            if f.object_path:
                assert f'href="{f.object_path}"' in page
    assert "Disallow: /private/" in (out / "robots.txt").read_text()


def test_crawled_demo_pages_carry_the_ground_truth(small_world_site, wh):
    base, out, world = small_world_site
    summary = run_crawl(fast_config([base + "/index.html"], extract_processes=1,
                                    request_deadline_s=60), wh)  # a loaded machine is slow
    assert summary.failed == 0
    assert summary.by_reason[("skipped", "robots_disallowed")] == 1
    assert summary.by_reason[("skipped", "noindex")] == 1
    pages = {r["url"][len(base):]: r for r in wh.sql(
        "SELECT url, title, text, links, license, html FROM pages").to_pylist()}
    assert set(pages) == {e.path for e in world} | {"/index.html"}
    for e in world:
        page = pages[e.path]
        assert page["title"] == e.name
        assert page["license"] == "https://creativecommons.org/licenses/by-sa/4.0/"
        links = {l["url"][len(base):]: l["anchor"] for l in page["links"]}
        for para in lxml.html.fromstring(page["html"]).xpath("//article/p"):
            # every prose paragraph is quotable verbatim from the stored text (grounding)
            assert " ".join(para.text_content().split()) in page["text"]
        entity_id, rows = read_infobox(page["html"])
        assert entity_id == e.entity_id
        assert {(r.relation, r.value, r.href) for r in rows} == {
            (f.relation, f.obj, f.object_path) for f in world.facts_about(e.entity_id)}
        for f in world.facts_about(e.entity_id):
            assert f.obj in page["text"], (e.path, f)
            if f.object_path:
                assert links[f.object_path] == f.obj


def test_sitemap_seed_reaches_every_page(small_world_site):
    base, out, world = small_world_site
    # the hostile cases' 2.5 s deadline failed pages here on a loaded machine
    cfg = fast_config([base + "/sitemap.xml"], max_depth=0, request_deadline_s=60)
    summary = asyncio.run(Crawler(cfg, None).run())
    assert summary.stored == len(world)


def test_the_builder_refuses_a_fact_outside_the_schema():
    b = Builder(30, 0)
    treaty = b.add("event", "treaty", "1901 Treaty of Nowhere")
    marathon = b.add("event", "marathon", "1990 Nowhere Marathon")
    press = b.add("organisation", "publisher", "Nowhere Press")
    with pytest.raises(ValueError, match="attendance does not apply to a treaty"):
        b.number(treaty, "attendance")
    with pytest.raises(ValueError, match="organised_by of marathon .* cannot be 'publisher'"):
        b.fact(marathon, "organised_by", press)  # a publisher runs book fairs, not races
    with pytest.raises(ValueError, match="attendance of marathon"):
        b.fact(marathon, "attendance", 5_000_000)
    assert b.candidates(marathon, "organised_by", [press]) == []


@pytest.mark.parametrize("n", [10, 29])
def test_too_small_a_world_is_a_clear_error(n):
    with pytest.raises(ValueError, match="at least 30"):
        build_world(n)


@pytest.mark.integration
def test_demo_urls_do_not_depend_on_the_port_it_is_served_on(tmp_path, monkeypatch):
    """Two demo crawls at once (each serves the world on its own free port) store the same
    URLs, under the demo's stable base; a resumed crawl there requests no stored page. (The
    demo was served on a fixed port, and a second build at once fell back to another port,
    so its resume saw a new site.)"""
    from concurrent.futures import ThreadPoolExecutor

    import warehouse
    from datagen.crawl import crawl_demo, demo_world_dir
    from datagen.crawl.demo import DEMO_BASE

    monkeypatch.setenv("DATAGEN_CACHE", str(tmp_path / "cache"))
    demo_world_dir(40, 0)  # built once, before two crawls would build it at once
    whs = [warehouse.open(tmp_path / name) for name in ("a", "b")]
    with ThreadPoolExecutor(2) as pool:
        firsts = list(pool.map(lambda wh: crawl_demo(wh, n=40, seed=0), whs))
    urls = [{r["url"] for r in wh.sql("select url from pages").to_pylist()} for wh in whs]
    assert firsts[0].stored == firsts[1].stored == len(urls[0]) > 40
    assert urls[0] == urls[1] and all(u.startswith(DEMO_BASE + "/") for u in urls[0])
    again = crawl_demo(whs[0], n=40, seed=0, resume=True)
    requested = {r["url"] for r in whs[0].sql(
        "select url from fetches where run_id = ?", [again.run_id]).to_pylist()}
    assert again.already_stored >= len(urls[0]) and not requested & urls[0]
    for wh in whs:
        wh.close()
