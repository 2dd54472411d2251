"""A question as a tree of constraints: what it asks (`Ask`) about an entity (`Node`).

A node is named (hop 0 of a description) or described by clauses; a clause states one fact
about the node (`out`: the node is the fact's subject, 'founded in 1204'; `in`: the node is
the fact's value, 'the city where X was born') and its value is a literal or another node.
Seeds are one-fact chains; the composer INJECTs (a named node becomes described) and FUZZes
(a literal is blurred). The embedded wording renders the tree; `trace()` writes it as JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from warehouse import Evidence

PREPOSITIONS = {"year": "in", "date": "on"}


@dataclass
class Literal:
    """A literal value as the page states it, and, once fuzzed, its blurred form and bounds."""

    text: str
    value_type: str
    typed: int | str | None = None
    fuzzed: str = ""                 # e.g. "the early 1930s", "May 1923", "between 5,000 and 6,000"
    fuzz_kind: str = ""              # decade | part_of_decade | month | season | year | range | about
    lo: int | str | None = None      # bounds the fuzzed form allows (ints, or ISO dates)
    hi: int | str | None = None

    def phrase(self) -> str:
        """The value as worded in a question, with its preposition where it takes one."""
        if not self.fuzzed:
            prep = PREPOSITIONS.get(self.value_type)
            return f"{prep} {self.text}" if prep else self.text
        if self.value_type in ("year", "date"):
            return f"in {self.fuzzed}"
        return self.fuzzed


@dataclass
class Clause:
    """One fact about a node. `template` words it with `{v}` for the value's rendering."""

    relation: str
    direction: str                   # out | in
    value: "Node | Literal"
    template: str
    evidence: Evidence
    fact_subject_url: str = ""       # the fact's subject page (the node for out, the value for in)


@dataclass
class Node:
    """An entity of the question: named (`clauses` empty) or described by its clauses."""

    name: str
    url: str
    noun: str = ""                   # head noun of its lead sentence ("city", "painter")
    clauses: list[Clause] = field(default_factory=list)
    article: str = "the"

    @property
    def named(self) -> bool:
        return not self.clauses


@dataclass
class Ask:
    """What the question asks of the root node: a relation's value, or the node itself ('self')."""

    relation: str
    template: str                    # {e}: the root's rendering; {q}: a cloze's question phrase
    answer: str
    answer_type: str
    evidence: Evidence
    answer_url: str | None = None
    aliases: tuple[str, ...] = ()
    answer_noun: str = ""            # fills {an}
    verb: str = ""                   # fills {verb} (prose year relations)


@dataclass
class Chain:
    """A question under construction: the tree, its wording and the steps that made it."""

    ask: Ask
    root: Node
    question: str = ""
    steps: list[dict] = field(default_factory=list)
    uniqueness: dict = field(default_factory=dict)

    @property
    def hops(self) -> int:
        """The pages a solver must read: the distinct pages its evidence is quoted from. A
        description from a page the chain already uses obfuscates; it adds no hop."""
        return len({e.url for e in self.evidence()})

    @property
    def fact_count(self) -> int:
        """The facts composed into the question (its steps; `hops` before pages counted)."""
        return sum(1 for _ in self.clauses()) + (0 if self.ask.relation == "self" else 1)

    @property
    def hop_kind(self) -> str:
        return "bridge" if self.hops >= 2 else ""

    def clauses(self) -> Iterator[tuple[Node, Clause]]:
        """Every (node, clause) of the tree, deepest first (the order a solver would follow)."""
        yield from _walk(self.root)

    def named_nodes(self) -> list[Node]:
        out = [self.root] if self.root.named else []
        for _, c in self.clauses():
            if isinstance(c.value, Node) and c.value.named:
                out.append(c.value)
        return out

    def evidence(self) -> list[Evidence]:
        """One quote per fact in chain order (two facts may share a sentence); the ask's
        quote, which states the answer, last."""
        out = [c.evidence for _, c in self.clauses()]
        if self.ask.relation != "self" or not out:
            out.append(self.ask.evidence)
        return out


