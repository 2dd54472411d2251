"""`VerifyConfig`: what the verify stage runs (the build's `verify:` section); light to import."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class VerifyConfig(BaseModel):
    """What the verify stage runs. `decontamination`: `hub` (the default benchmark sets from
    the Hugging Face hub; an unreachable hub fails the stage), a folder of JSONL benchmark
    files, or `off`; `auto` means `off` on the demo world (its entities are fictional) and
    `hub` for real seeds."""

    model_config = ConfigDict(extra="forbid")
    decontamination: str = "auto"
    near_dup_threshold: float | None = Field(None, gt=0, le=1)
    batch_size: int = Field(1000, ge=1, description="questions per verdict commit")
    timeout_s: float = Field(600.0, gt=0, description="per check and batch")

    @field_validator("decontamination", mode="before")
    @classmethod
    def _yaml_off(cls, v: object) -> object:
        """YAML reads a bare `off` as false: `decontamination: off` means what it says."""
        return "off" if v is False else v

    @field_validator("decontamination")
    @classmethod
    def _source(cls, v: str) -> str:
        if v not in ("auto", "hub", "off") and not Path(v).is_dir():
            raise ValueError(f"'{v}' is not hub, off, auto or an existing folder of benchmark "
                             "JSONL files")
        return v

    def resolved(self, demo: bool) -> "VerifyConfig":
        """`auto` made explicit, so the run's stored config says what ran."""
        if self.decontamination != "auto":
            return self
        return self.model_copy(update={"decontamination": "off" if demo else "hub"})
