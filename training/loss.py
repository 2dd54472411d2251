"""The RL objective: decoupled PPO (AReaL, Eq. 5), GRPO group advantages, the step's update.

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

log π_prox is the log-prob under the weights before the step's update (version V). The
trainer recomputes it with a forward pass (`loss.prox_logp: recompute`), or approximates it
without one (`loglinear`, AReaL's `prox_logp_method: loglinear`): by the version distance,

    α = (v_prox - v_behav) / (v_θ - v_behav)
    log π_prox ≈ log π_behav + α · (log π_θ - log π_behav)

with log π_θ the training forward's own log-probs (detached), v_prox = V, v_behav = V - s for
a row of staleness s (its group's start version: later turns of a long episode may be newer)
and v_θ = V + j/k on minibatch j of the step's k (θ has taken j of its k optimizer steps).
So on the first minibatch α = 1 and the value is exact (θ is π_prox: with
`ppo_minibatches: 1` the forward pass is saved at no error at all), and a fresh row (s = 0)
on a later minibatch gets α = 0, its behaviour log-probs (π_prox's, up to the inference
engine's numerics). AReaL labels θ a whole version ahead of π_prox (v_θ = V, v_prox = V - 1,
α clamped to [0, 1], 0 where v_θ = v_behav), which makes a row one version stale take
π_behav; here it takes π_θ, which is π_prox's exact value when j = 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import torch

if TYPE_CHECKING:
    from training.config import LossConfig

__all__ = ["decoupled_ppo_loss", "grpo_advantages", "make_ppo_loss_fn", "sft_loss_fn",
           "masked_mean", "prox_alpha", "loglinear_prox", "ppo_update"]


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


def prox_alpha(staleness: torch.Tensor, progress: float) -> torch.Tensor:
    """α per row ([B]) of the log-linear π_prox (module docstring): s / (s + progress), where
    `progress` = j/k is the share of the step's optimizer steps θ has taken; 1 where
    s + progress = 0 (θ is π_prox then).

    >>> prox_alpha(torch.tensor([0., 1., 2.]), 0.0).tolist()
    [1.0, 1.0, 1.0]
    >>> [round(a, 3) for a in prox_alpha(torch.tensor([0., 1., 2.]), 0.5).tolist()]
    [0.0, 0.667, 0.8]
    """
    s = staleness.to(torch.float32)
    total = s + progress
    return torch.where(total > 0, s / total.clamp(min=1e-12), torch.ones_like(s))


def loglinear_prox(logprobs: torch.Tensor, behav_logprobs: torch.Tensor,
                   alpha: torch.Tensor) -> torch.Tensor:
    """log π_prox ≈ log π_behav + α · (log π_θ - log π_behav), α one per row; no gradient.

    >>> loglinear_prox(torch.tensor([[-1.0]]), torch.tensor([[-3.0]]), torch.tensor([0.5]))
    tensor([[-2.]])
    """
    return behav_logprobs + alpha[:, None] * (logprobs.detach() - behav_logprobs)


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
    stats = _ppo_stats(ratio, clipped, advantages, behav_w, mask, keep)
    stats["kl_behav_prox"] = _kl(behav_logprobs - prox_logprobs.detach(), mask)
    return loss, stats


def _kl(d: torch.Tensor, mask: torch.Tensor) -> float:
    """KL(π_behav || π_prox) estimated (k3) from d = log π_behav - log π_prox on the masked
    tokens; only those are read, so a prompt position's large d never turns into a NaN."""
    d = d.detach()[mask.bool()]
    return float((d.exp() - 1 - d).mean()) if d.numel() else 0.0


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
    optionally `prox_logprobs` (recomputed by the trainer before the update) or else
    `prox_alpha` (per row: log π_prox is then `loglinear_prox`; with neither, π_prox = π_behav,
    i.e. plain PPO) and a per-row `denominator` (total completion tokens of the whole batch,
    so micro-batches average over the same count).
    """
    def loss_fn(logprobs: torch.Tensor, batch: Mapping[str, Any]):
        behav = batch["behav_logprobs"]
        prox = batch.get("prox_logprobs")
        if prox is None:
            alpha = batch.get("prox_alpha")
            prox = behav if alpha is None else loglinear_prox(logprobs, behav, alpha)
        denom = batch.get("denominator")
        loss, stats = decoupled_ppo_loss(
            logprobs, prox, behav, batch["advantages"], batch["loss_mask"],
            eps_low=eps_low, eps_high=eps_high, behav_cap=behav_cap,
            denominator=None if denom is None else denom.reshape(-1)[0])
        return loss, stats
    return loss_fn


def ppo_update(engine, tensors: dict, loss_fn, loss: "LossConfig", seed: int) -> dict[str, float]:
    """The step's decoupled-PPO update on `engine`: one optimizer step per minibatch of rows
    (`loss.ppo_minibatches`, shuffled by `seed`); the minibatches' mean stats. π_prox is
    `tensors["prox_logprobs"]` (recompute), or with `loss.prox_logp: loglinear` the
    approximation with each minibatch's α (module docstring), which needs no forward pass."""
    from training.engines.batching import slice_batch

    k = min(loss.ppo_minibatches, tensors["input_ids"].shape[0])
    order = torch.randperm(tensors["input_ids"].shape[0],
                           generator=torch.Generator().manual_seed(seed))
    totals: dict[str, float] = {}
    for j, part in enumerate(order.chunk(k)):
        rows = slice_batch(tensors, part)
        if loss.prox_logp == "loglinear":
            rows["prox_alpha"] = prox_alpha(rows["staleness"], j / k)
        for key, v in engine.train_batch(rows, loss_fn).items():
            totals[key] = totals.get(key, 0.0) + float(v) / k
    return totals


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
