"""The composer: seeds made harder step by step (INJECT / FUZZ / EXIT), evidence for each.

The file tree is in datagen/README.md.
"""

from datagen.compose.config import ComposeConfig, parse_hops

__all__ = ["ComposeConfig", "parse_hops", "run_compose", "ComposeSummary", "NoPages"]


def __getattr__(name: str):
    # ComposeConfig stays importable without the composer's imports (the build nests it)
    if name in ("run_compose", "ComposeSummary", "NoPages", "make_backend"):
        from datagen.compose import run
        return getattr(run, name)
    raise AttributeError(name)
