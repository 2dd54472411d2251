"""The shared engine loop and batch packing: the cheap edge cases (no vLLM needed)."""

from __future__ import annotations

import asyncio

import pytest

from training.api import GenerationRequest
from training.engines.base import InterruptibleEngine, Segment


def test_a_wrong_checkpoint_path_fails_before_pausing(hf_engine, tmp_path):
    with pytest.raises(FileNotFoundError, match="safetensors"):
        asyncio.run(hf_engine.update_weights(5, str(tmp_path)))
    assert hf_engine.version == 0
    [result] = hf_engine.generate([GenerationRequest(prompt_ids=[1, 2], max_new_tokens=4)])
    assert len(result.output_ids) == 4 and result.output_versions == [0] * 4


def test_stop_tokens_end_a_generation(hf_engine):
    every_token = tuple(range(hf_engine.model.config.vocab_size))
    [result] = hf_engine.generate([GenerationRequest(prompt_ids=[1, 2], max_new_tokens=9,
                                                     stop_token_ids=every_token)])
    assert result.finish_reason == "stop" and len(result.output_ids) == 1


def test_seeded_requests_repeat(hf_engine):
    req = GenerationRequest(prompt_ids=[1, 2, 3], max_new_tokens=12, seed=11)
    first, second = hf_engine.generate([req, req])
    assert first.output_ids == second.output_ids
    # The random model is near uniform over ~500 tokens: plain temperature sampling, no
    # nucleus filter (top_p was a dead knob), so sampled logprobs stay about log(1/500).
    assert max(first.output_logprobs) < -5.0


class _LosingBackend(InterruptibleEngine):
    """A test double: a backend that ends a request without a finish reason or a pause."""

    async def _run_segment(self, token_ids, max_new_tokens, request, attempt):
        return Segment(ids=[7], logprobs=[-1.0])

    async def _abort_all(self):
        pass


def test_a_request_lost_by_the_backend_raises_instead_of_looping():
    engine = _LosingBackend()
    try:
        with pytest.raises(RuntimeError, match="without a finish reason"):
            engine.generate([GenerationRequest(prompt_ids=[1], max_new_tokens=5)])
    finally:
        engine.close()


def test_vllm_weight_version_spans_become_per_token_versions():
    from types import SimpleNamespace as Span

    from training.engines.vllm_engine import _span_versions

    spans = [Span(version="3", start=0, end=2), Span(version="4", start=2, end=5)]
    assert _span_versions(spans, 5) == [3, 3, 4, 4, 4]
    assert _span_versions(spans, 6) is None  # inconsistent: fall back to the segment's version
    assert _span_versions(None, 2) is None


def test_pack_sequences_checks_per_token_values():
    from training.engines.batching import pack_sequences

    with pytest.raises(ValueError, match="2 values for 3 tokens"):
        pack_sequences([[1]], [[2, 3, 4]], pad_id=0, token_values={"lp": [[0.1, 0.2]]})
    batch = pack_sequences([[1]], [[2, 3]], pad_id=0, pad_to_multiple_of=4,
                           seq_values={"reward": [1.5]})
    assert batch["input_ids"].shape == (1, 4) and batch["reward"].tolist() == [1.5]


def test_our_safetensors_writer_matches_the_reference_reader(tmp_path):
    import torch
    from safetensors import safe_open

    from training.engines.checkpoint import write_safetensors

    tensors = {"a": torch.randn(3, 5), "b": torch.randn(4).to(torch.bfloat16),
               "scalar": torch.tensor(2.5), "t": torch.randn(6, 2).t()}  # non-contiguous
    write_safetensors(tensors, tmp_path / "x.safetensors")
    with safe_open(str(tmp_path / "x.safetensors"), framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        for name, t in tensors.items():
            assert torch.equal(f.get_tensor(name), t), name


def test_per_sequence_temperatures_give_each_row_its_own_logprobs():
    """A hotter replay trains at the temperature that sampled it: a [B] temperature gives
    row b the logprobs of the float temperature[b]."""
    import torch

    from training.engines.deepspeed_engine import token_logprobs

    logits, ids = torch.randn(2, 5, 11), torch.randint(0, 11, (2, 5))
    both = token_logprobs(logits, ids, torch.tensor([1.3, 3.0]))
    assert torch.allclose(both[0], token_logprobs(logits[:1], ids[:1], 1.3)[0])
    assert torch.allclose(both[1], token_logprobs(logits[1:], ids[1:], 3.0)[0])
    assert not torch.allclose(both[1], token_logprobs(logits[1:], ids[1:], 1.3)[0])
