"""`BuildConfig`: the one typed config of `datagen build` (defaults in code; a YAML file and
flags override). Each stage's section takes that stage config's fields (`section`); the
stage configs are pydantic models, light to import."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from datagen.compose.config import ComposeConfig
from datagen.config_io import problems, read_config_file, validate
from datagen.crawl.config import DEMO_ENTITIES, CrawlConfig
from datagen.endpoint import EndpointSpec
from difficulty.config import BandConfig
from verifiers.config import VerifyConfig


class DemoSpec(BaseModel):
    """The built-in demo world, used when the build has no seeds."""

    model_config = ConfigDict(extra="forbid")
    entities: int = Field(DEMO_ENTITIES, ge=30)
    seed: int = 0


class ModelSection(EndpointSpec):
    """The build's `model:` section: the endpoint every LLM stage uses unless its own section
    names another."""

    @model_validator(mode="after")
    def _both(self) -> "ModelSection":
        if bool(self.endpoint) != bool(self.model):
            raise ValueError("give both endpoint and model (e.g. --endpoint "
                             "http://127.0.0.1:8000/v1 --model NAME), or neither")
        return self


def section(config_cls: type[BaseModel], name: str) -> type[BaseModel]:
    """A stage config's fields, each optional (None: not given), unknown keys refused: what a
    stage's section of the build file may say. The stage config itself is validated on the
    merged values (`BuildConfig._stages`), where the build's seed and endpoint are known."""
    fields: dict[str, Any] = {
        k: (Optional[f.annotation], Field(None, description=f.description))
        for k, f in config_cls.model_fields.items()}
    return create_model(name, __config__=ConfigDict(extra="forbid"), __doc__=
                        f"The build's `{name}` section: any {config_cls.__name__} field.",
                        **fields)


CrawlSection = section(CrawlConfig, "crawl")
ComposeSection = section(ComposeConfig, "compose")
BandSection = section(BandConfig, "band")


def given(part: BaseModel) -> dict[str, Any]:
    """The fields a section sets (None is not given)."""
    return part.model_dump(exclude_none=True)


class BuildConfig(BaseModel):
    """Crawl -> compose -> verify -> band, as one run. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")
    seeds: list[str] = Field(default_factory=list, description="URLs, sitemaps or folders; "
                             "none: the built-in demo world")
    seed: int = Field(0, description="the random seed of every stage (same seed, same ids)")
    demo: DemoSpec = Field(default_factory=DemoSpec)
    crawl: CrawlSection = Field(default_factory=CrawlSection, description="CrawlConfig fields")
    compose: ComposeSection = Field(default_factory=ComposeSection,
                                    description="ComposeConfig fields")
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    band: BandSection = Field(default_factory=BandSection, description="BandConfig fields")
    model: ModelSection = Field(default_factory=ModelSection)
    runner: Literal["default", "dask"] = Field("default", description="where tasks run: the "
                                               "flow's process, or Dask workers (flows/runner.py)")
    dask_address: str | None = Field(None, description="an existing Dask scheduler, e.g. "
                                     "tcp://10.0.0.5:8786; none: a local cluster per build")
    dask_workers: int = Field(2, ge=1, description="worker processes of the local cluster")

    @model_validator(mode="after")
    def _stages(self) -> "BuildConfig":
        """Validate the stage configs now, so a typo fails before anything runs."""
        _check(CrawlConfig, {"seeds": self.seeds or ["http://127.0.0.1/"], **self.crawl_fields()},
               "crawl")
        _check(ComposeConfig, self.compose_fields(), "compose")
        _check(BandConfig, self.band_fields(), "band")
        return self

    @property
    def is_demo(self) -> bool:
        return not self.seeds

    def crawl_fields(self) -> dict[str, Any]:
        """The crawl's settings as given (the seeds and the demo world are the build's)."""
        return given(self.crawl)

    def compose_fields(self) -> dict[str, Any]:
        """The compose stage's config: the build's seed and endpoint unless given there."""
        mine = given(self.compose)
        out = {"seed": self.seed, **mine}
        if self.model.endpoint and "backend" not in mine:
            out["backend"] = "llm"
        return {**out, **_endpoint_fields(self.model, mine)}

    def band_fields(self) -> dict[str, Any]:
        mine = given(self.band)
        return {"seed": self.seed, **mine, **_endpoint_fields(self.model, mine)}

    def compose_config(self) -> ComposeConfig:
        return ComposeConfig(**self.compose_fields())

    def band_config(self) -> BandConfig:
        return BandConfig(**self.band_fields())

    def resolved(self) -> dict[str, Any]:
        """The config as the run stores it: every stage's settings made explicit."""
        data = self.model_dump()
        data["crawl"] = self.crawl_fields()
        data["verify"] = self.verify.resolved(self.is_demo).model_dump()
        data["compose"] = self.compose_config().model_dump()
        data["band"] = self.band_config().model_dump()
        return data


def _endpoint_fields(spec: EndpointSpec, given: dict[str, Any]) -> dict[str, Any]:
    """A stage config's endpoint fields from the build's `model` section, where the stage's
    own section does not set them."""
    if not spec.endpoint:
        return {}
    return {k: v for k, v in spec.endpoint_values().items() if k not in given and v is not None}


def _check(config_cls: type[BaseModel], fields: dict[str, Any], section: str) -> None:
    """A stage config validated now; its problem keys are named with the section's prefix
    ('compose.hops_min: ...'), so a build file's reader finds the line to fix."""
    from pydantic import ValidationError
    try:
        config_cls(**fields)
    except ValidationError as exc:
        raise ValueError("; ".join(problems(exc, (section,)))) from None


def config_hash(data: object) -> str:
    """A stable hash of a JSON-able config (the stage part of a task's cache key)."""
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


BACKENDS = ("embedded", "llm")


def check_backend(backend: str | None, model: str | None) -> None:
    """`--backend` as the build takes it, refused before any model server starts for it:
    embedded (the build uses no model) or llm (the composer's model, named)."""
    if backend not in (None, *BACKENDS):
        raise ValueError(f"--backend {backend}: use {' or '.join(BACKENDS)}")
    if backend == "llm" and not model:
        raise ValueError("--backend llm needs --model NAME (and --endpoint URL, or the model "
                         "is served locally)")


def load_build_config(path: Path | None, *, backend: str | None = None,
                      **overrides: object) -> BuildConfig:
    """Read a YAML/TOML/JSON file (optional), apply flag overrides, validate (a mistake is one
    ConfigError line). `backend` picks the composer; embedded also drops the flags' endpoint
    and model, so no stage uses one."""
    check_backend(backend, overrides.get("model_name"))  # type: ignore[arg-type]
    if backend == "embedded":
        overrides = {k: v for k, v in overrides.items() if k not in ("endpoint", "model_name")}
    data = read_config_file(path, "BuildConfig") if path is not None else {}
    if backend is not None:
        data.setdefault("compose", {})["backend"] = backend
    for key, value in overrides.items():
        if value is None:
            continue
        if key in ("endpoint", "model_name", "api_key_env", "max_concurrency"):
            data.setdefault("model", {})["model" if key == "model_name" else key] = value
        else:
            data[key] = value
    return validate(BuildConfig, data, str(path) if path else "build settings")
