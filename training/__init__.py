"""training stage: asynchronous RL (AReaL style) on the warehouse's train_ready questions.

Light to import: heavy libraries (torch, deepspeed, vllm) load inside the functions that use
them. See training/README.md for the file tree.
"""

from training.config import TrainConfig, load_config

__all__ = ["TrainConfig", "load_config", "run_train"]


def run_train(*args, **kwargs):
    """`training.trainer.run_train` (imported lazily: it pulls in torch)."""
    from training.trainer import run_train as _run

    return _run(*args, **kwargs)
