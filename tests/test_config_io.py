"""datagen.config_io: the one config-file reader and the one validation-error line."""

import pytest
from pydantic import BaseModel, ConfigDict, Field

from datagen.config_io import ConfigError, read_config_file, read_config_section, validate


class Small(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hops: int = Field(2, ge=1)


@pytest.mark.parametrize("name,text", [
    ("c.yaml", "hops: 3\n"), ("c.toml", "hops = 3\n"), ("c.json", '{"hops": 3}')])
def test_each_format_reads_to_a_mapping(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    assert read_config_file(path) == {"hops": 3}


@pytest.mark.parametrize("name,text,says", [
    ("missing.yaml", None, "no such file"),
    ("bad.yaml", "hops: [1\n", "not a valid config file"),
    ("bad.toml", "hops = \n", "not a valid config file"),
    ("list.yaml", "- 1\n", "expected a mapping of Small fields, got list"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path, name, text, says):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_config_file(path, "Small")
    line = str(err.value)
    assert str(path) in line and says in line and "\n" not in line


def test_an_empty_file_is_no_settings_and_a_section_is_picked(tmp_path):
    empty = tmp_path / "e.yaml"
    empty.write_text("")
    assert read_config_file(empty) == {}
    build = tmp_path / "b.yaml"
    build.write_text("seed: 1\ncompose: {hops_min: 2}\n")
    assert read_config_section(build, "compose", "ComposeConfig") == {"hops_min": 2}
    assert read_config_section(build, "band", "BandConfig") == {"seed": 1, "compose":
                                                                  {"hops_min": 2}}
    assert read_config_section(None, "band", "BandConfig") == {}


def test_a_validation_error_is_one_line_naming_each_key():
    with pytest.raises(ConfigError) as err:
        validate(Small, {"hops": 0, "hopz": 1}, "x.yaml")
    line = str(err.value)
    assert line.startswith("x.yaml: hops: ") and "hopz: unknown key" in line
    assert "\n" not in line and isinstance(err.value, ValueError)
