"""The config reference (docs/config.md), generated from the typed configs themselves, so the
keys, types, defaults and descriptions a user reads are the ones the code validates.

    python -m datagen.config_reference > docs/config.md

A test regenerates it and compares, so the page cannot drift from the code. Light to import
(pydantic and the config modules only).
"""

from __future__ import annotations

import sys
import types
import typing
from typing import Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

HEADER = ("# Config reference\n\n"
          "Generated from the typed configs by `python -m datagen.config_reference > "
          "docs/config.md`;\na test checks it matches the code. A YAML file only overrides "
          "these defaults; an unknown key is refused\nwith one line naming it.\n")


def type_name(annotation) -> str:
    """A field's type as a user writes it in YAML: `int`, `a | b` for a choice, `list[str]`."""
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in args)
    if origin is not None:
        inner = ", ".join(type_name(a) for a in typing.get_args(annotation))
        return f"{_plain(origin)}[{inner}]".replace("`", "")
    return _plain(annotation)


def _plain(t) -> str:
    """A class by its name (`int`, `list`); a typing construct as it prints."""
    return t.__name__ if isinstance(t, type) else str(t)


def default_text(field) -> str:
    """The default as YAML would spell it; a factory's default is built to show it."""
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    return "none" if value is None else f"`{value!r}`".replace("|", "\\|")


def section_model(annotation) -> type[BaseModel] | None:
    """The nested config a field holds, if it is a section of its own."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def key_tables(model: type[BaseModel], prefix: str = "",
           stages: dict[str, type[BaseModel]] | None = None) -> list[str]:
    """One table of `model`'s plain keys, then one section per nested config, depth first.
    `stages` maps a section to the stage config it stands for (a build's `crawl:` section
    takes CrawlConfig's fields, and its defaults are CrawlConfig's)."""
    title = prefix.rstrip(".") or "top level"
    doc = " ".join((model.__doc__ or "").split())
    lines = [f"\n### `{title}`\n", *([doc, ""] if doc else []),
             "| key | type | default | what it is |", "|---|---|---|---|"]
    nested = []
    for name, field in model.model_fields.items():
        sub = (stages or {}).get(name) or section_model(field.annotation)
        if sub is not None:
            nested.append((name, sub))
            continue
        desc = " ".join((field.description or "").split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {type_name(field.annotation)} | {default_text(field)} "
                     f"| {desc} |")
    for name, sub in nested:
        lines += key_tables(sub, f"{prefix}{name}.")
    return lines


def reference() -> str:
    """The whole page: the build config, then the training config."""
    from datagen.compose.config import ComposeConfig
    from datagen.crawl.config import CrawlConfig
    from difficulty.config import BandConfig
    from flows.config import BuildConfig
    from training.config import TrainConfig
    stages = {"crawl": CrawlConfig, "compose": ComposeConfig, "band": BandConfig}
    parts = [HEADER, "\n## `datagen build --config FILE` (`BuildConfig`, flows/config.py)\n",
             *key_tables(BuildConfig, stages=stages),
             "\n## `datagen train --config FILE` (`TrainConfig`, training/config.py)\n",
             *key_tables(TrainConfig)]
    return "\n".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(reference())
