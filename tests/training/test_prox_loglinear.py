"""`loss.prox_logp: loglinear` against the recomputed π_prox through the real DeepSpeed engine
on a tiny model: equal where the approximation must be exact (module docstring of
training/loss.py): every row on the first minibatch (any staleness), a fresh row on a later
one; after the step the weights are the same as with the forward pass."""

from __future__ import annotations

import pytest
import torch

from tests.training.engine_helpers import ds_config, fixed_batch
from training.config import LossConfig
from training.loss import make_ppo_loss_fn, ppo_update


def _engine(model_dir):
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine

    return DeepSpeedTrainEngine(model_dir, ds_config(micro_batch_size=2))


def _batch(engine, staleness, shift):
    """A batch whose behaviour log-probs are the engine's own, shifted by `shift` on the rows
    of staleness > 0 (an older policy sampled them)."""
    batch = fixed_batch(n=len(staleness))
    behav = engine.forward_logprobs(batch)
    stale = torch.tensor(staleness, dtype=torch.float32)
    behav = (behav + shift * (stale > 0).float()[:, None]) * batch["loss_mask"]
    return {**batch, "behav_logprobs": behav, "staleness": stale,
            "advantages": torch.tensor([1.0, -1.0, 0.5, -0.5][:len(staleness)])}


def _params(engine):
    return {k: v.detach().clone() for k, v in engine.module.state_dict().items()}


def _step(engine, batch, prox_logp, minibatches):
    loss = LossConfig(prox_logp=prox_logp, ppo_minibatches=minibatches)
    if prox_logp == "recompute":
        batch = {**batch, "prox_logprobs": engine.forward_logprobs(batch)}
    return ppo_update(engine, batch, make_ppo_loss_fn(), loss, seed=0)


@pytest.mark.parametrize("staleness,minibatches", [([1, 1, 2, 1], 1), ([0, 0, 0, 0], 2)],
                         ids=["stale-rows-one-minibatch", "fresh-rows-two-minibatches"])
def test_loglinear_equals_recompute_where_it_must(tiny_model_dir, staleness, minibatches):
    exact, approx = _engine(tiny_model_dir), _engine(tiny_model_dir)
    batch = _batch(exact, staleness, shift=-0.3)
    stats_exact = _step(exact, batch, "recompute", minibatches)
    stats_approx = _step(approx, batch, "loglinear", minibatches)
    for key in ("loss", "kl_behav_prox", "behav_weight_mean", "ratio_mean"):
        assert stats_approx[key] == pytest.approx(stats_exact[key], abs=1e-6), key
    if any(staleness):
        assert stats_exact["kl_behav_prox"] > 1e-3      # the stale rows' weights matter here
    after_exact, after_approx = _params(exact), _params(approx)
    for k in after_exact:
        torch.testing.assert_close(after_approx[k], after_exact[k], atol=1e-6, rtol=0)


def test_loglinear_differs_for_stale_rows_after_the_first_minibatch(tiny_model_dir):
    """The one case it approximates: θ has moved and the rows are stale."""
    exact, approx = _engine(tiny_model_dir), _engine(tiny_model_dir)
    batch = _batch(exact, [1, 1, 1, 1], shift=-0.3)
    stats_exact = _step(exact, batch, "recompute", 2)
    stats_approx = _step(approx, batch, "loglinear", 2)
    assert stats_approx["kl_behav_prox"] != pytest.approx(stats_exact["kl_behav_prox"],
                                                          abs=1e-7)
