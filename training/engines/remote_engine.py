"""RemoteInferenceEngine: the InferenceEngine protocol over HTTP, against a vLLM server
started by `training.engines.vllm_server` (rollouts on other machines than the trainer).

Generation streams `/v1/completions` with a token-id prompt, `return_token_ids` and
`logprobs=0`, so every chunk carries the new token ids and the logprob of each sampled
token. A weight update is `POST /pause?mode=abort` (streams in flight end with finish
reason "abort"), `POST /collective_rpc` with `reload_weights`, `POST /reset_prefix_cache`,
`POST /resume`; interrupted requests are resubmitted by `InterruptibleEngine` exactly as
in-process. The policy version is tracked by this client: one client (the trainer's
controller) should own the updates of a server.
"""

from __future__ import annotations

import json
import logging

from training.api import GenerationRequest
from training.engines.base import InterruptibleEngine, Segment, segment_seed

logger = logging.getLogger(__name__)


class RemoteInferenceEngine(InterruptibleEngine):
    def __init__(self, base_url: str, *, version: int = 0, model: str = "policy",
                 timeout_s: float = 600.0, max_connections: int = 256):
        super().__init__(version)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._timeout_s = timeout_s
        self._max_connections = max_connections
        self._client = self.run_sync(self._make_client())

    async def _make_client(self):
        import httpx

        limits = httpx.Limits(max_connections=self._max_connections)
        return httpx.AsyncClient(base_url=self.base_url, timeout=self._timeout_s, limits=limits)

    async def _run_segment(self, token_ids, max_new_tokens, request: GenerationRequest,
                           attempt: int) -> Segment:
        body = {
            "model": self.model, "prompt": token_ids, "max_tokens": max_new_tokens,
            "temperature": request.temperature, "top_p": request.top_p, "logprobs": 0,
            "seed": segment_seed(request, attempt), "stop_token_ids": list(request.stop_token_ids),
            "return_token_ids": True, "stream": True, "skip_special_tokens": False,
        }
        seg = Segment()
        finish = None
        async with self._client.stream("POST", "/v1/completions", json=body) as resp:
            if resp.status_code != 200:
                detail = (await resp.aread()).decode(errors="replace")[:500]
                raise RuntimeError(f"vLLM server answered {resp.status_code}: {detail}")
            async for line in resp.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                choice = json.loads(line[6:])["choices"][0]
                ids = choice.get("token_ids") or []
                seg.ids += ids
                self.tokens_generated += len(ids)
                lps = (choice.get("logprobs") or {}).get("token_logprobs") or []
                seg.logprobs += lps[: len(ids)]
                finish = choice.get("finish_reason") or finish
        if len(seg.logprobs) != len(seg.ids):
            raise RuntimeError("server returned token ids without their logprobs")
        from training.engines.vllm_engine import _finish

        seg.finish_reason = _finish(finish, len(seg.ids), max_new_tokens)
        return seg

    async def _post(self, path: str, **kwargs) -> None:
        resp = await self._client.post(path, **kwargs)
        if resp.status_code != 200:
            raise RuntimeError(f"POST {path} -> {resp.status_code}: {resp.text[:500]}")

    async def _abort_all(self) -> None:
        await self._post("/pause", params={"mode": "abort"})

    async def _backend_resume(self) -> None:
        await self._post("/resume")

    def _check_checkpoint(self, path: str) -> None:
        pass  # the path is on the server's filesystem, which this client may not see

    async def _load_weights(self, path: str) -> None:
        await self._post("/collective_rpc",
                         json={"method": "reload_weights", "kwargs": {"weights_path": path}})
        await self._post("/reset_prefix_cache")

    async def update_weights_from(self, version: int, sync) -> None:
        """GPU option: weights by NCCL broadcast (`nccl_sync.NCCLWeightSync`), not from disk."""
        import asyncio

        async def load(_path: str) -> None:
            await asyncio.get_running_loop().run_in_executor(None, sync.send)
            await self._post("/reset_prefix_cache")

        await self._on_loop(self._update_with(version, load))

    def close(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            self.run_sync(client.aclose())
            self._client = None
        super().close()
