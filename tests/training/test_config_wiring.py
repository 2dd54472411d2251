"""Config keys without a test elsewhere reach the part they configure (training/setup.py)."""

from __future__ import annotations

from training.config import load_config


def test_model_and_rollout_keys_reach_what_they_configure(tmp_path, monkeypatch):
    """tiny_tied_embeddings ties the built model; eval_temperature is the held-out
    workflow's; tool_latency_median_s/_sigma draw a per-episode latency; vllm_kwargs go to
    the vLLM engine; the agent's max_observation_tokens to the agent; zero_stage to DeepSpeed."""
    from types import SimpleNamespace

    import training.engines.vllm_engine as vllm_engine
    from training.engines.deepspeed_engine import DeepSpeedTrainEngine
    from training.models import load_causal_lm, load_tokenizer
    from training.setup import _model_path, _workflows, make_inference_engine
    from datagen.tools import PageTools
    from training.search_env import agent_workflows

    cfg = load_config(overrides={
        "model": {"tiny_hidden": 32, "tiny_layers": 1, "tiny_tied_embeddings": True},
        "rollout": {"eval_temperature": 0.6, "tool_latency_median_s": 0.01,
                    "tool_latency_sigma": 0.5, "inference": "vllm",
                    "vllm_kwargs": {"max_model_len": 256}},
        "agent": {"max_observation_tokens": 7}, "engine": {"zero_stage": 1}})
    path = _model_path(cfg, tmp_path)
    assert load_causal_lm(path, "float32").config.tie_word_embeddings
    train, ev = _workflows(cfg, load_tokenizer(path))
    assert (train.temperature, ev.temperature) == (1.0, 0.6)
    assert train.tool_latency is not None and ev.tool_latency is None
    assert 0 < train.tool_latency() < 10
    seen = {}
    monkeypatch.setattr(vllm_engine, "VLLMInferenceEngine",
                        lambda path, version, **kw: seen.update(kw) or "engine")
    assert make_inference_engine(cfg, path, 0) == "engine" and seen == {"max_model_len": 256}
    agent, _ = agent_workflows(cfg, load_tokenizer(path), PageTools.from_pages({}))
    assert agent.env.settings.max_observation_tokens == 7
    ds = DeepSpeedTrainEngine._ds_config(SimpleNamespace(config=cfg.engine))
    assert ds["zero_optimization"]["stage"] == 1 and ds["gradient_clipping"] == 1.0
