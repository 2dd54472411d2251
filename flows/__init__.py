"""flows: the data stages as Prefect flows, and the `build` flow that runs them in order.

See flows/README.md for the file tree. Imported only by the CLI (DESIGN.md §2).
"""

from flows.build import (
    BuildResult, StageRun, band_flow, build_flow, compose_flow, crawl_flow, verify_flow,
)
from flows.config import BuildConfig, VerifyConfig, load_build_config
from flows.run import run_build
from flows.stages import StageResult
from flows.verify import StageError, VerifySummary, run_verify

__all__ = ["BuildConfig", "VerifyConfig", "load_build_config", "build_flow", "crawl_flow",
           "compose_flow", "verify_flow", "band_flow", "BuildResult", "StageRun", "StageResult",
           "run_build", "run_verify", "VerifySummary", "StageError"]
