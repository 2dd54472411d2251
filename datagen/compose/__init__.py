"""The composer: seeds made harder step by step (INJECT / FUZZ / EXIT), evidence for each.

    backend.py      ComposeBackend Protocol + StepOption: what a backend decides and words
    embedded.py     EmbeddedBackend: no model; facts, links and templates
    llm_backend.py  the model-driven backend (the model-access issue), loaded lazily
    steps.py        candidate INJECT / FUZZ steps; applying one to a copy of a chain
    fuzz.py         blurred forms of years, dates and numbers, with their bounds
    validate.py     Validator: quotes verbatim, answer unique/unchanged/not leaked, wording
    compose.py      Composer: the loop for one seed
    config.py       ComposeConfig (pydantic, extra="forbid")
    run.py          run_compose(wh, cfg) -> ComposeSummary: batches, resume, the runs row
"""

from datagen.compose.config import ComposeConfig, parse_hops

__all__ = ["ComposeConfig", "parse_hops", "run_compose", "ComposeSummary", "NoPages"]


def __getattr__(name: str):
    # ComposeConfig stays importable without the composer's imports (the build nests it)
    if name in ("run_compose", "ComposeSummary", "NoPages", "make_backend"):
        from datagen.compose import run
        return getattr(run, name)
    raise AttributeError(name)
