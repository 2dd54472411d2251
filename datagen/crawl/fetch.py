"""One URL over HTTP, bounded in every way a hostile server could stretch it.

A fetch is: up to `max_retries` extra attempts on connection errors, 429 and 5xx (honouring
Retry-After), each attempt under a total deadline (connect to last byte) that is recorded,
not retried; manual redirects with a cap and loop detection; a cap on raw bytes and on
decompressed bytes (we decode gzip/deflate ourselves so a bomb never inflates past the cap);
a content-type allow-list. The body is never returned truncated.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import ssl
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable
from urllib.parse import unquote, urlsplit

import httpcore
import httpx

from datagen.crawl.config import CrawlConfig
from datagen.crawl.urls import AddressGuard, normalise

log = logging.getLogger(__name__)

RETRY_STATUSES = {429, 500, 502, 503, 504}
# Errors worth another try: the connection failed or broke, the server may come back.
RETRY_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.WriteError,
                httpx.RemoteProtocolError, httpx.PoolTimeout)
REDIRECTS = {301, 302, 303, 307, 308}
_LOCAL_TYPES = {".html": "text/html", ".htm": "text/html", ".md": "text/markdown",
                ".txt": "text/plain"}


@dataclass
class Fetched:
    """What came back for one URL: a body, or a failure/skip with its reason."""

    url: str
    final_url: str
    status: int | None = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    outcome: str = "ok"  # ok | not_modified | failed | skipped
    reason: str = ""
    raw_bytes: int = 0
    elapsed_ms: float = 0.0
    attempts: int = 0

    def marked(self, outcome: str, reason: str) -> "Fetched":
        """This result with a new outcome and reason (the crawl's verdict on it)."""
        self.outcome, self.reason = outcome, reason
        return self


class _Refused(Exception):
    def __init__(self, outcome: str, reason: str):
        super().__init__(reason)
        self.outcome, self.reason = outcome, reason


RedirectCheck = Callable[[str], Awaitable[str | None]]


class Fetcher:
    """guard: connections go to the addresses it checked (see PinnedNetwork); warc: a
    WarcOut that archives every response; network and ssl_context are seams for tests (the
    socket layer under the pins, the trusted CAs)."""

    def __init__(self, cfg: CrawlConfig, client: httpx.AsyncClient | None = None,
                 guard: AddressGuard | None = None,
                 network: httpcore.AsyncNetworkBackend | None = None,
                 ssl_context: ssl.SSLContext | None = None, warc=None):
        self.cfg = cfg
        self.client = client or make_client(cfg, guard, network, ssl_context)
        self.warc = warc  # a WarcOut: every response received is archived

    async def aclose(self) -> None:
        await self.client.aclose()

    async def fetch(self, url: str, headers: dict[str, str] | None = None,
                    check_redirect: RedirectCheck | None = None, any_type: bool = False) -> Fetched:
        """any_type: skip the content-type allow-list (robots.txt, sitemaps)."""
        started = time.monotonic()
        if url.startswith("file:"):
            res = self._read_file(url)
        else:
            res = await self._fetch_with_retries(url, headers or {}, check_redirect, any_type)
        res.elapsed_ms = (time.monotonic() - started) * 1000
        return res

    async def _fetch_with_retries(self, url: str, headers: dict[str, str],
                                  check_redirect: RedirectCheck | None, any_type: bool) -> Fetched:
        res = Fetched(url=url, final_url=url)
        for attempt in range(self.cfg.max_retries + 1):
            res.attempts = attempt + 1
            wait: float | None = None
            try:
                async with asyncio.timeout(self.cfg.request_deadline_s):
                    await self._follow(res, headers, check_redirect, any_type)
                if res.status not in RETRY_STATUSES:
                    return res
                wait = self._retry_after(res)
                if wait is None:
                    return _fail(res, f"retry_after_too_long: http_{res.status} asked for "
                                      f"{res.headers.get('retry-after')}")
                _fail(res, f"http_{res.status}")
            except TimeoutError:
                return _fail(res, f"deadline_exceeded: {self.cfg.request_deadline_s:g} s")
            except _Refused as exc:
                res.outcome, res.reason, res.body = exc.outcome, exc.reason, None
                return res
            except RETRY_ERRORS as exc:
                if str(exc).startswith(PIN_REFUSALS):  # the pinned address is refused: final
                    return _skip(res, str(exc))
                _fail(res, f"connection_error: {type(exc).__name__}")
            except httpx.HTTPError as exc:
                return _fail(res, f"http_error: {type(exc).__name__}: {exc}")
            if attempt < self.cfg.max_retries:
                await asyncio.sleep(wait if wait is not None else self._backoff(attempt))
        return res

    def _backoff(self, attempt: int) -> float:
        return self.cfg.backoff_base_s * (2 ** attempt) * (0.5 + random.random())

    def _retry_after(self, res: Fetched) -> float | None:
        """Seconds to wait before the next attempt; None when the server asks too much."""
        value = res.headers.get("retry-after")
        if not value:
            return self._backoff(res.attempts - 1)
        try:
            seconds = float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value) if value else None
            seconds = when.timestamp() - time.time() if when else self._backoff(res.attempts - 1)
        seconds = max(0.0, seconds)
        return seconds if seconds <= self.cfg.max_retry_after_s else None

    async def _follow(self, res: Fetched, headers: dict[str, str],
                      check_redirect: RedirectCheck | None, any_type: bool) -> None:
        """One attempt: the request and its redirect chain, all under the caller's deadline."""
        current, chain = res.url, {res.url}
        for _ in range(self.cfg.max_redirects + 1):
            res.final_url = current
            location = await self._request(res, current, headers, any_type)
            if location is None:
                return
            nxt = normalise(location, base=current)
            if nxt is None:
                raise _Refused("failed", f"bad_redirect: {location[:200]}")
            if nxt in chain:
                raise _Refused("failed", f"redirect_loop: {nxt}")
            if check_redirect is not None:
                refusal = await check_redirect(nxt)
                if refusal:
                    raise _Refused("skipped", f"redirect_refused: {refusal}")
            chain.add(nxt)
            current = nxt
        raise _Refused("failed", f"too_many_redirects: more than {self.cfg.max_redirects}")

    async def _request(self, res: Fetched, url: str, headers: dict[str, str],
                       any_type: bool) -> str | None:
        async with self.client.stream("GET", url, headers=headers) as resp:
            raw: list[bytes] | None = [] if self.warc is not None else None
            complete = False
            try:
                res.status = resp.status_code
                res.headers = {k.lower(): v for k, v in resp.headers.items()}
                if resp.status_code in REDIRECTS and "location" in resp.headers:
                    return resp.headers["location"]
                res.body = None
                if resp.status_code == 304:
                    res.outcome, res.reason = "not_modified", "not_modified"
                    return None
                if resp.status_code != 200:
                    res.outcome, res.reason = "failed", f"http_{resp.status_code}"
                    return None
                self._check_type(res, any_type)
                res.body = await self._read_body(resp, res, raw)
                complete = True
                res.outcome, res.reason = "ok", ""
                return None
            finally:
                if raw is not None:  # what was received, even when we stopped reading
                    self._archive(url, resp, b"".join(raw), complete)

    def _archive(self, url: str, resp: httpx.Response, raw: bytes, complete: bool) -> None:
        from datagen.crawl.warc import archived_headers
        stream = resp.extensions.get("network_stream")
        peer = stream.get_extra_info("server_addr") if stream is not None else None
        declared = resp.headers.get("content-length", "")
        has_body = "transfer-encoding" in resp.headers or (declared.isdigit() and int(declared) > 0)
        self.warc.write(url, [(k.decode("latin-1"), v.decode("latin-1"))
                              for k, v in resp.request.headers.raw],
                        resp.http_version, resp.status_code, resp.reason_phrase,
                        archived_headers(resp.headers.raw, len(raw)), raw,
                        ip=peer[0] if peer else None, truncated=not complete and has_body)

    def _check_type(self, res: Fetched, any_type: bool) -> None:
        ctype = res.headers.get("content-type", "").split(";")[0].strip().lower()
        res.content_type = ctype or None
        if ctype and not any_type and ctype not in self.cfg.allowed_content_types:
            raise _Refused("skipped", f"content_type: {ctype}")
        length = res.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.cfg.max_bytes:
            raise _Refused("failed", f"too_large: content-length {length} > {self.cfg.max_bytes}")

    async def _read_body(self, resp: httpx.Response, res: Fetched,
                         raw: list[bytes] | None = None) -> bytes:
        """raw: collects the bytes as received (still content-encoded), for WARC out."""
        decoder = _decoder(res.headers.get("content-encoding", ""))
        cap, dcap = self.cfg.max_bytes, self.cfg.max_decompressed_bytes
        parts: list[bytes] = []
        size = 0
        async for chunk in resp.aiter_raw():
            if raw is not None:
                raw.append(chunk)
            res.raw_bytes += len(chunk)
            if res.raw_bytes > cap:
                raise _Refused("failed", f"too_large: over {cap} bytes")
            out = decoder(chunk, dcap - size + 1) if decoder else chunk
            size += len(out)
            if size > dcap:
                raise _Refused("failed", f"decompressed_too_large: over {dcap} bytes")
            parts.append(out)
        return b"".join(parts)

    def _read_file(self, url: str) -> Fetched:
        res = Fetched(url=url, final_url=url, attempts=1)
        path = Path(unquote(urlsplit(url).path))
        res.content_type = _LOCAL_TYPES.get(path.suffix.lower())
        try:
            size = path.stat().st_size
            if res.content_type is None:
                return _skip(res, f"content_type: file extension {path.suffix or '(none)'}")
            if size > self.cfg.max_bytes:
                return _fail(res, f"too_large: {size} > {self.cfg.max_bytes} bytes")
            res.body = path.read_bytes()
        except OSError as exc:
            return _fail(res, f"file_error: {exc.strerror or exc}")
        res.raw_bytes, res.status, res.outcome = len(res.body), 200, "ok"
        res.headers = {"content-type": res.content_type}
        return res


