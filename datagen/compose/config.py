"""ComposeConfig: the one typed config of `datagen compose` (light to import: pydantic only)."""

from __future__ import annotations

from typing import Literal as Lit

from pydantic import ConfigDict, Field, model_validator

from datagen.endpoint import EndpointSpec


class ComposeConfig(EndpointSpec):
    """Seeds and composed questions from the stored pages. Defaults in code; a file overrides.
    The endpoint fields (`endpoint`, `model`, `api_key_env`, budgets) are `EndpointSpec`'s."""

    model_config = ConfigDict(extra="forbid")

    backend: Lit["embedded", "llm"] = "embedded"
    hops_min: int = Field(2, ge=2, le=8, description="fewest hops a composed question has")
    hops_max: int = Field(4, ge=2, le=8, description="most hops a composed question has")
    max_questions: int | None = Field(None, ge=1, description="stop after this many composed")
    seed: int = Field(0, description="same pages + same seed -> same questions")
    batch_size: int = Field(200, ge=1, description="seeds per warehouse commit")
    fuzz_rate: float = Field(0.6, ge=0.0, le=1.0, description="chance to FUZZ a new literal")
    bridges_per_seed: int = Field(1, ge=1, le=8, description="questions composed per seed, "
                                  "each entering through another page (a small corpus: 8)")
    max_steps: int = Field(12, ge=1, le=50, description="steps per seed (kept or rejected)")
    search_uniqueness: bool = Field(True, description="judge uniqueness with search on pages "
                                    "the fact store does not fully know")
    # the LLM backend (datagen/compose/llm_backend.py)
    llm_role: Lit["compose", "word"] = Field(
        "compose", description="llm backend: the model picks steps and words seeds and chains "
        "(compose), or words only the multi-page chains the engine builds (word)")
    max_concurrency: int = Field(4, ge=1, le=256)
    cache: bool = True

    @model_validator(mode="after")
    def _check(self) -> "ComposeConfig":
        if self.hops_min > self.hops_max:
            raise ValueError(f"hops_min {self.hops_min} > hops_max {self.hops_max}; "
                             "give a range like 2-4")
        if self.backend == "llm" and not (self.endpoint and self.model):
            raise ValueError("the llm backend needs an endpoint and a model "
                             "(--endpoint URL --model NAME)")
        return self


def parse_hops(text: str) -> tuple[int, int]:
    """'2-4' -> (2, 4); '3' -> (3, 3)."""
    parts = text.split("-")
    try:
        lo, hi = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
        lo, hi = 0, -1
    if not 2 <= lo <= hi:
        raise ValueError(f"--hops {text!r}: give N or LO-HI with 2 <= LO <= HI (e.g. 2-4)")
    return lo, hi
