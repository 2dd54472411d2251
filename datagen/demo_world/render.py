"""Render the demo world as a static website and write its ground truth.

Layout of the output folder:

    index.html            every entity, grouped by kind (the crawl's natural seed)
    wiki/<slug>.html      one page per entity: title, prose, infobox table, related links
    wiki/draft-notes.html a page marked `noindex` (a crawler must not store it)
    private/*.html        disallowed by robots.txt (a crawler must not fetch it)
    robots.txt, sitemap.xml
    facts.jsonl           ground truth: one WorldFact per line (subject, relation, object, ids, paths)
    entities.jsonl        one Entity per line;  world.json: seed, size, counts
"""

from __future__ import annotations

import html
import json
import random
from pathlib import Path

from datagen.demo_world.builder import article
from datagen.demo_world.model import Entity, WorldFact, World
from datagen.demo_world.schema import KINDS, RELATIONS

FACTS_FILE = "facts.jsonl"
# Bump when generated pages or facts change, so cached copies of the world are rebuilt.
WORLD_FORMAT = 4
LICENSE_URL = "https://creativecommons.org/licenses/by-sa/4.0/"

# {s}: subject name, {o}: object (linked where it is an entity), {a_o}: "a/an" + object.
# Several phrasings per relation so a question composer can't lean on one sentence shape.
TEMPLATES: dict[str, list[str]] = {
    "capital": ["The capital of {s} is {o}.", "{o} serves as the capital of {s}.",
                "{s} is governed from its capital, {o}."],
    "area_km2": ["{s} covers an area of {o} square kilometres.",
                 "The territory of {s} spans {o} km²."],
    "currency": ["The currency of {s} is the {o}.", "In {s}, people pay with the {o}."],
    "located_in": ["{s} is located in {o}.", "{s} lies in {o}.", "{s} can be found in {o}."],
    "population": ["{s} has a population of {o}.", "About {o} people live in {s}.",
                   "The last census counted {o} inhabitants in {s}."],
    "founded_year": ["{s} was founded in {o}.", "The founding of {s} dates to {o}.",
                     "{s} was established in {o}."],
    "born_in": ["{s} was born in {o}.", "{s} is a native of {o}.", "{s} came from {o}."],
    "born_on": ["{s} was born on {o}.", "{s}'s date of birth is {o}."],
    "occupation": ["{s} worked as {a_o}.", "By profession, {s} was {a_o}.",
                   "{s} is best known as {a_o}."],
    "member_of": ["{s} was a member of {o}.", "{s} joined {o}.", "{s} belonged to {o}."],
    "educated_at": ["{s} studied at {o}.", "{s} was educated at {o}.",
                    "{s} is an alumnus of {o}."],
    "founded_by": ["{s} was founded by {o}.", "{o} founded {s}.", "{o} established {s}."],
    "org_type": ["{s} is {a_o}.", "{s} operates as {a_o}."],
    "employees": ["{s} employs {o} people.", "{s} has a staff of {o}."],
    "work_type": ["{s} is {a_o}.", "{s} is {a_o} of some renown."],
    "directed_by": ["{s} was directed by {o}.", "{o} directed {s}.",
                    "The director of {s} was {o}."],
    "written_by": ["{s} was written by {o}.", "{o} wrote {s}.", "{s} is the work of author {o}."],
    "released_year": ["{s} was released in {o}.", "{s} first appeared in {o}.",
                      "{s} came out in {o}."],
    "genre": ["{s} belongs to the {o} genre.", "Critics classify {s} as {o}."],
    "runtime_minutes": ["{s} runs for {o} minutes.", "The running time of {s} is {o} minutes."],
    "pages": ["{s} has {o} pages.", "The first edition of {s} ran to {o} pages."],
    "event_type": ["{s} was {a_o}.", "{s} is remembered as {a_o}."],
    "held_on": ["{s} took place on {o}.", "{s} was held on {o}.", "{s} began on {o}."],
    "organised_by": ["{s} was organised by {o}.", "{o} organised {s}."],
    "attendance": ["{s} drew an attendance of {o}.", "Some {o} people attended {s}."],
}

