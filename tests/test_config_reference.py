"""docs/config.md is generated from the typed configs: it must match the code."""

from pathlib import Path

from datagen.config_reference import reference, type_name

ROOT = Path(__file__).resolve().parents[1]


def test_the_reference_page_matches_the_typed_configs():
    page = (ROOT / "docs" / "config.md").read_text()
    assert page == reference(), ("docs/config.md is stale: regenerate it with "
                                 "`python -m datagen.config_reference > docs/config.md`")


def test_every_key_of_the_training_config_is_in_the_reference():
    from training.config import TrainConfig
    text = reference()
    for section, field in TrainConfig.model_fields.items():
        assert f"### `{section}`" in text or f"| `{section}` |" in text


def test_choices_are_spelled_as_yaml_values():
    from typing import Literal, Optional
    assert type_name(Literal["hf", "vllm"]) == "`hf` \\| `vllm`"
    assert type_name(Optional[int]) == "int"