def _fail(res: Fetched, reason: str) -> Fetched:
    res.outcome, res.reason, res.body = "failed", reason, None
    return res


def _skip(res: Fetched, reason: str) -> Fetched:
    res.outcome, res.reason, res.body = "skipped", reason, None
    return res


def _decoder(encoding: str):
    """A bounded incremental decoder for gzip/deflate, or None for identity."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        d = zlib.decompressobj(47 if encoding != "deflate" else 15)
        def decode(chunk: bytes, limit: int) -> bytes:
            try:
                return d.decompress(chunk, max(1, limit))
            except zlib.error as exc:
                raise _Refused("failed", f"bad_encoding: {exc}") from None
        return decode
    raise _Refused("failed", f"unsupported_content_encoding: {encoding}")


PIN_REFUSALS = ("private_address:", "dns_error:")


class PinnedNetwork(httpcore.AsyncNetworkBackend):
    """httpcore's socket layer, connecting to the addresses the guard checked for a host.

    httpcore passes the URL's host here and keeps it for everything else, so the request
    keeps its Host header and, for HTTPS, the SNI and the certificate check use the host
    name while the socket goes to the pinned address. Every connection (each redirect hop,
    robots.txt, sitemaps) comes through here, so none reaches an address that was not checked.
    """

    def __init__(self, guard: AddressGuard, inner: httpcore.AsyncNetworkBackend | None = None):
        self.guard = guard
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options=None):
        addresses, refusal = await self.guard.addresses(host)
        if refusal:
            raise httpcore.ConnectError(refusal)
        error: Exception = httpcore.ConnectError(f"dns_error: no address for {host}")
        for address in addresses:  # in the resolver's order, as a plain client would
            try:
                return await self.inner.connect_tcp(address, port, timeout=timeout,
                                                    local_address=local_address,
                                                    socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options=None):
        raise httpcore.ConnectError("unix sockets are not crawled")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def make_client(cfg: CrawlConfig, guard: AddressGuard | None = None,
                network: httpcore.AsyncNetworkBackend | None = None,
                ssl_context: ssl.SSLContext | None = None) -> httpx.AsyncClient:
    """A client that leaves redirects, decompression and timing to the Fetcher, and (with
    a guard) connects only to the addresses the guard checked."""
    limits = httpx.Limits(max_connections=cfg.global_concurrency,
                          max_keepalive_connections=cfg.global_concurrency)
    timeout = httpx.Timeout(cfg.request_deadline_s)
    headers = {"User-Agent": cfg.user_agent, "Accept-Encoding": "gzip, deflate",
               "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"}
    ctx = ssl_context or httpx.create_ssl_context(trust_env=False)
    transport = httpx.AsyncHTTPTransport(verify=ctx, limits=limits, trust_env=False)
    if guard is not None:
        # httpx has no network-backend option: give its transport a pool that has one
        transport._pool = httpcore.AsyncConnectionPool(
            ssl_context=ctx, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=PinnedNetwork(guard, network))
    return httpx.AsyncClient(follow_redirects=False, timeout=timeout, headers=headers,
                             transport=transport, trust_env=False)
