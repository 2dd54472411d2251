"""EnginePool: several inference engines (usually vLLM servers) behind one InferenceEngine.

Rollouts scale out by running more vLLM servers; the controller and the trainer still see
one engine. Each request goes to the engine with the fewest requests in flight (a long
agent episode must not queue behind a busy server while another idles); a weight update
goes to every engine at once, and the pool's version is the oldest version any engine
serves, so staleness is never understated.

    pool = EnginePool([RemoteInferenceEngine(url) for url in urls])

All engines must load the same checkpoint path, so with servers on other machines the run
directory's `weights/` must be on a filesystem they share.
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from training.api import GenerationRequest, GenerationResult, InferenceEngine


class EnginePool:
    max_model_len: int | None = None   # as before: the pool's servers bound nothing here

    def __init__(self, engines: Sequence[InferenceEngine]):
        if not engines:
            raise ValueError("EnginePool needs at least one engine")
        self.engines = list(engines)
        self.in_flight = [0] * len(self.engines)
        self.requests_served = [0] * len(self.engines)

    @property
    def version(self) -> int:
        return min(e.version for e in self.engines)

    @property
    def tokens_generated(self) -> int:
        return sum(e.tokens_generated for e in self.engines)

    async def agenerate(self, request: GenerationRequest) -> GenerationResult:
        # Least in flight; ties go to the engine that has served fewest so far.
        i = min(range(len(self.engines)),
                key=lambda k: (self.in_flight[k], self.requests_served[k]))
        self.in_flight[i] += 1
        self.requests_served[i] += 1
        try:
            return await self.engines[i].agenerate(request)
        finally:
            self.in_flight[i] -= 1

    def generate(self, requests: list[GenerationRequest]) -> list[GenerationResult]:
        """Synchronous batch generation (scripts, benchmarks), spread over the pool."""
        async def _all():
            return await asyncio.gather(*(self.agenerate(r) for r in requests))

        return asyncio.run(_all())

    async def update_weights(self, version: int, path: str) -> None:
        await asyncio.gather(*(e.update_weights(version, path) for e in self.engines))

    async def pause(self) -> None:
        await asyncio.gather(*(e.pause() for e in self.engines))

    async def resume(self) -> None:
        await asyncio.gather(*(e.resume() for e in self.engines))

    def close(self) -> None:
        for engine in self.engines:
            engine.close()
