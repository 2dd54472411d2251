"""Seed mining ("crawl answers"): facts with verbatim evidence, and one-fact seed questions.

The file tree is in datagen/README.md.
"""

from datagen.seeds.chain import Ask, Chain, Clause, Literal, Node, render_question, trace
from datagen.seeds.mine import mine_pages
from datagen.seeds.questions import Seed, make_seeds
from datagen.seeds.records import ANSWER_TYPE_OF_KIND, Fact, Page
from datagen.seeds.store import FactStore

__all__ = ["Fact", "Page", "mine_pages", "FactStore", "make_seeds", "Seed", "Chain", "Ask",
           "Node", "Clause", "Literal", "render_question", "trace", "ANSWER_TYPE_OF_KIND"]
