"""The trainer's OpenAI-compatible endpoint: agent code written against the OpenAI client
trains unchanged (AReaL's online proxy mode, Agent Lightning).

    user's agent ──POST /v1/chat/completions (header X-Episode-Id)──► ChatProxy
                                                                        │ chat template
                                                                        ▼
                                          the trainer's InferenceEngine (logprobs, versions)
    every call is recorded against its episode (`ChatCall`); `training.user_agent` turns an
    episode's calls into one multi-turn trajectory.

An episode is named by the `X-Episode-Id` header (or, for clients that cannot set headers, the
request's `user` field). A call that repeats the episode's last messages and the reply it got,
then adds turns, continues that call's token ids (the earlier turns are never re-tokenised):
only the added turns go through the tokenizer. Sampling is the run's (`rollout.temperature`,
plain temperature sampling): the loss needs the behaviour distribution the trainer's logprobs
assume, so a request's own temperature or top_p is ignored (counted in `ChatProxy.counts`).
Refused with a 400 and a one-line reason: `stream`, `n > 1`, function calling (`tools`), `stop`
strings, an unknown episode, a prompt beyond the model's context.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from training.api import GenerationRequest, GenerationResult, InferenceEngine, Message

logger = logging.getLogger(__name__)

__all__ = ["ChatCall", "ChatProxy", "ProxyError", "RecordedEpisode"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str = ""


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[_Part] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            if any(p.type != "text" for p in self.content):
                raise ProxyError("only text content parts are supported")
            return "".join(p.text for p in self.content)
        return self.content or ""


class _ChatRequest(BaseModel):
    """The fields of OpenAI's chat request that the endpoint reads; the rest is ignored."""

    model_config = ConfigDict(extra="ignore")
    messages: list[_Message]
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int = 1
    stream: bool = False
    stop: str | list[str] | None = None
    tools: list[dict] | None = None


class ProxyError(ValueError):
    """A request the endpoint refuses: a 400 whose message says what to change."""

    def __init__(self, message: str, code: str = "invalid_request"):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ChatCall:
    """One chat completion the policy generated: the messages it answered, the token ids it
    was given and what it produced (ids, behaviour logprobs, the version of every token)."""

    messages: tuple[Message, ...]
    prompt_ids: list[int]
    result: GenerationResult
    text: str                       # the reply's content, as the client received it


@dataclass
class RecordedEpisode:
    """What the endpoint recorded of one episode: its calls in order, and whether a call was
    refused because the conversation outgrew the model's context."""

    engine: InferenceEngine
    temperature: float
    calls: list[ChatCall] = field(default_factory=list)
    overflow: bool = False


