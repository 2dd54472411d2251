"""Helpers for the engine tests: fixed batches, a stand-in loss, DeepSpeed test configs,
a free loopback port."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nobody listens on now (for a launcher's master port or a server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ds_config(**overrides):
    from training.engines.deepspeed_engine import DeepSpeedEngineConfig

    # A large LR so one step visibly moves.
    base = dict(lr=1e-2, micro_batch_size=2)
    return DeepSpeedEngineConfig(**{**base, **overrides})


def fixed_batch(n: int = 4, seed: int = 0, vocab: int = 500):
    """A deterministic batch of ragged prompt + completion sequences."""
    import torch
    from training.engines.batching import pack_sequences

    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(3, vocab, (3 + i % 3,), generator=g).tolist() for i in range(n)]
    outputs = [torch.randint(3, vocab, (5 + 2 * i,), generator=g).tolist() for i in range(n)]
    return pack_sequences(prompts, outputs, pad_id=0)


def nll_loss(logprobs, batch):
    """Token-mean negative log-likelihood of the completion tokens (a stand-in loss)."""
    mask = batch["loss_mask"].float()
    loss = -(logprobs * mask).sum() / mask.sum()
    return loss, {"nll": float(loss.detach())}


def score(trainer, results):
    """Trainer logprobs of each result's output tokens, as lists aligned with the outputs."""
    from training.engines.batching import pack_sequences

    batch = pack_sequences([r.prompt_ids for r in results], [r.output_ids for r in results],
                           pad_id=0)
    lp = trainer.forward_logprobs(batch)
    return [lp[b][batch["loss_mask"][b].bool()].tolist() for b in range(len(results))]


def max_logprob_diff(trainer, results, version=None) -> float:
    """Max |engine logprob - trainer logprob| over output tokens (of one policy version)."""
    worst = 0.0
    for r, ref in zip(results, score(trainer, results)):
        for got, want, v in zip(r.output_logprobs, ref, r.output_versions):
            if version is None or v == version:
                worst = max(worst, abs(got - want))
    return worst


async def wait_for_tokens(engine, n: int, timeout_s: float = 60.0) -> None:
    import asyncio
    import time

    deadline = time.monotonic() + timeout_s
    while engine.tokens_generated < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"engine produced {engine.tokens_generated} < {n} tokens")
        await asyncio.sleep(0.01)
