"""`BuildConfig`: the one typed config of `datagen build` (defaults in code; a YAML file and
flags override). Light to import: the stage configs it nests are pydantic models only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEMO_ENTITIES = 2000


class DemoSpec(BaseModel):
    """The built-in demo world, used when the build has no seeds."""

    model_config = ConfigDict(extra="forbid")
    entities: int = Field(DEMO_ENTITIES, ge=30)
    seed: int = 0


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


class EndpointSpec(BaseModel):
    """An OpenAI-compatible model endpoint (the LLM composer and the LLM solver)."""

    model_config = ConfigDict(extra="forbid")
    endpoint: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    max_concurrency: int = Field(8, ge=1)
    max_calls: int | None = Field(None, ge=1, description="budget per stage run: calls sent")
    max_tokens: int | None = Field(None, ge=1, description="budget per stage run: tokens used")

    @model_validator(mode="after")
    def _both(self) -> "EndpointSpec":
        if bool(self.endpoint) != bool(self.model):
            raise ValueError("give both endpoint and model (e.g. --endpoint "
                             "http://127.0.0.1:8000/v1 --model NAME), or neither")
        return self


def _compose_config():
    from datagen.compose import ComposeConfig
    return ComposeConfig


def _band_config():
    from difficulty import BandConfig
    return BandConfig


class BuildConfig(BaseModel):
    """Crawl -> compose -> verify -> band, as one run. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")
    seeds: list[str] = Field(default_factory=list, description="URLs, sitemaps or folders; "
                             "none: the built-in demo world")
    seed: int = Field(0, description="the random seed of every stage (same seed, same ids)")
    demo: DemoSpec = Field(default_factory=DemoSpec)
    crawl: dict[str, Any] = Field(default_factory=dict, description="CrawlConfig fields")
    compose: dict[str, Any] = Field(default_factory=dict, description="ComposeConfig fields")
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    band: dict[str, Any] = Field(default_factory=dict, description="BandConfig fields")
    model: EndpointSpec = Field(default_factory=EndpointSpec)
    runner: Literal["default", "dask"] = Field("default", description="where tasks run: the "
                                               "flow's process, or Dask workers (flows/runner.py)")
    dask_address: str | None = Field(None, description="an existing Dask scheduler, e.g. "
                                     "tcp://10.0.0.5:8786; none: a local cluster per build")
    dask_workers: int = Field(2, ge=1, description="worker processes of the local cluster")

    @model_validator(mode="after")
    def _stages(self) -> "BuildConfig":
        """Validate the nested stage configs now, so a typo fails before anything runs."""
        from datagen.crawl.config import CrawlConfig
        _check(CrawlConfig, {"seeds": self.seeds or ["http://127.0.0.1/"], **self.crawl}, "crawl")
        _check(_compose_config(), self.compose_fields(), "compose")
        _check(_band_config(), self.band_fields(), "band")
        return self

    @property
    def is_demo(self) -> bool:
        return not self.seeds

    def compose_fields(self) -> dict[str, Any]:
        """The compose stage's config: the build's seed and endpoint unless given there."""
        out = {"seed": self.seed, **self.compose}
        if self.model.endpoint and "backend" not in self.compose:
            out["backend"] = "llm"
        return {**out, **_endpoint_fields(_compose_config(), self.model, self.compose)}

    def band_fields(self) -> dict[str, Any]:
        out = {"seed": self.seed, **self.band}
        return {**out, **_endpoint_fields(_band_config(), self.model, self.band)}

    def resolved(self) -> dict[str, Any]:
        """The config as the run stores it: every stage's settings made explicit."""
        data = self.model_dump()
        data["verify"] = self.verify.resolved(self.is_demo).model_dump()
        data["compose"] = _compose_config()(**self.compose_fields()).model_dump()
        data["band"] = _band_config()(**self.band_fields()).model_dump()
        return data


def _endpoint_fields(config_cls, spec: EndpointSpec, given: dict[str, Any]) -> dict[str, Any]:
    """Fill a stage config's endpoint fields from the build's `model` section where it has them."""
    names = getattr(config_cls, "model_fields", {})
    values = {"endpoint": spec.endpoint, "model": spec.model, "api_key_env": spec.api_key_env,
              "max_concurrency": spec.max_concurrency, "max_calls": spec.max_calls,
              "max_tokens": spec.max_tokens}
    return {k: v for k, v in values.items()
            if k in names and k not in given and v is not None and spec.endpoint}


def _check(config_cls, fields: dict[str, Any], section: str) -> None:
    from pydantic import ValidationError
    try:
        config_cls(**fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in (section, *err["loc"]))
        raise ValueError(f"{where}: {err['msg']}") from None


def config_hash(data: Any) -> str:
    """A stable hash of a JSON-able config (the stage part of a task's cache key)."""
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_build_config(path: Path | None, **overrides: Any) -> BuildConfig:
    """Read a YAML/JSON file (optional), apply flag overrides, validate."""
    data: dict[str, Any] = {}
    if path is not None:
        import yaml
        if not path.is_file():
            raise ValueError(f"--config {path}: no such file")
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else (yaml.safe_load(text) or {})
        if not isinstance(data, dict):
            raise ValueError(f"--config {path}: expected a mapping of BuildConfig fields")
    for key, value in overrides.items():
        if value is None:
            continue
        if key in ("endpoint", "model_name", "api_key_env", "max_concurrency"):
            data.setdefault("model", {})["model" if key == "model_name" else key] = value
        else:
            data[key] = value
    return BuildConfig(**data)
