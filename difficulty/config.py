"""BandConfig: the one typed config of `run_band` / `datagen band` (defaults pinned here)."""

from __future__ import annotations

from typing import Optional

from pydantic import ConfigDict, Field, field_validator

from datagen.endpoint import EndpointSpec

from difficulty.adaptive import StoppingRule
from difficulty.estimate import DEFAULT_THRESHOLDS, check_thresholds


class BandConfig(EndpointSpec):
    """How questions are banded. Thresholds are the lower pass-rate edges of hard, medium,
    easy and too_easy (too_hard is everything below the first). The endpoint fields of
    `solver: llm` are `EndpointSpec`'s."""

    model_config = ConfigDict(extra="forbid")

    solver: str = Field("embedded", description="embedded | llm | policy:PATH")
    where: Optional[str] = Field(None, description="SQL filter on the columns of `questions`")
    from_rollouts: Optional[str] = Field(None, description="re-band from this run's rollouts")
    thresholds: tuple[float, float, float, float] = DEFAULT_THRESHOLDS
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    max_k: int = Field(16, ge=1, le=256)
    first_round: int = Field(3, ge=1)
    round_size: int = Field(2, ge=1)
    lookahead: int = Field(4, ge=1)
    min_gain: float = Field(0.01, ge=0.0)
    seed: int = 0
    batch_size: int = Field(64, ge=1, description="questions per batch; one commit per batch")
    rollout_window: int = Field(1, ge=0, description="re-banding: each question's last N "
                                "policy versions rolled out (0 = all pooled)")
    plot: bool = True

    @field_validator("solver")
    @classmethod
    def _solver(cls, v: str) -> str:
        if v in ("embedded", "llm") or (v.startswith("policy:") and len(v) > 7):
            return v
        raise ValueError(f"solver {v!r}: use embedded, llm or policy:PATH (a checkpoint folder)")

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, v):
        return check_thresholds(v)

    def stopping_rule(self) -> StoppingRule:
        return StoppingRule(thresholds=tuple(self.thresholds), confidence=self.confidence,
                            max_k=self.max_k, first_round=min(self.first_round, self.max_k),
                            round_size=self.round_size, lookahead=self.lookahead,
                            min_gain=self.min_gain)