@dataclass
class ChatProxy:
    """`/v1/chat/completions` and `/v1/models` on loopback over the trainer's engines."""

    tokenizer: object
    max_new_tokens: int
    context_tokens: int
    temperature: float = 1.0
    model_name: str = "policy"
    host: str = "127.0.0.1"
    counts: Counter = field(default_factory=Counter)

    def __post_init__(self):
        self._episodes: dict[str, RecordedEpisode] = {}
        self._runner = self._lock = None
        self.url = ""
        self._ids = itertools.count()

    async def ensure_started(self) -> str:
        """Start serving on first use (in the trainer's event loop); the base URL."""
        import asyncio
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            return self.url or await self.start()

    async def start(self, port: int = 0) -> str:
        """Serve in the running event loop; returns the base URL (`http://host:port/v1`)."""
        from aiohttp import web
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, port).start()
        self.url = f"http://{self.host}:{self._runner.addresses[0][1]}/v1"
        return self.url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def open_episode(self, engine: InferenceEngine, temperature: float | None = None) -> str:
        """A new episode whose calls generate with `engine` (at `temperature`, default the
        proxy's: evaluation samples at its own); its id goes in X-Episode-Id."""
        episode_id = f"ep-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        self._episodes[episode_id] = RecordedEpisode(engine, temperature or self.temperature)
        return episode_id

    def recorded(self, episode_id: str) -> RecordedEpisode:
        return self._episodes[episode_id]

    def close_episode(self, episode_id: str) -> RecordedEpisode:
        """What the episode's calls recorded; later calls with its id are refused."""
        return self._episodes.pop(episode_id)

    async def complete(self, episode_id: str, body: dict) -> dict:
        """One chat completion for the episode (what the HTTP route serves)."""
        episode = self._episodes.get(episode_id)
        if episode is None:
            raise ProxyError(f"unknown episode id {episode_id!r}: it is not open (each "
                             "episode's id comes from the trainer)", "unknown_episode")
        req = _parse(body)
        self._count_overrides(req, episode.temperature)
        messages = tuple((m.role, m.text()) for m in req.messages)
        prompt = self._prompt_ids(episode, messages)
        room = self.context_tokens - len(prompt)
        if room <= 0:
            episode.overflow = True
            raise ProxyError(f"the prompt has {len(prompt)} tokens; the model's context is "
                             f"{self.context_tokens}", "context_length_exceeded")
        wanted = req.max_completion_tokens or req.max_tokens or self.max_new_tokens
        request = GenerationRequest(prompt_ids=prompt, temperature=episode.temperature,
                                    max_new_tokens=min(wanted, self.max_new_tokens, room),
                                    stop_token_ids=self._stop_ids())
        result = await episode.engine.agenerate(request)
        text = self.tokenizer.decode(result.output_ids, skip_special_tokens=True)
        episode.calls.append(ChatCall(messages, prompt, result, text))
        self.counts["calls"] += 1
        return self._response(result, text, len(prompt))

    def _prompt_ids(self, episode: RecordedEpisode, messages: tuple[Message, ...]) -> list[int]:
        """The last call's ids continued by the added turns, or the whole rendering."""
        from training.search_env.chat import continue_ids, render_ids
        if episode.calls:
            last = episode.calls[-1]
            ids = continue_ids(self.tokenizer, last.messages, last.prompt_ids,
                               last.result.output_ids, last.text, messages)
            if ids is not None:
                return ids
            self.counts["calls_not_continuing"] += 1
        return render_ids(self.tokenizer, messages)

    def _stop_ids(self) -> tuple[int, ...]:
        from training.search_env.chat import end_of_turn_ids
        return end_of_turn_ids(self.tokenizer)

    def _count_overrides(self, req: _ChatRequest, temperature: float) -> None:
        if req.temperature is not None and req.temperature != temperature:
            self.counts["temperature_ignored"] += 1
        if req.top_p is not None and req.top_p != 1.0:   # sampling is plain temperature
            self.counts["top_p_ignored"] += 1

    def _response(self, result: GenerationResult, text: str, n_prompt: int) -> dict:
        n_out = len(result.output_ids)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
            "created": int(time.time()), "model": self.model_name,
            "choices": [{"index": 0, "finish_reason": result.finish_reason, "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out,
                      "total_tokens": n_prompt + n_out}}

    async def _chat(self, request):
        from aiohttp import web
        try:
            body = await request.json()
        except ValueError:
            return _error(ProxyError("the request body is not JSON"))
        episode_id = request.headers.get("X-Episode-Id") or body.get("user") or ""
        if not episode_id:
            return _error(ProxyError("no episode id: send the X-Episode-Id header (or the "
                                     "`user` field) the trainer gave the episode",
                                     "missing_episode"))
        try:
            return web.json_response(await self.complete(episode_id, body))
        except ProxyError as exc:
            self.counts[f"refused_{exc.code}"] += 1
            return _error(exc)

    async def _models(self, request):
        from aiohttp import web
        return web.json_response({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": 0, "owned_by": "hardqa"}]})


def _parse(body: dict) -> _ChatRequest:
    """The request, or a ProxyError naming the field that is wrong or unsupported."""
    try:
        req = _ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ProxyError(f"{where}: {first['msg']}") from None
    for wrong, why in ((req.stream, "stream: streaming responses are not supported"),
                       (req.n != 1, f"n: {req.n} choices asked; only n = 1 is supported "
                                    "(run the episode n times instead)"),
                       (bool(req.tools), "tools: function calling is not supported; give "
                                         "tool results as messages"),
                       (req.stop is not None, "stop: stop strings are not supported; the "
                                              "reply ends at the model's end-of-turn token"),
                       (not req.messages, "messages: at least one message is needed")):
        if wrong:
            raise ProxyError(why, "unsupported")
    return req


def _error(exc: ProxyError):
    from aiohttp import web
    return web.json_response({"error": {"message": str(exc), "type": "invalid_request_error",
                                        "param": None, "code": exc.code}}, status=400)
