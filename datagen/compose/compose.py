"""Compose one seed into a harder question: the INJECT / FUZZ / EXIT loop with validation.

Only the chain's final version becomes a row; every step taken or rejected is in its trace.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from datagen.compose import steps
from datagen.compose.backend import ComposeBackend, StepOption
from datagen.compose.validate import Validator
from datagen.seeds.chain import Chain, Clause, Literal, Node, clone, described_nodes
from datagen.seeds.store import FactStore


@dataclass
class Outcome:
    chain: Chain | None
    rejected: Counter = field(default_factory=Counter)   # rejected steps by reason
    reason: str = ""                                     # why no question was kept


@dataclass
class Composer:
    store: FactStore
    validator: Validator
    backend: ComposeBackend
    hops: tuple[int, int] = (2, 4)
    max_steps: int = 12
    max_tries: int = 8          # rejected options per step before EXIT
    bridges_per_seed: int = 1   # questions per seed, each through another first bridge page

    def __post_init__(self):
        self._index = {id(f): i for i, f in enumerate(self.store.facts)}

    def compose_all(self, seed: Chain, rng: random.Random) -> list[Outcome]:
        """Up to `bridges_per_seed` questions of one seed, each entering through another
        page (the seed's first bridge); one outcome, of the backend's own path, when 1."""
        if self.bridges_per_seed == 1:
            return [self.compose(seed, rng)]
        firsts = {}
        for o in steps.inject_options(seed, self.store, self._index, rng):
            if o.new_page:
                firsts.setdefault(o.detail["url"], o)
        if not firsts:
            return [self.compose(seed, rng)]
        return [self.compose(seed, rng, first)
                for first in list(firsts.values())[:self.bridges_per_seed]]

    def compose(self, seed: Chain, rng: random.Random,
                first: StepOption | None = None) -> Outcome:
        """The seed composed (its first step `first`, where given) until the backend EXITs."""
        target = rng.randint(*self.hops)
        chain, out = clone(seed), Outcome(None)
        injectable = first is not None
        if first is not None:
            chain = self._step(chain, [first], target, rng, out.rejected) or chain
        for _ in range(self.max_steps):
            injects = steps.inject_options(chain, self.store, self._index, rng)
            injectable = injectable or any(o.new_page for o in injects)
            if chain.hops >= self.hops[1]:
                # hops_max holds whatever the backend: an INJECT from a new page adds a hop,
                # and a model may keep picking one past its target (SmolLM2 composed 6 hops)
                injects = [o for o in injects if not o.new_page]
            options = injects + steps.fuzz_options(chain, rng)
            nxt = self._step(chain, options, target, rng, out.rejected)
            if nxt is None:
                break
            chain = nxt
        chain.steps.append({"action": "EXIT", "ok": True, "hops": chain.hops,
                            "target": target})
        if chain.hops < self.hops[0]:
            # no other page describes a named entity of the chain, or every try was rejected
            out.reason = "too_few_pages" if injectable else "no_page_to_bridge"
            return out
        if self.validator.shortcut(chain):
            # one search of the question finds the answer's page: it does not need its pages
            chain = self._unshortcut(chain, rng)
            if chain is None:
                out.reason = "shortcut"
                return out
        out.chain = chain
        return out

    def _unshortcut(self, chain: Chain, rng: random.Random) -> Chain | None:
        """The shortcut reworded so that one search no longer finds the answer's page: its
        described entities called by their head noun alone, or the entities it names that
        a quoted page describes called by that description, or both; None when every
        rewording fails a check or still shortcuts."""
        plain = _plain_nouns(chain)
        elided = _elided(chain, self.store)
        tries = [(plain, "PLAIN_NOUN"), (elided, "ELIDE_NAME"),
                 (_plain_nouns(elided) if elided else None, "ELIDE_NAME+PLAIN_NOUN")]
        for new, action in tries:
            if new is None:
                continue
            new.question = self.backend.word(new, rng) or ""
            if not self.validator.check(new) and not self.validator.shortcut(new):
                new.steps.append({"action": action, "ok": True, "question": new.question})
                return new
        return None

    def _step(self, chain: Chain, options: list[StepOption], target: int,
              rng: random.Random, rejected: Counter) -> Chain | None:
        """The chain after the first step the backend picks that validates; None to EXIT."""
        for _ in range(self.max_tries):
            option = self.backend.next_step(chain, options, target, rng)
            if option is None:
                return None
            new = steps.apply_step(chain, option, self.store)
            new.question = self.backend.word(new, rng) or ""
            reason = self.validator.check(new)
            record = {"action": option.action, "ok": not reason, "relation": option.relation,
                      **option.detail}
            if option.action == "INJECT":
                record["literal"] = _new_literal(chain, new)
            if reason:
                record["reason"] = reason
                rejected[f"{option.action.lower()}_{reason}"] += 1
                chain.steps.append(record)
                options = [o for o in options if o is not option]
                continue
            new.steps = chain.steps + [{**record, "question": new.question}]
            return new
        return None


def _plain_nouns(chain: Chain) -> Chain | None:
    """A copy whose described entities go by their head noun alone ('the director', not 'the
    Hungarian film director'): the words that take a search to the answer's page are often
    its own lead sentence's. None when no noun is longer than a word."""
    plain = clone(chain)
    nodes = [n for n in described_nodes(plain.root) if len(n.noun.split()) > 1]
    for node in nodes:
        node.noun = node.noun.split()[-1]
    return plain if nodes else None


def _elided(chain: Chain, store: FactStore) -> Chain | None:
    """A copy in which each entity the question names through a typed relation ('who directed
    Fritz the Cat'), on a page the chain quotes, goes by its lead's noun instead ('who
    directed the 1972 American adult animated comedy film'): the solver must find that page
    from its description, and the answer's page, which names the entity, is not found by
    its name. None when no such entity has a noun of two words or more."""
    new, pages, done = clone(chain), {e.url for e in chain.evidence()}, False
    for _, c in new.clauses():
        node = c.value
        if not isinstance(node, Node) or not node.named or c.relation == "link" \
                or node.url not in pages or len(store.noun(node.url).split()) < 2:
            continue
        lead = store.facts_of(node.url, "is_a")
        if lead:
            node.clauses.append(Clause("is_a", "out", Literal(store.noun(node.url), "string"),
                                       "{v}", lead[0].evidence, node.url))
            node.noun, done = "", True
    return new if done else None


def _new_literal(old: Chain, new: Chain) -> bool:
    return len(steps.literal_clauses(new)) > len(steps.literal_clauses(old))
