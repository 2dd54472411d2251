"""The built-in demo world: a deterministic fictional encyclopedia served offline.

    model.py      Entity, Fact, World records and the relation catalogue (RELATIONS)
    generate.py   build_world(n, seed) -> World
    render.py     HTML pages (prose from varied templates, infobox, links), index,
                  sitemap.xml, robots.txt; write_world(world, out_dir); load_facts(dir)
"""

from datagen.demo_world.generate import build_world, format_date
from datagen.demo_world.model import KINDS, RELATIONS, Entity, Fact, World
from datagen.demo_world.render import (
    FACTS_FILE, render_entity, load_facts, write_world,
)

__all__ = ["build_world", "write_world", "load_facts", "render_entity", "format_date",
           "World", "Entity", "Fact", "RELATIONS", "KINDS", "FACTS_FILE"]
