"""Config files and config mistakes, one implementation for every entry point.

`read_config_file` turns a YAML, TOML or JSON file into a mapping, and every way that can go
wrong into one `ConfigError` that names the file. `validate` builds a pydantic config and turns
its `ValidationError` into one `ConfigError` line that names each key and what is wrong with it
(`problem_line`). `ConfigError` is a `ValueError`, so callers that refuse bad values keep
catching what they caught; the CLI prints it as one line, with no traceback.

Kept light: pydantic, yaml and tomllib are imported where they are used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound="BaseModel")

UNKNOWN_KEY = "unknown key (check its spelling, or remove it)"


class ConfigError(ValueError):
    """A config the user can fix: the message is one line that says where and what."""


def read_config_file(path: Path | str, what: str = "config") -> dict[str, Any]:
    """The mapping in a YAML (default), TOML (`.toml`) or JSON (`.json`) file; an empty file
    is {}. `what` names the expected fields in the error ('BuildConfig')."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path}: no such file")
    try:
        data = _parse(path.read_text(encoding="utf-8"), path.suffix.lower())
    except ValueError as exc:  # yaml, toml and json parse errors are all ValueErrors here
        raise ConfigError(f"{path}: not a valid config file: {_first_line(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of {what} fields, got "
                          f"{type(data).__name__}")
    return data


def _parse(text: str, suffix: str) -> object:
    """Parse errors come back as ValueError (yaml's own error class is re-raised as one)."""
    if suffix == ".json":
        return json.loads(text)
    if suffix == ".toml":
        import tomllib
        return tomllib.loads(text)
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None


def validate(config_cls: type[M], data: Mapping[str, Any], source: str = "config") -> M:
    """`config_cls` validated from `data`; a mistake becomes one `ConfigError` line starting
    with `source` (the file, or what the settings are: 'compose settings')."""
    from pydantic import ValidationError
    try:
        return config_cls.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigError(problem_line(exc, source)) from None


def problem_line(exc: "ValidationError", source: str = "config",
                 prefix: tuple[str, ...] = ()) -> str:
    """'SOURCE: key.path: message; ...', one entry per problem. `prefix` is put before each
    key (the section of a larger file the config came from)."""
    return f"{source}: " + "; ".join(problems(exc, prefix))


def problems(exc: "ValidationError", prefix: tuple[str, ...] = ()) -> list[str]:
    """Each problem as 'key.path: message'. A validator's message that already starts with
    its key is kept as it is; an unknown key says so."""
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in (*prefix, *err["loc"]))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = UNKNOWN_KEY
        out.append(f"{where}: {msg}" if where and not msg.startswith(where) else msg)
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def read_config_section(path: Path | None, section: str, what: str) -> dict[str, Any]:
    """A stage's settings from a config file: its `section:` part when the file has one (a
    build file), else the whole mapping; {} for no file. `what` names the config class."""
    if path is None:
        return {}
    data = read_config_file(path, what)
    part = data.get(section, data)
    if not isinstance(part, dict):
        raise ConfigError(f"{path}: `{section}:` must be a mapping of {what} fields")
    return dict(part)
