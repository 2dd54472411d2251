"""Weight export and full-state checkpoints for DeepSpeedTrainEngine.

Export writes an HF directory (safetensors, config, tokenizer) from rank 0, gathering
ZeRO-3 partitions first. Save/load use DeepSpeed's own checkpoints (model, optimizer,
scheduler, per-rank ZeRO partitions) plus a per-rank RNG file and the opaque trainer
state (policy version, data cursor...) as JSON.
"""

from __future__ import annotations

import json
import logging
import random
from contextlib import nullcontext
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)
_TAG = "state"


def _gathered(engine):
    """A context in which `module.state_dict()` holds full tensors, whatever the ZeRO stage."""
    import deepspeed

    if engine.config.zero_stage == 3:
        return deepspeed.zero.GatheredParameters(list(engine.module.parameters()),
                                                 modifier_rank=None)
    return nullcontext()


def export_hf(engine, path: Path) -> None:
    """One `model.safetensors` + config + tokenizer: no sharding or conversion pass, and no
    copy of tensors already on CPU in the export dtype (ZeRO-3 copies, since its gathered
    tensors are freed on leaving the context)."""
    import torch

    dtype = torch.float32   # what vLLM on CPU runs (bf16 dies with SIGILL there)
    state = None
    with _gathered(engine):
        if engine.rank == 0:
            state = {k: v.detach().to("cpu", dtype) for k, v in engine.module.state_dict().items()}
            if engine.config.zero_stage == 3:
                state = {k: v.clone() for k, v in state.items()}
    if engine.rank == 0:
        path.mkdir(parents=True, exist_ok=True)
        tmp = path / "model.safetensors.tmp"
        write_safetensors(state, tmp)
        tmp.replace(path / "model.safetensors")  # a reader never sees half a file
        config = engine.module.config.to_dict()
        config["torch_dtype"] = config["dtype"] = "float32"
        (path / "config.json").write_text(json.dumps(config, indent=2, default=str))
        engine.module.generation_config.save_pretrained(path)
        engine.tokenizer.save_pretrained(path)
    _barrier(engine)


_ST_DTYPES = {"float32": "F32", "bfloat16": "BF16", "float16": "F16", "int64": "I64",
              "int32": "I32", "uint8": "U8", "bool": "BOOL"}


def write_safetensors(tensors: dict, path: Path) -> None:
    """The safetensors format written from the tensors' own memory.

    `safetensors.torch.save_file` first copies every tensor into a bytes object: for a
    0.5B-parameter fp32 model that made the export 2-3x slower (7.6-15 s vs 4.2-4.5 s
    to tmpfs here). The file is the standard one (8-byte header length, JSON header
    padded to 8 bytes, raw little-endian data) and loads with `safetensors.safe_open`.
    """
    import struct

    import torch

    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        header[name] = {"dtype": _ST_DTYPES[str(t.dtype).removeprefix("torch.")],
                        "shape": list(t.shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for t in tensors.values():
            f.write(t.contiguous().reshape(-1).view(torch.uint8).numpy().data)


def _barrier(engine) -> None:
    import torch

    if engine.world > 1:
        torch.distributed.barrier()


def rng_state() -> dict:
    import numpy as np
    import torch

    state = {"python": random.getstate(), "numpy": np.random.get_state(),
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    import numpy as np
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_engine(engine, path: Path, trainer_state: dict[str, Any]) -> None:
    import torch

    path.mkdir(parents=True, exist_ok=True)
    engine.engine.save_checkpoint(str(path), tag=_TAG,
                                  client_state={"trainer_state": trainer_state})
    torch.save(rng_state(), path / f"rng_rank{engine.rank}.pt")
    if engine.rank == 0:
        # Readable copy; the authoritative one travels inside DeepSpeed's checkpoint.
        (path / "trainer_state.json").write_text(json.dumps(trainer_state, indent=2, default=str))
    _barrier(engine)
    logger.info("saved engine state to %s", path)


def load_engine(engine, path: Path) -> dict[str, Any]:
    import torch

    if not (path / _TAG).is_dir():
        raise FileNotFoundError(f"no DeepSpeed checkpoint under {path} (expected {path / _TAG})")
    load_path, client_state = engine.engine.load_checkpoint(
        str(path), tag=_TAG, load_optimizer_states=True, load_lr_scheduler_states=True)
    if load_path is None:
        raise RuntimeError(f"DeepSpeed could not load the checkpoint in {path}")
    rng_file = path / f"rng_rank{engine.rank}.pt"
    if rng_file.exists():
        set_rng_state(torch.load(rng_file, weights_only=False))
    else:
        logger.warning("%s missing (different world size?): RNG state not restored", rng_file)
    return dict(client_state.get("trainer_state", {}))
