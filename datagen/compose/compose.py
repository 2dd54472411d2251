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
from datagen.seeds.chain import Chain, clone, described_nodes
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

    def __post_init__(self):
        self._index = {id(f): i for i, f in enumerate(self.store.facts)}

    def compose(self, seed: Chain, rng: random.Random) -> Outcome:
        target = rng.randint(*self.hops)
        chain, out = clone(seed), Outcome(None)
        injectable = False
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
            chain = self._plain_nouns(chain, rng)
            if chain is None:
                out.reason = "shortcut"
                return out
        out.chain = chain
        return out

    def _plain_nouns(self, chain: Chain, rng: random.Random) -> Chain | None:
        """The shortcut's described entities called by their head noun alone ('the director',
        not 'the Hungarian film director'): the words that take a search to the answer's page
        are often its own lead sentence's. None when that fails a check or still shortcuts."""
        plain = clone(chain)
        nodes = [n for n in described_nodes(plain.root) if len(n.noun.split()) > 1]
        if not nodes:
            return None
        for node in nodes:
            node.noun = node.noun.split()[-1]
        plain.question = self.backend.word(plain, rng) or ""
        if self.validator.check(plain) or self.validator.shortcut(plain):
            return None
        plain.steps.append({"action": "PLAIN_NOUN", "ok": True, "question": plain.question})
        return plain

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


def _new_literal(old: Chain, new: Chain) -> bool:
    return len(steps.literal_clauses(new)) > len(steps.literal_clauses(old))