def clone(chain: Chain) -> Chain:
    """A copy whose tree and steps can change without touching `chain` (evidence, which is
    frozen, is shared); much cheaper than copy.deepcopy on the composer's hot path."""
    return Chain(chain.ask, _clone_node(chain.root), chain.question, list(chain.steps),
                 dict(chain.uniqueness))


def _clone_node(node: Node) -> Node:
    clauses = [Clause(c.relation, c.direction, _clone_value(c.value), c.template, c.evidence,
                      c.fact_subject_url) for c in node.clauses]
    return Node(node.name, node.url, node.noun, clauses, node.article)


def _clone_value(value: "Node | Literal") -> "Node | Literal":
    if isinstance(value, Node):
        return _clone_node(value)
    return Literal(value.text, value.value_type, value.typed, value.fuzzed, value.fuzz_kind,
                   value.lo, value.hi)


def _walk(node: Node) -> Iterator[tuple[Node, Clause]]:
    for c in node.clauses:
        if isinstance(c.value, Node):
            yield from _walk(c.value)
        yield node, c


def described_nodes(node: Node) -> list[Node]:
    """`node` and the nodes under it that a question describes rather than names."""
    out = [] if node.named else [node]
    for c in node.clauses:
        if isinstance(c.value, Node):
            out += described_nodes(c.value)
    return out


def render_node(node: Node) -> str:
    """'Thiaburg', or 'the city where Bob Smith was born and founded in the 1200s'."""
    if node.named:
        return node.name
    parts = [c.template.format(v=render_value(c.value)) for c in node.clauses]
    lead = f"{node.article} {node.noun}".strip() if node.noun else node.article
    return " ".join(x for x in (lead, " and ".join(parts)) if x)


def render_value(value: Node | Literal) -> str:
    return render_node(value) if isinstance(value, Node) else value.phrase()


def render_question(chain: Chain) -> str | None:
    """The embedded wording: the ask's template around the root's rendering."""
    from datagen.seeds.wording import fill
    slots = {"e": render_node(chain.root)}
    if chain.ask.answer_noun:
        slots["an"] = chain.ask.answer_noun
    if chain.ask.verb:
        slots["verb"] = chain.ask.verb
    text = fill(chain.ask.template, **slots)
    # a description put where a page had 'the <name>' ('the the city ...')
    return re.sub(r"\b([Tt]he) the\b", r"\1", text) if text else text


def node_trace(node: Node) -> dict:
    if node.named:
        return {"name": node.name, "url": node.url}
    return {"noun": node.noun, "url": node.url, "name": node.name,
            "clauses": [clause_trace(c) for c in node.clauses]}


def clause_trace(c: Clause) -> dict:
    out = {"relation": c.relation, "direction": c.direction, "phrase": "",
           "evidence": {"url": c.evidence.url, "quote": c.evidence.quote}}
    out["phrase"] = c.template.format(v=render_value(c.value))
    if isinstance(c.value, Node):
        out["value"] = node_trace(c.value)
    else:
        lit = c.value
        out["value"] = {"literal": lit.text, "type": lit.value_type,
                        "typed": lit.typed, "fuzzed": lit.fuzzed or None,
                        "fuzz": ({"kind": lit.fuzz_kind, "lo": lit.lo, "hi": lit.hi}
                                 if lit.fuzzed else None)}
    return out


def trace(chain: Chain, backend: str, config_seed: int) -> dict:
    """The machine-readable chain: the tree (every hop's relation, constraint, value and
    fuzzed form), the hop list in chain order, the steps taken and how uniqueness was judged."""
    hops = [{"hop": i + 1, "relation": c.relation, "direction": c.direction,
             "about": node.name, "phrase": c.template.format(v=render_value(c.value)),
             "value": (c.value.name if isinstance(c.value, Node) else c.value.text),
             "fuzzed": (None if isinstance(c.value, Node) else c.value.fuzzed or None),
             "url": c.evidence.url}
            for i, (node, c) in enumerate(chain.clauses())]
    return {"version": 1, "backend": backend, "seed": config_seed, "question": chain.question,
            "ask": {"relation": chain.ask.relation, "answer": chain.ask.answer,
                    "answer_type": chain.ask.answer_type, "answer_url": chain.ask.answer_url},
            "root": node_trace(chain.root), "hops": hops, "steps": chain.steps,
            "uniqueness": chain.uniqueness}
