"""What a build needs that can be checked before its first stage, checked in seconds.

A build that crawls and composes for minutes and then fails at verify (an unreachable hub for
decontamination) or at compose (a model server that is down) has lost those minutes. So
`check_build` runs before the crawl: the decontamination sets resolvable (each default set
cached or the hub reachable; a folder with JSONL files), every configured model endpoint
reachable, and free disk for the warehouse. A problem is one `PreflightError` line saying what
to set. Probes are short: HF_HUB_OFFLINE=1 (or HF_DATASETS_OFFLINE=1) means the hub is
unreachable without a probe; a host gets one TCP connect of `PROBE_TIMEOUT_S`.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlparse

from flows.config import BuildConfig

PROBE_TIMEOUT_S = 3.0
MIN_FREE_BYTES = 1 << 30  # a real-text build's warehouse (pages, indexes, questions) fits in 1 GiB
DECONTAMINATION_FIX = ("set verify.decontamination: a folder of benchmark JSONL files such as "
                       "../shared/data/qa_benchmarks/, or off")


class PreflightError(ValueError):
    """A build that cannot succeed, known before it starts: one line saying what to set."""


def check_build(root: Path | str, cfg: BuildConfig) -> None:
    """Every up-front check of a build on the warehouse at `root`; the first problem raises."""
    check_decontamination(cfg.verify.resolved(cfg.is_demo).decontamination)
    for name, url in endpoints(cfg):
        check_endpoint(name, url)
    check_disk(Path(root))


def check_decontamination(source: str) -> None:
    """`off`, a folder holding JSONL files, or `hub` with every default set cached or the hub
    reachable (verify would otherwise give every question an `error` verdict)."""
    if source == "off":
        return
    if source != "hub":
        if not any(Path(source).glob("*.jsonl")):
            raise PreflightError(f"verify.decontamination: {source} holds no .jsonl files; "
                                 + DECONTAMINATION_FIX)
        return
    from verifiers.decontam import hub_missing, hub_reachable
    missing = hub_missing()
    if missing and not hub_reachable(PROBE_TIMEOUT_S):
        raise PreflightError(f"verify.decontamination is hub, the Hugging Face hub is "
                             f"unreachable and {len(missing)} benchmark sets are not cached "
                             f"({', '.join(missing[:3])}, ...): {DECONTAMINATION_FIX}")


def endpoints(cfg: BuildConfig) -> list[tuple[str, str]]:
    """(section, URL) of every model endpoint the build will call: compose's when its backend
    is llm, band's when its solver is llm."""
    compose, band = cfg.compose_config(), cfg.band_config()
    out = [("compose", compose.endpoint)] if compose.backend == "llm" else []
    out += [("band", band.endpoint)] if band.solver == "llm" else []
    return [(name, url) for name, url in out if url]


def check_endpoint(section: str, url: str) -> None:
    """One TCP connect to the endpoint's host and port; refused or silent is one line."""
    from verifiers.decontam import tcp_reachable
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if not parsed.hostname or not tcp_reachable(parsed.hostname, port, PROBE_TIMEOUT_S):
        raise PreflightError(f"{section} endpoint {url} is not reachable: start the model "
                             f"server there, or set compose.backend: embedded (band.solver: "
                             f"embedded) to build without a model")


def check_disk(root: Path) -> None:
    """At least MIN_FREE_BYTES free where the warehouse lives (its nearest existing folder)."""
    folder = next(p for p in (root, *root.resolve().parents) if p.exists())
    free = shutil.disk_usage(folder).free
    if free < MIN_FREE_BYTES:
        raise PreflightError(f"only {free >> 20} MiB free at {folder}; a build needs "
                             f"{MIN_FREE_BYTES >> 20} MiB: free some space or give "
                             f"--warehouse on another disk")
