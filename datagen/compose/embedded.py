"""The embedded composer: no model. Facts, the link graph and templates decide and word.

Policy (after ASearcher's synthesis agent): INJECT a bridge (a sentence of a page the chain
has not used that names one of its entities) until the target number of hops (pages); after an INJECT
that brought a literal, FUZZ it with probability `fuzz_rate`; EXIT at the target.
"""

from __future__ import annotations

import random
from typing import Sequence

from datagen.compose.backend import ComposeBackend, StepOption
from datagen.seeds.chain import Chain, render_question


class EmbeddedBackend(ComposeBackend):
    name = "embedded"

    def __init__(self, fuzz_rate: float = 0.6):
        self.fuzz_rate = fuzz_rate

    def next_step(self, chain: Chain, options: Sequence[StepOption], target_hops: int,
                  rng: random.Random) -> StepOption | None:
        fuzzes = [o for o in options if o.action == "FUZZ"]
        injects = [o for o in options if o.action == "INJECT"]
        if fuzzes and _just_injected_literal(chain) and rng.random() < self.fuzz_rate:
            return fuzzes[0]
        # a hop is a page: a bridge from a page the chain has not used; a same-page
        # description only obfuscates
        bridges = [o for o in injects if o.new_page]
        if chain.hops < target_hops and bridges:
            return bridges[0]
        return None

    def word(self, chain: Chain, rng: random.Random) -> str | None:
        return render_question(chain)


def _just_injected_literal(chain: Chain) -> bool:
    last = next((s for s in reversed(chain.steps) if s.get("ok")), None)
    return bool(last and last["action"] == "INJECT" and last.get("literal"))
