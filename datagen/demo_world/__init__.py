"""The built-in demo world: a deterministic fictional encyclopedia served offline.

The file tree is in datagen/README.md.
"""

from datagen.demo_world.builder import format_date
from datagen.demo_world.generate import build_world
from datagen.demo_world.infobox import InfoboxRow, read_infobox
from datagen.demo_world.model import Entity, WorldFact, World
from datagen.demo_world.schema import KINDS, RELATIONS, TYPES, Relation
from datagen.demo_world.render import (
    FACTS_FILE, render_entity, load_facts, write_demo_world, write_world,
)

__all__ = ["build_world", "write_world", "write_demo_world", "load_facts", "render_entity", "format_date",
           "read_infobox", "InfoboxRow",
           "World", "Entity", "WorldFact", "RELATIONS", "Relation", "KINDS", "TYPES", "FACTS_FILE"]
