"""`resolve_model`: what every place that takes a model does with the name it was given."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from datagen.models.pull import NotPulled, UnknownModel, get_spec, is_pulled, models_dir
from datagen.models.registry import REGISTRY


def resolve_model(name_or_path: str, *, root: Optional[Path] = None) -> str:
    """A registry name -> its pulled folder; a local folder or a hub id (`owner/name`) is
    returned as given. NotPulled says which `datagen model pull` to run; UnknownModel (a
    bare word that is none of these) lists the known names.

    >>> resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")
    'HuggingFaceTB/SmolLM2-135M-Instruct'
    """
    if name_or_path in REGISTRY:
        folder = (root or models_dir()) / name_or_path
        if not is_pulled(folder):
            raise NotPulled(f"model {name_or_path!r} is not pulled yet: run "
                            f"`datagen model pull {name_or_path}` (it would be in {folder})")
        return str(folder)
    path = Path(name_or_path).expanduser()
    if path.is_dir() or _looks_like_hub_id(name_or_path):
        return name_or_path
    if path.is_absolute() or name_or_path.startswith((".", "~")):
        raise FileNotFoundError(f"model folder {name_or_path} does not exist")
    get_spec(name_or_path)  # raises UnknownModel with the known names
    raise UnknownModel(name_or_path)  # unreachable: get_spec raised


def _looks_like_hub_id(text: str) -> bool:
    parts = text.split("/")
    return len(parts) == 2 and all(parts) and not text.startswith((".", "~", "/"))
