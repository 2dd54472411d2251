"""The RL objective: decoupled PPO (AReaL, Eq. 5) and GRPO group advantages.

Plain functions over [B, T] tensors aligned as in `training/api.py` (completion tokens are
where `loss_mask` is 1). `make_ppo_loss_fn` / `sft_loss_fn` build the `loss_fn(logprobs, batch)`
callables that `TrainEngine.train_batch` receives; the engine never knows the algorithm.

Decoupled PPO, per completion token t (A = advantage):

    u_t  = exp(logp_θ - logp_prox)                      # trust-region ratio
    w_t  = exp(logp_prox - logp_behav)                  # behaviour importance weight
    l_t  = -w_t * min(u_t * A, clip(u_t, 1-ε_low, 1+ε_high) * A)
    loss = Σ_t l_t · keep_t / Σ_t loss_mask_t            # token-level mean

Tokens with w_t > cap are dropped (keep_t = 0, AReaL's default). The denominator counts
the completion tokens before the cap drops any, so dropping tokens does not inflate the
weight of the others.
With logp_prox = logp_behav (w = 1) this is exactly PPO-clip.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

__all__ = ["decoupled_ppo_loss", "grpo_advantages", "make_ppo_loss_fn", "sft_loss_fn",
           "masked_mean"]


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of x over mask = 1 (0 when the mask is empty).

    >>> masked_mean(torch.tensor([1., 2., 3.]), torch.tensor([1., 0., 1.])).item()
    2.0
    """
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def grpo_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO advantages for rewards shaped [groups, n]: (r - group mean) / (group std + eps).

    The std is the population std (divide by n). A group with all-equal rewards gets zeros.

    >>> grpo_advantages(torch.tensor([[1., 0., 0., 1.]]))
    tensor([[ 1.0000, -1.0000, -1.0000,  1.0000]])
    >>> grpo_advantages(torch.tensor([[1., 1.]]))
    tensor([[0., 0.]])
    """
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [groups, n], got shape {tuple(rewards.shape)}")
    centered = rewards - rewards.mean(dim=1, keepdim=True)
    return centered / (rewards.std(dim=1, keepdim=True, unbiased=False) + eps)


def decoupled_ppo_loss(
    logprobs: torch.Tensor,
    prox_logprobs: torch.Tensor,
    behav_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    loss_mask: torch.Tensor,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    behav_cap: float | None = 5.0,
    denominator: torch.Tensor | float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Decoupled PPO loss (see the module docstring) and its statistics.

    `advantages` is [B, T] or [B] (one per sequence, broadcast over its tokens).
    `denominator` overrides the token count (for micro-batches of a larger batch).

    Plain PPO-clip when prox = behav; a ratio above 1 + ε_high is clipped for A > 0:

    >>> lp = torch.tensor([[0.0, 0.5]]); old = torch.zeros(1, 2); m = torch.ones(1, 2)
    >>> loss, st = decoupled_ppo_loss(lp, old, old, torch.tensor([1.0]), m)
    >>> round(loss.item(), 4)   # -(1 + 1.28) / 2
    -1.14
    >>> st["clip_fraction"]
    0.5
    """
    mask = loss_mask.to(logprobs.dtype)
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logprobs)
    advantages = advantages.to(logprobs.dtype)
    n_tokens = mask.sum() if denominator is None else torch.as_tensor(denominator,
                                                                      dtype=logprobs.dtype)
    n_tokens = n_tokens.clamp(min=1.0)

    ratio = torch.exp(logprobs - prox_logprobs.detach())
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)
    surrogate = torch.minimum(ratio * advantages, clipped * advantages)
    behav_w = torch.exp(prox_logprobs - behav_logprobs).detach()
    keep = mask
    if behav_cap is not None:
        keep = mask * (~(behav_w > behav_cap)).to(mask.dtype)  # a NaN weight is kept
    per_token = -behav_w * surrogate
    loss = (per_token * keep).sum() / n_tokens
    return loss, _ppo_stats(ratio, clipped, advantages, behav_w, mask, keep)


def _ppo_stats(ratio, clipped, advantages, behav_w, mask, keep) -> dict[str, float]:
    with torch.no_grad():
        # A token is "clipped" where the clipped branch is the one in the min (no gradient).
        was_clipped = ((ratio * advantages) > (clipped * advantages)).to(mask.dtype)
        return {
            "clip_fraction": masked_mean(was_clipped, mask).item(),
            "behav_capped_fraction": (1.0 - masked_mean(keep, mask)).item()
            if mask.sum() > 0 else 0.0,
            "ratio_mean": masked_mean(ratio, mask).item(),
            "behav_weight_mean": masked_mean(behav_w, mask).item(),
            "n_tokens": float(mask.sum().item()),
        }


def make_ppo_loss_fn(eps_low: float = 0.2, eps_high: float = 0.28,
                     behav_cap: float | None = 5.0):
    """A `loss_fn(logprobs, batch)` for `TrainEngine.train_batch`.

    The batch carries `loss_mask`, `advantages`, `behav_logprobs` (from the inference engine),
    optionally `prox_logprobs` (recomputed by the trainer before the update; defaults to
    behav, i.e. plain PPO) and a per-row `denominator` (total completion tokens of the
    whole batch, so micro-batches average over the same count).
    """
    def loss_fn(logprobs: torch.Tensor, batch: Mapping[str, Any]):
        behav = batch["behav_logprobs"]
        prox = batch.get("prox_logprobs", behav)
        denom = batch.get("denominator")
        loss, stats = decoupled_ppo_loss(
            logprobs, prox, behav, batch["advantages"], batch["loss_mask"],
            eps_low=eps_low, eps_high=eps_high, behav_cap=behav_cap,
            denominator=None if denom is None else denom.reshape(-1)[0])
        return loss, stats
    return loss_fn


def sft_loss_fn(logprobs: torch.Tensor, batch: Mapping[str, Any]):
    """Supervised warm start: token-level mean negative log-likelihood of the completion.

    >>> loss, _ = sft_loss_fn(torch.tensor([[0.0, -2.0]]), {"loss_mask": torch.tensor([[0, 1]])})
    >>> loss.item()
    2.0
    """
    mask = batch["loss_mask"].to(logprobs.dtype)
    denom = batch.get("denominator")
    n = mask.sum() if denom is None else denom.reshape(-1)[0].to(logprobs.dtype)
    loss = -(logprobs * mask).sum() / n.clamp(min=1.0)
    return loss, {"nll": loss.item()}
