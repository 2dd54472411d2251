"""DeepSpeedTrainEngine: `training.api.TrainEngine` on DeepSpeed (ZeRO 0-3, fp32/bf16).

The same code runs as one CPU process (gloo), under the `deepspeed` launcher with several
processes, and on GPUs (nccl). `precision: bf16` is DeepSpeed's bf16 on GPUs; on a CPU it is
autocast (`torch.autocast("cpu", bfloat16)` around the forward passes, fp32 weights and
optimizer; half the step time on an AMX CPU), or fp32 with a warning on a CPU without bf16. DeepSpeed reads its rendezvous (`LAUNCHER_VARS`) from the
environment even for one process; the launchers set it, and a program that runs alone sets
`lone_process_env()` at its entry point (`datagen train` does): this module never writes
`os.environ`. A one-rank world whose port another process took since the entry point chose
it (a server started in between) rendezvouses on a free port instead (`tcp://`).
Every rank is handed the same global batch: `forward_logprobs` runs on all of it (ZeRO-3
needs every rank in every forward), `train_batch` takes rows `rank::world` and splits them
into micro-batches of `micro_batch_size`. Gradient accumulation is unmanaged (DeepSpeed's
`managed_gradient_accumulation: false`): any number of micro-batches per step, one
optimizer step per `train_batch`. Each micro-batch loss is weighted by its share of the
global completion tokens, so token-level averaging holds across micro-batches and ranks.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import socket
from pathlib import Path
from typing import Any, Mapping

from training.api import LossFn, TensorBatch
from training.config import EngineConfig as DeepSpeedEngineConfig
from training.engines.batching import slice_batch

logger = logging.getLogger(__name__)
_CKPT_TAG = "state"


__all__ = ["DeepSpeedEngineConfig", "DeepSpeedTrainEngine", "cpu_bf16_supported",
           "init_distributed", "lone_process_env", "token_logprobs"]

GRAD_CLIP = 1.0   # global gradient-norm clip of every step
LAUNCHER_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lone_process_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The rendezvous variables `environ` (default: this process's) lacks, for a 1-rank world
    on a free loopback port. For an entry point to set: `os.environ.update(lone_process_env())`.
    Empty under `deepspeed`/`torchrun`, which set them all for each rank."""
    environ = os.environ if environ is None else environ
    defaults = {"MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    missing = {k: v for k, v in defaults.items() if k not in environ}
    if "MASTER_PORT" not in environ:
        missing["MASTER_PORT"] = str(_free_port())
    return missing


def init_distributed() -> None:
    """Initialise torch.distributed for DeepSpeed, from the launcher's variables."""
    import torch
    import deepspeed

    # DeepSpeed's CPU comm op is a 30-55 s JIT on first use that no run (one process or
    # several on gloo) needs. Through importlib: `import deepspeed.comm.torch` is torch's.
    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None
    if torch.distributed.is_initialized():
        return
    missing = [k for k in LAUNCHER_VARS if k not in os.environ]
    if missing:  # else DeepSpeed looks for MPI (`No module named 'mpi4py'`)
        raise RuntimeError(
            f"DeepSpeed needs {', '.join(missing)} in the environment: run under `deepspeed` "
            "or `torchrun`, or, for one process, set them where the program starts: "
            "os.environ.update(training.engines.deepspeed_engine.lone_process_env())")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    moved = {}
    if os.environ["WORLD_SIZE"] == "1" and _port_taken(addr, port):
        free = _free_port()
        logger.warning("rendezvous port %s is taken by another process; using %s", port, free)
        moved = {"init_method": f"tcp://{addr}:{free}", "rank": 0, "world_size": 1}
    deepspeed.init_distributed(dist_backend=backend, **moved)


def _port_taken(addr: str, port: int) -> bool:
    """Whether another socket listens on `addr:port` (the one rank's store would fail to
    bind it: EADDRINUSE)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
        except OSError:
            return True
    return False


def cpu_bf16_supported() -> bool:
    """Whether this CPU runs bf16 matmuls natively (AVX-512 BF16 or AMX), as oneDNN says."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # probe: torch builds without oneDNN lack the op
        return False


def token_logprobs(logits, input_ids, temperature=1.0):
    """[B, T] logprobs of `input_ids` under `logits` (position 0 is 0), float32; `temperature`
    a float or one per sequence ([B])."""
    import torch

    if torch.is_tensor(temperature):
        temperature = temperature.to(logits.device, torch.float32).view(-1, 1, 1)
    logits = logits[:, :-1].float() / temperature
    targets = input_ids[:, 1:]
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    lp = picked - torch.logsumexp(logits, dim=-1)
    return torch.nn.functional.pad(lp, (1, 0), value=0.0)


class DeepSpeedTrainEngine:
    def __init__(self, model_path: str | Path, config: DeepSpeedEngineConfig | None = None,
                 temperature: float = 1.0):
        """`temperature`: the rollouts' sampling temperature, so that the trainer's logprobs
        are those of the distribution that sampled."""
        import torch
        import deepspeed
        from training.models import load_causal_lm, load_tokenizer

        self.config = config or DeepSpeedEngineConfig()
        self.temperature = temperature
        self.model_path = Path(model_path)
        init_distributed()
        self._autocast = self.config.precision == "bf16" and not torch.cuda.is_available()
        if self._autocast and not cpu_bf16_supported():
            logger.warning("engine.precision bf16: this CPU has no bf16 support; training in fp32")
            self._autocast = False
        self.rank = torch.distributed.get_rank()
        self.world = torch.distributed.get_world_size()
        self.tokenizer = load_tokenizer(model_path)
        model = load_causal_lm(model_path, "float32")
        optimizer = torch.optim.AdamW(model.parameters(), lr=self.config.lr, weight_decay=0.0)
        # A constant schedule: its step puts the base lr back after a `set_lr` override.
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
        self.engine, _, _, self.scheduler = deepspeed.initialize(
            model=model, optimizer=optimizer, lr_scheduler=scheduler,
            config=self._ds_config())
        self.device = self.engine.device
        self._lr_override: float | None = None

    def set_lr(self, lr: float | None) -> None:
        """Use `lr` for the following optimizer steps (None: the schedule's again)."""
        self._lr_override = lr

    def _ds_config(self) -> dict:
        import torch

        c = self.config
        ds = {
            "train_micro_batch_size_per_gpu": c.micro_batch_size,
            "gradient_accumulation_steps": 1,
            "managed_gradient_accumulation": False,
            "gradient_clipping": GRAD_CLIP,
            "zero_optimization": {"stage": c.zero_stage},
            "zero_allow_untested_optimizer": True,
            "bf16": {"enabled": c.precision == "bf16" and torch.cuda.is_available()},
            "steps_per_print": 10**9,
            "wall_clock_breakdown": False,
        }
        return ds

    @property
    def module(self):
        return self.engine.module

    def _to_device(self, batch: TensorBatch) -> dict:
        import torch

        return {k: v.to(self.device) if isinstance(v, torch.Tensor) else v
                for k, v in batch.items()}

    def _logprobs(self, batch: dict):
        import contextlib

        import torch

        cast = (torch.autocast("cpu", dtype=torch.bfloat16) if self._autocast
                else contextlib.nullcontext())
        with cast:   # the backward runs outside, as autocast wants
            out = self.engine(input_ids=batch["input_ids"],
                              attention_mask=batch["attention_mask"], use_cache=False)
        return token_logprobs(out.logits, batch["input_ids"],
                              batch.get("temperature", self.temperature))

    def forward_logprobs(self, batch: TensorBatch):
        """[B, T] float32 logprobs of the whole batch, no grad, on CPU."""
        import torch

        batch = self._to_device(batch)
        self.engine.eval()
        parts = []
        with torch.no_grad():
            for start in range(0, batch["input_ids"].shape[0], self.config.micro_batch_size):
                mb = slice_batch(batch, slice(start, start + self.config.micro_batch_size))
                parts.append(self._logprobs(mb).cpu())
        return torch.cat(parts)

    def train_batch(self, batch: TensorBatch, loss_fn: LossFn) -> dict[str, float]:
        """One optimizer step on the global `batch`; returns the token-weighted stats."""
        import torch

        n_rows = batch["input_ids"].shape[0]
        if n_rows < self.world:
            raise ValueError(f"a batch of {n_rows} sequences cannot feed {self.world} ranks: "
                             "make the batch at least as large as the world size")
        total_tokens = float(batch["loss_mask"].sum())
        if total_tokens == 0:  # Adam would still move the weights on its momentum
            raise ValueError("batch has no completion tokens (loss_mask is all zero)")
        local = self._to_device(slice_batch(batch, slice(self.rank, None, self.world)))
        self.engine.train()
        stats: dict[str, float] = {}
        mbs = self.config.micro_batch_size
        # Every rank runs the same number of micro-batches (ZeRO's per-backward collectives
        # must line up); a rank with fewer rows repeats one with zero weight.
        rows_per_rank = math.ceil(n_rows / self.world)  # the most that any rank holds
        n_micro = math.ceil(rows_per_rank / mbs)
        for i in range(n_micro):
            mb = slice_batch(local, slice(i * mbs, (i + 1) * mbs))
            real = mb["input_ids"].shape[0] > 0
            mb = mb if real else slice_batch(local, slice(0, 1))
            n_tokens = float(mb["loss_mask"].sum()) if real else 0.0
            logprobs = self._logprobs(mb)
            if n_tokens == 0:  # nothing to learn; a loss_fn might divide by zero here
                self.engine.backward(logprobs.sum() * 0.0, scale_wrt_gas=False)
                continue
            share = n_tokens / total_tokens
            loss, mb_stats = loss_fn(logprobs, mb)
            # The gradient all-reduce averages over ranks; `world` undoes that average.
            self.engine.backward(loss * share * self.world, scale_wrt_gas=False)
            for k, v in {"loss": float(loss.detach()), **mb_stats}.items():
                stats[k] = stats.get(k, 0.0) + float(v) * share
        if self._lr_override is not None:  # the scheduler's step after this one resets it
            for group in self.engine.optimizer.param_groups:
                group["lr"] = self._lr_override
        self.engine.step()
        stats = self._all_reduce_sum(stats)
        grad_norm = self.engine.get_global_grad_norm()
        if grad_norm is not None:  # DeepSpeed reports it only where it clips (ZeRO >= 1)
            stats["grad_norm"] = float(grad_norm)
        stats["lr"] = (self._lr_override if self._lr_override is not None
                       else float(self.scheduler.get_last_lr()[0]))
        stats["n_tokens"] = total_tokens
        return stats

    def _all_reduce_sum(self, stats: dict[str, float]) -> dict[str, float]:
        import torch

        if self.world == 1 or not stats:
            return stats
        keys = sorted(stats)
        t = torch.tensor([stats[k] for k in keys], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return dict(zip(keys, t.tolist()))

    def export_weights(self, path: str | Path) -> None:
        """Write an HF model dir (safetensors + config + tokenizer) that vLLM can load."""
        from training.engines.checkpoint import export_hf

        export_hf(self, Path(path))

    def save(self, path: str | Path, trainer_state: dict[str, Any]) -> None:
        from training.engines.checkpoint import save_engine

        save_engine(self, Path(path), trainer_state)

    def load(self, path: str | Path) -> dict[str, Any]:
        from training.engines.checkpoint import load_engine

        return load_engine(self, Path(path))
