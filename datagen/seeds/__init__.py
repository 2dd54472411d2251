"""Seed mining ("crawl answers"): facts with verbatim evidence, and one-fact seed questions.

    records.py    Fact (subject, relation, value + {url, quote}), Page
    patterns.py   sentence splitting and prose patterns (lead 'X is a Y', dates, 'founded in')
    mine.py       mine_pages(pages) -> facts: infobox rows, link sentences, prose patterns
    store.py      FactStore: facts indexed; which entities match a description; answer sets
    chain.py      Ask / Node / Clause / Literal / Chain: a question as a tree; rendering; trace
    wording.py    question and clause phrasings (>= 3 per relation)
    questions.py  make_seeds(store, seed) -> Seed chains (one fact each)
"""

from datagen.seeds.chain import Ask, Chain, Clause, Literal, Node, render_question, trace
from datagen.seeds.mine import mine_pages
from datagen.seeds.questions import Seed, make_seeds
from datagen.seeds.records import ANSWER_TYPES, Fact, Page
from datagen.seeds.store import FactStore

__all__ = ["Fact", "Page", "mine_pages", "FactStore", "make_seeds", "Seed", "Chain", "Ask",
           "Node", "Clause", "Literal", "render_question", "trace", "ANSWER_TYPES"]
