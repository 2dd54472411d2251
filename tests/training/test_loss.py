"""The decoupled PPO loss and GRPO advantages against hand-computed values."""

import doctest
import math

import pytest
import torch

import training.loss as L


def test_doctests():
    result = doctest.testmod(L)
    assert result.attempted >= 6 and result.failed == 0


def test_grpo_population_std():
    r = torch.tensor([[1.0, 0.0, 0.0, 0.0], [3.0, 1.0, 2.0, 2.0]])
    adv = L.grpo_advantages(r)
    # group 0: mean .25, population std sqrt(.1875) = .4330
    s0 = math.sqrt(0.1875)
    assert adv[0].tolist() == pytest.approx([0.75 / s0, -0.25 / s0, -0.25 / s0, -0.25 / s0],
                                            rel=1e-5)
    # group 1: mean 2, std sqrt(.5)
    s1 = math.sqrt(0.5)
    assert adv[1].tolist() == pytest.approx([1 / s1, -1 / s1, 0.0, 0.0], rel=1e-5)


def test_grpo_rejects_flat_input():
    with pytest.raises(ValueError, match="groups, n"):
        L.grpo_advantages(torch.tensor([1.0, 0.0]))


def _tok(*xs):
    return torch.tensor([list(xs)], dtype=torch.float32)


def test_plain_ppo_when_prox_equals_behaviour():
    # ratios e^0=1, e^0.5=1.6487 (clipped to 1.28 for A>0), e^-0.5=.6065 (clipped to .8 for A<0)
    lp = _tok(0.0, 0.5, -0.5)
    old = _tok(0.0, 0.0, 0.0)
    mask = _tok(1, 1, 1)
    adv = _tok(1.0, 1.0, -1.0)
    loss, st = L.decoupled_ppo_loss(lp, old, old, adv, mask, eps_low=0.2, eps_high=0.28)
    # token terms: -min(1,1)=-1; -min(1.6487, 1.28)=-1.28; -min(-.6065, -.8)=+.8
    assert loss.item() == pytest.approx((-1 - 1.28 + 0.8) / 3, rel=1e-5)
    assert st["clip_fraction"] == pytest.approx(2 / 3)


def test_clip_higher_is_asymmetric():
    lp, old, mask = _tok(0.25), _tok(0.0), _tok(1)
    ratio = math.exp(0.25)  # 1.284
    sym, _ = L.decoupled_ppo_loss(lp, old, old, _tok(1.0), mask, eps_low=0.2, eps_high=0.2)
    hi, _ = L.decoupled_ppo_loss(lp, old, old, _tok(1.0), mask, eps_low=0.2, eps_high=0.3)
    assert sym.item() == pytest.approx(-1.2)
    assert hi.item() == pytest.approx(-ratio, rel=1e-5)


def test_behaviour_weight_multiplies_each_token():
    lp = _tok(-1.0, -1.0)
    prox = _tok(-1.0, -1.0)
    behav = _tok(-1.5, -0.7)           # weights e^0.5, e^-0.3
    loss, st = L.decoupled_ppo_loss(lp, prox, behav, _tok(2.0, 2.0), _tok(1, 1),
                                    behav_cap=None)
    expected = -(math.exp(0.5) * 2 + math.exp(-0.3) * 2) / 2
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert st["behav_capped_fraction"] == 0.0


def test_cap_masks_tokens_but_keeps_the_denominator():
    lp = _tok(-1.0, -1.0, -1.0, 0.0)
    prox = _tok(-1.0, -1.0, -1.0, 0.0)
    behav = _tok(-4.0, -1.0, -1.0, 0.0)   # token 0 weight e^3 = 20 > cap 5
    mask = _tok(1, 1, 1, 0)               # token 3 is prompt/padding
    adv = _tok(1.0, 1.0, 1.0, 1.0)
    loss, st = L.decoupled_ppo_loss(lp, prox, behav, adv, mask, behav_cap=5.0)
    assert loss.item() == pytest.approx(-2.0 / 3.0, rel=1e-6)   # 2 kept, denominator 3
    assert st["behav_capped_fraction"] == pytest.approx(1 / 3)


