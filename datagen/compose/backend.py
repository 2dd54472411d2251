"""The composer's backend interface: what an embedded or a model-driven composer implements.

The composing loop (datagen/compose/compose.py) owns everything that must hold whatever the
backend: it lists the valid next steps (StepOption: an INJECT of one fact about one named
entity, or a FUZZ of one literal into one blurred form), applies the step the backend chose
to a copy of the chain, asks the backend to word the new chain, and validates the result
(every quote verbatim in its page, the answer unchanged and unique, the answer and its
aliases absent from the question, every constraint's value or fuzzed form present in the
wording). A rejected step is counted by reason and the backend is asked again without it.

A backend only decides and words:

- ``next_step(chain, options, rng)`` returns one of ``options`` (INJECT / FUZZ) or ``None``
  (EXIT). ``chain.hops`` and the loop's target (``chain.steps`` and ``options``) tell it
  where it stands; ``options`` are ordered, and the embedded backend takes the first one
  that suits its policy.
- ``word(chain, rng)`` returns the question text for the chain. The embedded backend renders
  the templates stored in the chain (``render_question``); a model-driven backend may write
  a freer wording but must keep every named entity's name, every literal's text (or fuzzed
  form) and must not name the answer: the loop checks this and rejects the step otherwise.
  Returning ``None`` rejects the step (reason ``wording_failed``).

Every backend subclasses ``ComposeBackend``, which declares the whole interface: the two
decisions above (abstract) and the hooks, whose defaults do nothing, so a backend overrides
only what it has and a misspelt hook is a method the loop never calls rather than a name it
silently skips. ``write_seed(chain, rng)`` words a one-fact seed (None, the default: the
seed keeps its template wording, and its row says so); ``start(wh, run_id)`` before the
first seed (e.g. to account model calls in ``llm_calls`` under the compose run);
``close()`` at the end; ``summary()`` the backend's own totals for the run's summary.
``max_concurrency`` (default 1) lets the loop compose that many seeds of a batch at once on
threads; results are put back in seed order, so the output does not depend on timing.
``name`` is written to each row's ``backend`` column and the trace.

``datagen.compose.llm_backend`` (the model-access issue) provides ``LLMBackend`` built from
``datagen.llm.EndpointConfig``-style settings: ``make_backend(cfg: ComposeConfig)``.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from datagen.seeds.chain import Chain

if TYPE_CHECKING:
    from warehouse import Warehouse

ACTIONS = ("INJECT", "FUZZ", "EXIT")
TEMPLATE_WORDING = "embedded"  # the `backend` of a row worded by the templates, not a model


@dataclass(frozen=True)
class StepOption:
    """One candidate step.

    INJECT: ``target`` is the index of a named node in ``chain.named_nodes()``; ``relation``,
    ``direction`` and ``template`` the clause to describe it by; ``detail`` the fact's value
    and page. FUZZ: ``target`` is the index of a literal clause in the chain's literal list
    (``literal_clauses(chain)``), ``fuzzed`` its blurred form with ``lo``/``hi`` bounds.
    """

    action: str
    target: int
    relation: str = ""
    direction: str = ""
    template: str = ""
    fuzzed: str = ""
    fuzz_kind: str = ""
    lo: Any = None
    hi: Any = None
    fact_index: int = -1                  # index into FactStore.facts (INJECT)
    adds_entity: bool = False             # INJECT whose value is a further named entity
    new_page: bool = False                # INJECT whose quote is on a page the chain lacks
    detail: dict = field(default_factory=dict, compare=False)


class ComposeBackend(ABC):
    """What the composing loop asks of a backend (see the module docstring)."""

    name: str = ""
    max_concurrency: int = 1   # seeds of a batch composed at once, on threads

    @abstractmethod
    def next_step(self, chain: Chain, options: Sequence[StepOption], target_hops: int,
                  rng: random.Random) -> StepOption | None:
        """The step to try next, or None to EXIT."""

    @abstractmethod
    def word(self, chain: Chain, rng: random.Random) -> str | None:
        """The question text of `chain` (None: the wording failed; the step is rejected)."""

    def write_seed(self, chain: Chain, rng: random.Random) -> str | None:
        """The wording of a one-fact seed; None keeps the template's (the default)."""
        return None

    def start(self, wh: "Warehouse", run_id: str) -> None:
        """Called once before the first seed of a run."""

    def close(self) -> None:
        """Called once when the run ends, however it ends."""

    def summary(self) -> dict[str, Any]:
        """The backend's own totals for the run's summary (model calls, refusals)."""
        return {}
