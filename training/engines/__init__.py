"""Engines behind the protocols in `training.api`.

Import the concrete engine modules directly (each pulls in its heavy backend lazily).

Typical loop (see tests/training/test_engines_inference.py):

    trainer = DeepSpeedTrainEngine(model_dir, DeepSpeedEngineConfig(zero_stage=2))
    rollout = VLLMInferenceEngine(model_dir)           # or HFInferenceEngine / RemoteInferenceEngine
    result = await rollout.agenerate(GenerationRequest(prompt_ids, max_new_tokens=256))
    stats = trainer.train_batch(pack_sequences(...), loss_fn)
    trainer.export_weights(ckpt_dir); await rollout.update_weights(version + 1, ckpt_dir)

The file tree is in training/README.md.
"""
