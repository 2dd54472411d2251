"""Named models: a small registry of models the project knows how to obtain, pulled once
into a local Hugging Face folder (`datagen model pull|list`), and the resolver every place
that takes a model uses (a registry name, a local folder or a hub id).

The file tree is in datagen/README.md.
"""

from datagen.models.pull import (
    ChecksumMismatch, ModelError, NotPulled, PullFailed, PullResult, UnknownModel, is_pulled,
    models_dir, pull_model, registry_lines,
)
from datagen.models.registry import REGISTRY, ModelSpec, WheelFile
from datagen.models.resolve import resolve_model

__all__ = [
    "REGISTRY", "ModelSpec", "WheelFile", "pull_model", "PullResult", "resolve_model",
    "models_dir", "is_pulled", "registry_lines", "ModelError", "UnknownModel", "NotPulled", "PullFailed",
    "ChecksumMismatch",
]