# Inverse statements on the object's page ("People born here: ...") give multi-hop paths.
INVERSE_HEADINGS = {"born_in": "Notable people born here", "located_in": "Located here",
                    "founded_by": "Organisations founded", "member_of": "Members",
                    "educated_at": "Alumni", "directed_by": "Films directed",
                    "written_by": "Books written", "organised_by": "Events organised",
                    "capital": "Capital of"}

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}</title>
<link rel="canonical" href="{path}">
<link rel="license" href="{license}">
{robots}</head>
<body>
<header><nav><a href="/index.html">Demo Encyclopedia</a> | <a href="/index.html#{kind}">All {kind} pages</a></nav></header>
<main><article>
<h1>{title}</h1>
{body}
</article></main>
<footer><p>Text is available under the <a rel="license" href="{license}">Creative Commons Attribution-ShareAlike 4.0</a> licence. This encyclopedia is fictional.</p></footer>
</body></html>
"""


def _link(path: str, text: str) -> str:
    return f'<a href="{html.escape(path)}">{html.escape(text)}</a>'


def _object_html(f: WorldFact) -> str:
    return _link(f.object_path, f.obj) if f.object_path else html.escape(f.obj)


def _sentence(f: WorldFact, rng: random.Random) -> str:
    template = rng.choice(TEMPLATES[f.relation])
    obj = _object_html(f)
    text = template.format(s=html.escape(f.subject), o=obj, a_o=f"{article(f.obj)} {obj}")
    return text[0].upper() + text[1:]


def _infobox(e: Entity, facts: list[WorldFact]) -> str:
    rows = "".join(f"<tr><th>{html.escape(RELATIONS[f.relation].label)}</th>"
                   f"<td>{_object_html(f)}</td></tr>" for f in facts)
    return (f'<table class="infobox" data-entity-id="{e.entity_id}" data-kind="{e.kind}">'
            f"<caption>{html.escape(e.name)}</caption>{rows}</table>")


def _related(world: World, e: Entity, inverse: dict[str, list[WorldFact]]) -> str:
    by_rel: dict[str, list[WorldFact]] = {}
    for f in inverse.get(e.entity_id, []):
        by_rel.setdefault(f.relation, []).append(f)
    parts = []
    for rel, facts in by_rel.items():
        heading = INVERSE_HEADINGS.get(rel, "Related")
        items = "".join(f"<li>{_link(f.subject_path, f.subject)}</li>" for f in facts)
        parts.append(f"<h2>{html.escape(heading)}</h2><ul>{items}</ul>")
    return "".join(parts)


def render_entity(world: World, e: Entity, facts: list[WorldFact],
                  inverse: dict[str, list[WorldFact]]) -> str:
    rng = random.Random(f"{world.seed}:{e.entity_id}")  # page text independent of page order
    sentences = [_sentence(f, rng) for f in facts]
    lead = f"<p><b>{html.escape(e.name)}</b> is {html.escape(e.description)}.</p>"
    half = (len(sentences) + 1) // 2
    prose = f"<p>{' '.join(sentences[:half])}</p><p>{' '.join(sentences[half:])}</p>"
    body = lead + _infobox(e, facts) + prose + _related(world, e, inverse)
    return _PAGE.format(title=html.escape(e.name), path=e.path, license=LICENSE_URL,
                        kind=e.kind, robots="", body=body)


def _index(world: World) -> str:
    sections = []
    for kind in KINDS:
        items = "".join(f"<li>{_link(e.path, e.name)}</li>" for e in world.of_kind(kind))
        sections.append(f'<h2 id="{kind}">{kind.capitalize()}</h2><ul>{items}</ul>')
    extra = (f"<p>{_link('/wiki/draft-notes.html', 'Draft notes')} | "
             f"{_link('/private/staff-notes.html', 'Staff notes')}</p>")
    body = "<p>An index of every page of this fictional encyclopedia.</p>" + extra + "".join(sections)
    return _PAGE.format(title="Index", path="/index.html", license=LICENSE_URL, kind="index",
                        robots="", body=body)


def _special_pages() -> dict[str, str]:
    draft = _PAGE.format(title="Draft notes", path="/wiki/draft-notes.html", license=LICENSE_URL,
                         kind="draft", robots='<meta name="robots" content="noindex">\n',
                         body="<p>Unfinished notes that must not be indexed.</p>")
    private = _PAGE.format(title="Staff notes", path="/private/staff-notes.html",
                           license=LICENSE_URL, kind="private", robots="",
                           body="<p>Internal notes; robots.txt disallows this folder.</p>")
    return {"wiki/draft-notes.html": draft, "private/staff-notes.html": private}


def _sitemap(world: World, base_url: str) -> str:
    locs = "".join(f"<url><loc>{html.escape(base_url + e.path)}</loc></url>\n" for e in world)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + locs + "</urlset>\n")


def write_world(world: World, out_dir: str | Path, base_url: str = "") -> Path:
    """Write the site and its ground truth into out_dir. Sitemap locs are relative to the
    site root unless base_url is given (the crawler resolves them against the sitemap URL)."""
    out = Path(out_dir)
    (out / "wiki").mkdir(parents=True, exist_ok=True)
    (out / "private").mkdir(exist_ok=True)
    inverse: dict[str, list[WorldFact]] = {}
    by_subject: dict[str, list[WorldFact]] = {}
    for f in world.facts:
        by_subject.setdefault(f.subject_id, []).append(f)
        if f.object_id:
            inverse.setdefault(f.object_id, []).append(f)
    for e in world:
        page = render_entity(world, e, by_subject.get(e.entity_id, []), inverse)
        (out / e.path.lstrip("/")).write_text(page, encoding="utf-8")
    for rel, page in _special_pages().items():
        (out / rel).write_text(page, encoding="utf-8")
    (out / "index.html").write_text(_index(world), encoding="utf-8")
    (out / "sitemap.xml").write_text(_sitemap(world, base_url.rstrip("/")), encoding="utf-8")
    (out / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n", encoding="utf-8")
    _write_truth(world, out)
    return out


def _write_truth(world: World, out: Path) -> None:
    with open(out / FACTS_FILE, "w", encoding="utf-8") as fh:
        for f in world.facts:
            fh.write(json.dumps(f.to_row(), ensure_ascii=False) + "\n")
    with open(out / "entities.jsonl", "w", encoding="utf-8") as fh:
        for e in world:
            fh.write(json.dumps({"entity_id": e.entity_id, "kind": e.kind, "type": e.type,
                                 "name": e.name, "path": e.path,
                                 "description": e.description},
                                ensure_ascii=False) + "\n")
    counts = {k: len(world.of_kind(k)) for k in KINDS}
    (out / "world.json").write_text(json.dumps(
        {"format": WORLD_FORMAT, "seed": world.seed, "entities": len(world),
         "facts": len(world.facts),
         "counts": counts}, indent=2) + "\n", encoding="utf-8")


def load_facts(out_dir: str | Path) -> list[WorldFact]:
    """Read the ground truth written by write_world back as Facts."""
    facts = []
    for line in (Path(out_dir) / FACTS_FILE).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        value = row["value"]
        if row["value_type"] in ("year", "number") and value is not None:
            value = int(value)
        facts.append(WorldFact(row["subject_id"], row["subject"], row["relation"], row["object"],
                          row["value_type"], row["subject_path"], row["object_id"],
                          row["object_path"], value))
    return facts


def write_demo_world(out: Path, entities: int, seed: int) -> str:
    """`datagen demo-world`: build and write the world; the line saying what and where."""
    import time

    from datagen.demo_world.generate import build_world
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder")
    t = time.perf_counter()
    world = build_world(entities, seed)
    write_world(world, out)
    return (f"wrote {len(world)} entity pages and {len(world.facts)} facts to {out} "
            f"in {time.perf_counter() - t:.1f} s (ground truth: {out / FACTS_FILE})")
