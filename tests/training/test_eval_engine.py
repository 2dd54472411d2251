"""`datagen eval --policy checkpoint:RUN/...` serves the checkpoint as its run served it: a run
that rolled out with vLLM is evaluated on vLLM (its concurrent episodes batched), others on HF
generate. vLLM itself is replaced by a recorder here (the real engine is started by the
engine tests); what is checked is which engine, and with the run's vllm_kwargs."""

from __future__ import annotations

from pathlib import Path

from training.config import RolloutConfig
from training.evaluation.policies import load_policy


def test_a_vllm_run_is_evaluated_on_vllm_with_its_kwargs(tiny_model_dir, monkeypatch):
    import training.engines.vllm_engine as vllm_engine

    made = []

    class Recorder:
        def __init__(self, path, **kwargs):
            made.append((Path(path), kwargs))

        def close(self) -> None:
            pass

    monkeypatch.setattr(vllm_engine, "VLLMInferenceEngine", Recorder)
    rollout = RolloutConfig(inference="vllm", vllm_kwargs={"max_model_len": 512})
    load_policy(tiny_model_dir, rollout=rollout).close()
    assert made == [(Path(tiny_model_dir), {"max_model_len": 512})]
    hf = load_policy(tiny_model_dir, rollout=RolloutConfig(inference="hf"))
    assert type(hf.engine).__name__ == "HFInferenceEngine" and len(made) == 1
    hf.close()
