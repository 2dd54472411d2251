"""DeepSpeedTrainEngine on CPU (gloo): logprob alignment, a step that learns, micro-batch
invariance, export, exact save -> load, and a two-process ZeRO-2 run via the launcher."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.training.engine_helpers import ds_config, fixed_batch, free_port, nll_loss

HERE = Path(__file__).resolve().parent
ON_GPU = torch.cuda.is_available()
ATOL = 1e-4 if ON_GPU else 1e-5  # trainer on GPU vs a reference forward on CPU


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-exact on CPU; on GPU within 1e-6 unless kernels are deterministic end to end."""
    return torch.equal(a, b) if not ON_GPU else torch.allclose(a, b, rtol=0, atol=1e-6)


def _engine(model_dir, **cfg):
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine

    return DeepSpeedTrainEngine(model_dir, ds_config(**cfg))


def _params(engine) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone().float() for k, v in engine.module.state_dict().items()}


def test_forward_logprobs_follow_the_alignment_convention(tiny_model_dir):
    from training.models import load_causal_lm

    engine = _engine(tiny_model_dir)
    batch = fixed_batch()
    lp = engine.forward_logprobs(batch)
    model = load_causal_lm(tiny_model_dir).eval()
    for b in range(batch["input_ids"].shape[0]):
        n = int(batch["attention_mask"][b].sum())
        ids = batch["input_ids"][b, :n]
        with torch.no_grad():
            ref = torch.log_softmax(model(ids[None]).logits[0].float(), -1)
        expected = torch.cat([torch.zeros(1), ref[:-1].gather(-1, ids[1:, None])[:, 0]])
        assert lp[b, 0] == 0
        torch.testing.assert_close(lp[b, :n], expected, atol=ATOL, rtol=0)


def test_train_step_changes_parameters_and_lowers_the_loss(tiny_model_dir):
    engine = _engine(tiny_model_dir, zero_stage=1)
    batch = fixed_batch()
    before = _params(engine)
    losses = [engine.train_batch(batch, nll_loss)["loss"] for _ in range(3)]
    after = _params(engine)
    assert losses[2] < losses[1] < losses[0]
    assert any(not torch.equal(before[k], after[k]) for k in before)
    final = nll_loss(engine.forward_logprobs(batch), batch)[0]
    assert float(final) < losses[0]


def test_micro_batching_gives_the_same_step_as_one_big_batch(tiny_model_dir):
    batch = fixed_batch(n=6)
    one = _engine(tiny_model_dir, micro_batch_size=6)
    many = _engine(tiny_model_dir, micro_batch_size=1)
    s_one, s_many = one.train_batch(batch, nll_loss), many.train_batch(batch, nll_loss)
    assert s_one["loss"] == pytest.approx(s_many["loss"], abs=1e-5)
    p_one, p_many = _params(one), _params(many)
    # Adam's first step moves weights by ~lr = 1e-2; summation order may differ by ~1e-6.
    for k in p_one:
        torch.testing.assert_close(p_one[k], p_many[k], atol=1e-5, rtol=0)


def test_export_weights_is_an_hf_dir_with_the_trained_weights(tiny_model_dir, tmp_path):
    from training.models import load_causal_lm, load_tokenizer

    engine = _engine(tiny_model_dir)
    batch = fixed_batch()
    engine.train_batch(batch, nll_loss)
    engine.export_weights(tmp_path / "export")
    reloaded = load_causal_lm(tmp_path / "export").eval()
    load_tokenizer(tmp_path / "export")
    with torch.no_grad():
        logits = reloaded(input_ids=batch["input_ids"],
                          attention_mask=batch["attention_mask"]).logits
    from training.engines.deepspeed_engine import token_logprobs

    mask = batch["attention_mask"].bool()
    torch.testing.assert_close(token_logprobs(logits, batch["input_ids"])[mask],
                               engine.forward_logprobs(batch)[mask], atol=ATOL, rtol=0)


@pytest.mark.parametrize("stage", [0, 2])
def test_save_then_load_restores_the_exact_state(tiny_model_dir, tmp_path, stage):
    batch = fixed_batch()
    engine = _engine(tiny_model_dir, zero_stage=stage)
    engine.train_batch(batch, nll_loss)
    engine.save(tmp_path / "ckpt", {"version": 7, "cursor": {"epoch": 1, "seen": [3, 4]}})
    noise_then = torch.rand(3)
    stats_then = engine.train_batch(batch, nll_loss)
    params_then = _params(engine)

    fresh = _engine(tiny_model_dir, zero_stage=stage)
    state = fresh.load(tmp_path / "ckpt")
    assert state == {"version": 7, "cursor": {"epoch": 1, "seen": [3, 4]}}
    assert torch.equal(torch.rand(3), noise_then)  # RNG restored
    stats_now = fresh.train_batch(batch, nll_loss)
    assert stats_now["lr"] == stats_then["lr"] == 1e-2  # the constant schedule
    assert stats_now["loss"] == pytest.approx(stats_then["loss"], rel=0, abs=1e-6 if ON_GPU else 0)
    for k, v in _params(fresh).items():
        assert _same(v, params_then[k]), k  # same optimizer moments -> same step


def test_load_of_a_missing_checkpoint_says_where_it_looked(tiny_model_dir, tmp_path):
    engine = _engine(tiny_model_dir)
    with pytest.raises(FileNotFoundError, match="no DeepSpeed checkpoint"):
        engine.load(tmp_path / "nothing")


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(ON_GPU and torch.cuda.device_count() < 2, reason="needs 2 GPUs on a GPU box")
def test_two_process_zero2_step_matches_one_process(tiny_model_dir, tmp_path):
    """The `deepspeed` launcher, 2 CPU ranks, ZeRO-2: one step on the global batch gives the
    same weights as one process stepping on the same batch (token weighting across ranks).
    5 rows over 2 ranks with micro-batches of 2: rank 1 pads its second micro-batch."""
    launcher = shutil.which("deepspeed") or str(Path(sys.executable).parent / "deepspeed")
    out = tmp_path / "two_rank"
    env = {**os.environ, "PYTHONPATH": str(HERE.parent.parent)}
    cmd = [launcher, "--num_gpus", "2", "--master_port", str(free_port()),
           str(HERE / "ds_two_rank.py"), str(tiny_model_dir), str(out)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "result.json").read_text())
    assert result["world"] == 2 and result["ranks_agree"]
    assert result["loss_after"] < result["loss_before"]

    single = _engine(tiny_model_dir, zero_stage=2)
    initial = _params(single)
    single.train_batch(fixed_batch(n=5), nll_loss)
    from safetensors.torch import load_file

    two = load_file(str(out / "export" / "model.safetensors"))
    moved = 0.0
    for k, v in _params(single).items():
        torch.testing.assert_close(two[k].float(), v, atol=1e-5, rtol=0)
        moved = max(moved, float((v - initial[k]).abs().max()))
    assert moved > 1e-3  # the step really moved the weights (tolerance is 1% of it)