def test_ratio_is_against_prox_not_behaviour():
    # θ = prox, behaviour far away: u = 1 (no clipping), only the weight moves the loss
    lp, prox, behav = _tok(-0.5), _tok(-0.5), _tok(-0.6)
    loss, st = L.decoupled_ppo_loss(lp, prox, behav, _tok(1.0), _tok(1), behav_cap=None)
    assert loss.item() == pytest.approx(-math.exp(0.1), rel=1e-6)
    assert st["clip_fraction"] == 0.0


def test_per_sequence_advantages_broadcast_and_gradient():
    lp = torch.tensor([[0.0, -1.0], [-2.0, 0.0]], requires_grad=True)
    old = lp.detach().clone()
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, _ = L.decoupled_ppo_loss(lp, old, old, torch.tensor([1.0, -1.0]), mask)
    loss.backward()
    # at u = 1 the gradient of -u*A w.r.t. logp is -A per token / 3 tokens
    assert lp.grad.flatten().tolist() == pytest.approx([-1 / 3, -1 / 3, 1 / 3, 0.0])


def test_denominator_override_for_micro_batches():
    lp, mask = _tok(0.0, 0.0), _tok(1, 1)
    loss, _ = L.decoupled_ppo_loss(lp, lp, lp, _tok(1.0, 1.0), mask, denominator=4.0)
    assert loss.item() == pytest.approx(-0.5)


def test_loss_fn_defaults_prox_to_behaviour():
    fn = L.make_ppo_loss_fn(eps_low=0.2, eps_high=0.2, behav_cap=None)
    batch = {"behav_logprobs": _tok(0.0), "advantages": torch.tensor([1.0]),
             "loss_mask": _tok(1)}
    loss, stats = fn(_tok(0.5), batch)
    assert loss.item() == pytest.approx(-1.2)
    assert stats["clip_fraction"] == 1.0


def test_prox_alpha_by_version_distance():
    """α = s / (s + j/k): 1 on the first minibatch whatever the staleness, 0 for a fresh row
    on a later one, between for a stale row on a later one."""
    from training.loss import prox_alpha

    s = torch.tensor([0.0, 1.0, 3.0])
    assert prox_alpha(s, 0.0).tolist() == [1.0, 1.0, 1.0]
    torch.testing.assert_close(prox_alpha(s, 0.5), torch.tensor([0.0, 1 / 1.5, 3 / 3.5]))


def test_loglinear_loss_on_the_first_minibatch_is_the_recomputed_loss():
    """With α = 1 π_prox is the forward's own log-probs: the loss, its gradient and its
    statistics are those of a recomputed π_prox equal to them."""
    from training.loss import prox_alpha

    g = torch.Generator().manual_seed(0)
    lp = torch.randn(3, 5, generator=g) - 2
    behav = lp.detach() + 0.3 * torch.randn(3, 5, generator=g)
    batch = {"behav_logprobs": behav, "advantages": torch.tensor([1.0, -0.5, 0.7]),
             "loss_mask": torch.ones(3, 5), "staleness": torch.tensor([0.0, 1.0, 2.0])}
    fn = L.make_ppo_loss_fn()
    a = lp.clone().requires_grad_()
    loss_a, st_a = fn(a, {**batch, "prox_alpha": prox_alpha(batch["staleness"], 0.0)})
    loss_a.backward()
    b = lp.clone().requires_grad_()
    loss_b, st_b = fn(b, {**batch, "prox_logprobs": lp.clone()})
    loss_b.backward()
    assert loss_a.item() == loss_b.item() and st_a == st_b and st_a["kl_behav_prox"] > 0
    assert torch.equal(a.grad, b.grad)
    # α = 0 (a fresh row on a later minibatch) is the behaviour policy itself
    loss_c, st_c = fn(lp.clone(), {**batch, "prox_alpha": torch.zeros(3)})
    assert st_c["behav_weight_mean"] == 1.0 and st_c["kl_behav_prox"] == 0.0
