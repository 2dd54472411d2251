"""Tiny local models: tokenizer, chat template, a config vLLM accepts, caching."""

from __future__ import annotations

import json

import pytest


def test_tokenizer_round_trips_text_and_has_chatml(tiny_model_dir):
    from training.models import load_tokenizer

    tok = load_tokenizer(tiny_model_dir)
    text = "Who founded the museum in 1934? Über café 北京"
    assert tok.decode(tok.encode(text)) == text  # byte-level: any text survives
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}],
                                     add_generation_prompt=True, tokenize=False)
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tok.eos_token == "<|im_end|>" and tok.pad_token_id != tok.eos_token_id


def test_model_config_is_loadable_by_vllm_shape_rules(tiny_model_dir):
    from training.models import load_causal_lm

    cfg = json.loads((tiny_model_dir / "config.json").read_text())
    assert cfg["hidden_size"] // cfg["num_attention_heads"] >= 32
    assert cfg["tie_word_embeddings"] is False
    model = load_causal_lm(tiny_model_dir)
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()


def test_build_reuses_cache_and_rebuilds_on_other_sizes(tmp_path):
    from training.models import build_tiny_model

    out = build_tiny_model(tmp_path / "m", layers=1)
    stamp = (out / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_model(out, layers=1) == out
    assert (out / "model.safetensors").stat().st_mtime_ns == stamp
    build_tiny_model(out, layers=2)
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 2


def test_head_dim_below_32_is_refused():
    from training.models import tiny_qwen2_config

    with pytest.raises(ValueError, match="head_dim"):
        tiny_qwen2_config(512, hidden=128, heads=8)
