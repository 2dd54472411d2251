"""One HTTP attempt against an OpenAI-compatible server, every way it can fail turned into
an `LLMError` with a code. Retrying is the client's business, not this module's."""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import json
import re
from typing import Any

from datagen.llm.types import LLMError

# A 400 that says the server does not take `response_format` json_schema (vLLM builds
# without guided decoding, older SGLang, some hosted APIs): the client falls back to prompt.
_SCHEMA_REFUSED = re.compile(r"response_format|json_schema|guided|structured", re.I)


class SchemaRefused(LLMError):
    """The server rejected the `response_format` field (a 4xx naming it)."""


def retry_after_s(value: str | None, now: dt.datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date.

    >>> retry_after_s("3")
    3.0
    >>> retry_after_s("Wed, 21 Oct 2015 07:28:05 GMT", dt.datetime(2015, 10, 21, 7, 28, tzinfo=dt.timezone.utc))
    5.0
    >>> retry_after_s("soon") is None
    True
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    now = now or dt.datetime.now(dt.timezone.utc)
    return max(0.0, (when - now).total_seconds())


def open_session(base_url: str, max_connections: int):
    """The aiohttp session of one endpoint. The proxy the environment names for it
    (HTTP(S)_PROXY, NO_PROXY) is looked up once, here: aiohttp's `trust_env` would look it
    up, and ~/.netrc, on a worker thread for every request, two thread hand-offs that cost
    more than the request itself on a busy machine (benchmarks/bench_llm.py)."""
    import urllib.request
    from urllib.parse import urlsplit

    import aiohttp
    parts = urlsplit(base_url)
    proxies = urllib.request.getproxies()
    bypass = urllib.request.proxy_bypass(parts.hostname or "") if proxies else True
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_connections),
        timeout=aiohttp.ClientTimeout(total=None), trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),  # an API sets no cookies; the jar costs CPU per request
        proxy=None if bypass else proxies.get(parts.scheme))


async def post_json(http, url: str, body: dict[str, Any], headers: dict[str, str],
                    timeout_s: float) -> dict[str, Any]:
    """POST and return the decoded JSON object; the whole exchange (a trickling body
    included) must finish within `timeout_s`. `http` is an aiohttp ClientSession: it costs
    about a fifth of httpx's CPU per request, which is what bounds throughput at high
    concurrency on a busy machine (benchmarks/bench_llm.py)."""
    import aiohttp
    data = json.dumps(body).encode()
    try:
        async with asyncio.timeout(timeout_s):
            async with http.post(url, data=data, headers=headers) as resp:
                raw = await resp.read()
                return decode_reply(resp.status, resp.headers, raw)
    except TimeoutError:
        raise LLMError("timeout", f"no complete reply within {timeout_s:g} s") from None
    except aiohttp.ClientError as exc:
        raise LLMError("connection", f"{type(exc).__name__}: {exc}"[:200]) from None


def decode_reply(status: int, headers, raw: bytes) -> dict[str, Any]:
    """Classify a complete HTTP reply: an error code for anything but a usable 200 body."""
    if status != 200:
        raise http_error(status, headers, raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LLMError("invalid_utf8", f"reply body at byte {exc.start}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise LLMError("invalid_body", f"reply is not JSON: {text[:120]!r}") from None
    if not isinstance(data, dict):
        raise LLMError("invalid_body", f"reply is a JSON {type(data).__name__}, not an object")
    if data.get("error"):
        raise LLMError("error_body", _error_message(data["error"]))
    return data


def http_error(status: int, headers, raw: bytes) -> LLMError:
    """The LLMError for a non-200 reply (HTML from a proxy is summarised, not quoted)."""
    snippet = _snippet(raw)
    if status == 429:
        return LLMError("http_429", snippet, retry_after=retry_after_s(headers.get("retry-after")))
    if status >= 500:
        return LLMError("http_5xx", f"{status} {snippet}",
                        retry_after=retry_after_s(headers.get("retry-after")))
    if status in (400, 422) and _SCHEMA_REFUSED.search(snippet):
        return SchemaRefused("schema_refused", f"{status} {snippet}")
    return LLMError("http_4xx", f"{status} {snippet}")


def _snippet(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    if text.lstrip().startswith("<"):
        title = re.search(r"<title>(.*?)</title>", text, re.I | re.S)
        return f"(html) {title.group(1).strip() if title else 'page'}"[:160]
    try:
        data = json.loads(text)
        if isinstance(data, dict) and "error" in data:
            return _error_message(data["error"])[:300]
    except json.JSONDecodeError:
        pass
    return text[:300]


def _error_message(err: Any) -> str:
    if isinstance(err, dict):
        return str(err.get("message") or err.get("type") or err)[:300]
    return str(err)[:300]


def parse_choices(data: dict[str, Any], n: int) -> tuple[list[dict[str, Any]], int, int]:
    """The choices (sorted by index) and token counts of a chat.completion body."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise LLMError("empty_choices", "the reply has no choices")
    if len(choices) < n:
        raise LLMError("short_choices", f"asked for {n} samples, got {len(choices)}")
    usage = data.get("usage") or {}
    choices = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)
    return choices[:n], int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


async def get_models(http, url: str, headers: dict[str, str], timeout_s: float) -> list[str]:
    """The model ids an endpoint serves (GET /v1/models)."""
    import aiohttp
    try:
        async with asyncio.timeout(timeout_s):
            async with http.get(url, headers=headers) as resp:
                raw = await resp.read()
                data = decode_reply(resp.status, resp.headers, raw)
    except TimeoutError:
        raise LLMError("timeout", f"GET {url} took over {timeout_s:g} s") from None
    except aiohttp.ClientError as exc:
        raise LLMError("connection", f"GET {url}: {type(exc).__name__} {exc}"[:200]) from None
    return [str(m.get("id")) for m in data.get("data") or [] if isinstance(m, dict)]
