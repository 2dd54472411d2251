"""The built-in demo world: a deterministic fictional encyclopedia served offline.

    model.py      Entity, Fact, World records and the relation catalogue (RELATIONS)
    generate.py   build_world(n, seed) -> World
    render.py     HTML pages (prose from varied templates, infobox, links), index,
                  sitemap.xml, robots.txt; write_world(world, out_dir); load_facts(dir)
    infobox.py    read_infobox(html) -> (entity id, rows with label, value, href, relation)
"""

from datagen.demo_world.generate import build_world, format_date
from datagen.demo_world.infobox import InfoboxRow, read_infobox
from datagen.demo_world.model import KINDS, RELATIONS, Entity, Fact, World
from datagen.demo_world.render import (
    FACTS_FILE, render_entity, load_facts, write_world,
)

__all__ = ["build_world", "write_world", "load_facts", "render_entity", "format_date",
           "read_infobox", "InfoboxRow",
           "World", "Entity", "Fact", "RELATIONS", "KINDS", "FACTS_FILE"]
