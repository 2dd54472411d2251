"""GGUF -> a Hugging Face folder that vLLM and the trainer load (heavy imports: torch,
transformers with gguf and accelerate).

The weights are dequantized to float32 and the embeddings untied: `lm_head.weight` is
written as a copy of the input embeddings and `tie_word_embeddings` is false, because
vLLM's in-place weight reload (`reload_weights`) works with untied embeddings only. The
outputs are unchanged by untying.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path


def gguf_to_hf(gguf_file: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    folder, name = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    if not tokenizer.chat_template:
        raise ValueError(f"{name} carries no chat template")
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32,
        quantization_config=GgufConfig(gguf_file=str(gguf_file), dequantize=True))
    untie_embeddings(model)
    with _deepspeed_left_alone():
        model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    _drop_quantization(out / "config.json")


def untie_embeddings(model) -> None:
    """Give the output layer its own copy of the input embeddings."""
    import torch

    embed = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    head.weight = torch.nn.Parameter(embed.detach().clone())
    model.config.tie_word_embeddings = False
    # probe: a multimodal HF config nests its language model's settings in text_config
    text = getattr(model.config, "text_config", None)
    if text is not None:
        text.tie_word_embeddings = False


@contextmanager
def _deepspeed_left_alone():
    """save_pretrained unwraps the model with accelerate, which imports DeepSpeed (and its
    'Setting accelerator to CPU' warning) only to test the model against DeepSpeed's engine
    class. A model loaded here was never wrapped: tell accelerate DeepSpeed is absent."""
    from accelerate.utils import other

    found = other.is_deepspeed_available
    other.is_deepspeed_available = lambda: False
    try:
        yield
    finally:
        other.is_deepspeed_available = found


def _drop_quantization(config_file: Path) -> None:
    """The weights are plain float32 now: a `quantization_config` left in config.json would
    make loaders look for GGUF blocks."""
    config = json.loads(config_file.read_text())
    if config.pop("quantization_config", None) is not None:
        config_file.write_text(json.dumps(config, indent=2) + "\n")
