"""`engine.precision: bf16` on a CPU: autocast around the forward passes, fp32 weights and
optimizer (the real-model recipe trains SmolLM2 so); the logprobs stay close to fp32's."""

from __future__ import annotations

import pytest

from tests.training.engine_helpers import ds_config, fixed_batch, nll_loss


def test_bf16_autocast_trains_fp32_weights_close_to_fp32(tiny_model_dir):
    import torch

    from training.engines.deepspeed_engine import DeepSpeedTrainEngine, cpu_bf16_supported

    if torch.cuda.is_available() or not cpu_bf16_supported():
        pytest.skip("autocast is the CPU path of precision bf16 (this CPU lacks bf16)")
    fp32 = DeepSpeedTrainEngine(tiny_model_dir, ds_config())
    bf16 = DeepSpeedTrainEngine(tiny_model_dir, ds_config(precision="bf16"))
    batch = fixed_batch()
    ref, got = fp32.forward_logprobs(batch), bf16.forward_logprobs(batch)
    mask = batch["loss_mask"].bool()
    assert got.dtype == torch.float32 and not torch.equal(got, ref)   # bf16 matmuls ran
    assert (got - ref)[mask].abs().max() < 0.1
    before = [p.detach().clone() for p in bf16.module.parameters()]
    stats = bf16.train_batch(batch, nll_loss)
    assert stats["nll"] > 0
    after = list(bf16.module.parameters())
    assert all(p.dtype == torch.float32 for p in after)
    assert any(not torch.equal(a, b) for a, b in zip(after, before))
