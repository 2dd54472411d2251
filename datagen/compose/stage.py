"""`compose_stage`: what `datagen compose` does, as one library call (the CLI parses, calls
this, prints): open the warehouse, build the backend the config names, compose, close.

A SIGTERM ends the stage as Ctrl-C does (KeyboardInterrupt: the run row says `interrupted`,
the model client writes its rows, the committed batches stay). A stop from the model client
(a tripped breaker, a spent budget) and a backend that cannot be loaded come back as
`StageStopped`, a ValueError whose message is the one line to show.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from datagen.compose.backend import ComposeBackend
from datagen.compose.config import ComposeConfig, parse_hops

if TYPE_CHECKING:
    from datagen.compose.run import ComposeSummary


class StageStopped(ValueError):
    """The stage could not go on (the model endpoint stopped it, or its backend cannot load)."""


def compose_config(settings: Mapping[str, Any], hops: str | None = None,
                   **flags: Any) -> ComposeConfig:
    """The config from a file's settings, then the flags that were given (None: not given);
    `hops` ('2-4' or '3', in the file or as the flag) sets hops_min and hops_max."""
    from datagen.config_io import validate
    data = dict(settings)
    if "hops" in data:  # a config file may say `hops: 2-4` as the flag does
        data["hops_min"], data["hops_max"] = parse_hops(str(data.pop("hops")))
    if hops is not None:
        data["hops_min"], data["hops_max"] = parse_hops(hops)
    data.update({k: v for k, v in flags.items() if v is not None})
    return validate(ComposeConfig, data, "compose")


def compose_stage(warehouse: Path | None, cfg: ComposeConfig,
                  progress: Callable[["ComposeSummary"], None] | None = None) -> "ComposeSummary":
    """Compose into the warehouse at `warehouse` (None: the default one); see the module
    docstring."""
    import warehouse as wh_mod
    from datagen.compose.run import run_compose
    from warehouse.runs import sigterm_interrupts
    backend = _backend(cfg)
    wh = wh_mod.open(warehouse)
    try:
        with sigterm_interrupts():
            return run_compose(wh, cfg, progress=progress, backend=backend)
    except Exception as exc:
        if _is_llm_stop(exc):
            raise StageStopped(_first_line(exc)) from None
        raise
    finally:
        wh.close()


def _backend(cfg: ComposeConfig) -> ComposeBackend:
    from datagen.compose.run import make_backend
    try:
        return make_backend(cfg)
    except ImportError as exc:
        if cfg.backend != "llm":
            raise
        raise StageStopped(f"the llm backend cannot be loaded ({exc}); "
                           "use --backend embedded") from None


def _is_llm_stop(exc: BaseException) -> bool:
    """A tripped breaker or a spent budget (the model client may not be installed)."""
    try:
        from datagen.llm import LLMStop
    except ImportError:
        return False
    return isinstance(exc, LLMStop)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
