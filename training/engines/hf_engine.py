"""HFInferenceEngine: an in-process transformers engine with the vLLM engine's semantics.

Made for fast unit tests of the rollout controller: no server, no vLLM start-up, the
same pause / interrupt / resubmit behaviour (it shares `InterruptibleEngine`). Requests
decode one token per step with a KV cache on a single worker thread, so weight loads
never race a forward pass. Logprobs are those of the sampling distribution (the logits
over the temperature), like the vLLM engine's `processed_logprobs`.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from training.api import GenerationRequest
from training.engines.base import InterruptibleEngine, Segment, segment_seed

logger = logging.getLogger(__name__)


class HFInferenceEngine(InterruptibleEngine):
    def __init__(self, model_path: str | Path, *, dtype: str = "float32", version: int = 0,
                 device: str = "cpu", num_threads: int = 1):
        super().__init__(version)
        from training.models import load_causal_lm

        self._device = device
        self.model = load_causal_lm(model_path, dtype).to(device).eval()
        eos = self.model.generation_config.eos_token_id or self.model.config.eos_token_id
        self._eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        # One decode thread with few intra-op threads: batch-1 decoding gains nothing from
        # more, and OpenMP spinning on a shared, busy machine made it 20x slower.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-engine",
                                        initializer=_set_threads, initargs=(num_threads,))
        self._abort_epoch = 0

    async def _run_segment(self, token_ids, max_new_tokens, request: GenerationRequest,
                           attempt: int) -> Segment:
        import torch

        loop = asyncio.get_running_loop()
        epoch = self._abort_epoch
        gen = None
        seed = segment_seed(request, attempt)
        if seed is not None:
            gen = torch.Generator(device=self._device).manual_seed(seed)
        stops = (set() if request.ignore_eos else self._eos) | set(request.stop_token_ids)
        seg = Segment()
        state = {"past": None, "next_input": token_ids}
        while len(seg.ids) < max_new_tokens:
            if epoch != self._abort_epoch:
                return seg  # interrupted: finish_reason stays None
            tok, lp = await loop.run_in_executor(self._pool, self._step, state, request, gen)
            seg.ids.append(tok)
            self.tokens_generated += 1
            seg.logprobs.append(lp)
            if tok in stops:
                seg.finish_reason = "stop"
                return seg
        seg.finish_reason = "length"
        return seg

    def _step(self, state: dict, request: GenerationRequest, gen) -> tuple[int, float]:
        import torch

        with torch.inference_mode():
            ids = torch.tensor([state["next_input"]], device=self._device)
            out = self.model(input_ids=ids, past_key_values=state["past"], use_cache=True)
            state["past"] = out.past_key_values
            logprobs = processed_logprobs(out.logits[0, -1].float(), request.temperature)
            tok = int(torch.multinomial(logprobs.exp(), 1, generator=gen))
        state["next_input"] = [tok]
        return tok, float(logprobs[tok])

    async def _abort_all(self) -> None:
        self._abort_epoch += 1

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        super().close()

    async def _load_weights(self, path: str) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self._load_sync, path)

    def _load_sync(self, path: str) -> None:
        from safetensors.torch import load_file

        state = {}
        for f in sorted(Path(path).glob("*.safetensors")):
            state.update(load_file(str(f)))
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        if unexpected or [m for m in missing if "rotary" not in m]:
            raise ValueError(f"checkpoint {path} does not match the model: "
                             f"missing={missing[:5]} unexpected={unexpected[:5]}")

def _set_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)  # per thread: the caller's own setting is untouched


def processed_logprobs(logits, temperature: float):
    """Log-probabilities of the sampling distribution: the logits over the temperature."""
    import torch

    if temperature <= 0:
        raise ValueError("temperature must be > 0 (greedy decoding has no logprobs to train on)")
    return torch.log_softmax(logits / temperature, dim=-1)
