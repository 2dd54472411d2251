"""BuildConfig: every key is read by the code it configures; the example file validates; the
stage sections are typed (unknown keys and wrong types refused) and resolve as before."""

import ast
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from datagen.compose import ComposeConfig
from datagen.crawl import CrawlConfig
from datagen.endpoint import EndpointSpec
from difficulty import BandConfig
from flows.config import BuildConfig, DemoSpec, VerifyConfig

ROOT = Path(__file__).resolve().parents[2]
# each config class -> the packages whose code it configures
READERS = {
    BuildConfig: ("flows",),
    DemoSpec: ("flows",),
    VerifyConfig: ("verifiers", "flows"),
    CrawlConfig: ("datagen/crawl",),
    ComposeConfig: ("datagen/compose", "datagen/seeds"),
    BandConfig: ("difficulty",),
    EndpointSpec: ("datagen/endpoint.py", "datagen/compose", "difficulty"),
}


def _names_read(paths: tuple[str, ...], declared_in: type[BaseModel]) -> set[str]:
    """Attribute names and string keys used in the code under `paths`, leaving out the field
    declarations and validator decorators of the config class itself."""
    names: set[str] = set()
    files = [p for rel in paths for p in ([ROOT / rel] if rel.endswith(".py")
                                          else sorted((ROOT / rel).rglob("*.py")))]
    for path in files:
        tree = ast.parse(path.read_text())
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == declared_in.__name__:
                for item in node.body:  # fields and decorators are not reads; method bodies are
                    if isinstance(item, ast.FunctionDef):
                        skip |= {id(n) for d in item.decorator_list for n in ast.walk(d)}
                    else:
                        skip |= {id(n) for n in ast.walk(item)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    return names


@pytest.mark.parametrize("config_cls", list(READERS), ids=lambda c: c.__name__)
def test_every_config_key_is_read_by_the_code_it_configures(config_cls):
    read = _names_read(READERS[config_cls], config_cls)
    own = set(config_cls.model_fields)
    if config_cls is not EndpointSpec:
        own -= set(EndpointSpec.model_fields)  # checked once, on EndpointSpec
    assert sorted(own - read) == []


def test_the_example_build_file_validates_and_names_every_section():
    data = yaml.safe_load((ROOT / "examples/build.yaml").read_text())
    cfg = BuildConfig(**data)
    assert set(data) >= {"seeds", "demo", "crawl", "compose", "verify", "band", "model"}
    assert cfg.compose_config().hops_max == 4 and cfg.band_config().confidence == 0.9


@pytest.mark.parametrize("section,bad,where", [
    ({"compose": {"hopz": 3}}, "extra_forbidden", ("compose", "hopz")),
    ({"band": {"max_k": "many"}}, "int_parsing", ("band", "max_k")),
    ({"crawl": {"max_pages": [1]}}, "int_type", ("crawl", "max_pages")),
])
def test_stage_sections_are_typed(section, bad, where):
    with pytest.raises(ValidationError) as err:
        BuildConfig(**section)
    first = err.value.errors()[0]
    assert first["type"] == bad and first["loc"] == where


def test_a_range_error_names_the_section():
    with pytest.raises(ValidationError, match=r"compose\.hops_min"):
        BuildConfig(compose={"hops_min": 9})


def test_the_model_section_fills_the_llm_stages_unless_they_say_otherwise():
    cfg = BuildConfig(model={"endpoint": "http://h:1/v1", "model": "m", "api_key_env": "K",
                             "max_tokens": 900}, compose={"max_calls": 40},
                      band={"solver": "llm", "model": "other"})
    compose, band = cfg.compose_config(), cfg.band_config()
    assert (compose.backend, compose.endpoint, compose.max_calls, compose.max_tokens) == \
        ("llm", "http://h:1/v1", 40, 900)
    # band now gets the key and the budget too (it had only endpoint and model)
    assert (band.model, band.api_key_env, band.max_tokens) == ("other", "K", 900)
    assert BuildConfig(compose={"backend": "embedded"},
                       model={"endpoint": "http://h:1/v1", "model": "m"}
                       ).compose_config().backend == "embedded"


def test_the_config_survives_the_flow_parameters_round_trip():
    """The CLI hands the flow `model_dump(exclude_none=True)`: what a section did not set stays
    unset there (the compose backend follows the model endpoint)."""
    cfg = BuildConfig(model={"endpoint": "http://h:1/v1", "model": "m"})
    again = BuildConfig(**cfg.model_dump(exclude_none=True))
    assert again.resolved() == cfg.resolved() and again.compose_config().backend == "llm"


def test_the_backend_flag_picks_the_composer_and_embedded_switches_the_model_off(tmp_path):
    """`--backend embedded` wins over a config file's model section (it used to drop only the
    flags' endpoint, so a file's endpoint still made the composer llm)."""
    from flows.config import load_build_config
    path = tmp_path / "build.yaml"
    path.write_text("model: {endpoint: 'http://h:1/v1', model: m}\n")
    assert load_build_config(path).compose_config().backend == "llm"
    off = load_build_config(path, backend="embedded", endpoint="http://h:2/v1", model_name="x")
    assert off.compose_config().backend == "embedded" and off.model.endpoint == "http://h:1/v1"
    on = load_build_config(None, backend="llm", endpoint="http://h:2/v1", model_name="x")
    assert (on.compose_config().backend, on.compose_config().endpoint) == ("llm", "http://h:2/v1")
    for backend, model, says in (("vllm", "x", "use embedded or llm"),
                                 ("llm", None, "needs --model NAME")):
        with pytest.raises(ValueError, match=says):
            load_build_config(None, backend=backend, model_name=model)
