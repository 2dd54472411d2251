"""URL normalisation, crawl scope, and the private-address guard (which pins addresses)."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Awaitable, Callable
from urllib.parse import urljoin, urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|mc_eid|mc_cid)$", re.I)


def _normalise_pct(part: str) -> str:
    """Decode percent-escapes of unreserved characters and upper-case the rest (RFC 3986 §6.2.2)."""
    def fix(m: re.Match) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _UNRESERVED else "%" + m.group(1).upper()
    return _PCT.sub(fix, part)


def _remove_dot_segments(path: str) -> str:
    out: list[str] = []
    for seg in path.split("/"):
        if seg == "..":
            if len(out) > 1:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if path.endswith(("/.", "/..")):
        out.append("")
    return "/".join(out) or "/"


def normalise(url: str, base: str | None = None) -> str | None:
    """Canonical form used for de-duplication; None for URLs a crawler can't fetch.

    Lower-cases scheme and host, drops default ports, fragments and tracking parameters,
    resolves dot segments and normalises percent-escapes. Query order is kept (servers may
    care); an empty query is dropped.
    """
    url = url.strip()
    if base:
        url = urljoin(base, url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme == "file":
        return urlunsplit(("file", "", _normalise_pct(parts.path) or "/", "", ""))
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _remove_dot_segments(_normalise_pct(parts.path or "/"))
    query = "&".join(p for p in parts.query.split("&")
                     if p and not _TRACKING.match(p.split("=", 1)[0]))
    return urlunsplit((scheme, netloc, path, _normalise_pct(query), ""))


def host_key(url: str) -> str:
    """Politeness is per scheme+host+port (what one server sees)."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


@dataclass
class Scope:
    """Which URLs the crawl may follow: the seeds' hosts (or given prefixes), depth, patterns."""

    hosts: set[str] = field(default_factory=set)
    prefixes: tuple[str, ...] = ()
    include: tuple[re.Pattern, ...] = ()
    exclude: tuple[re.Pattern, ...] = ()
    max_depth: int = 20
    same_host: bool = True

    def refusal(self, url: str, depth: int = 0) -> str | None:
        """None when in scope, else the reason it is out of scope."""
        if depth > self.max_depth:
            return "max_depth"
        web_prefixes = [p for p in self.prefixes if not p.startswith("file:")]
        if url.startswith("file:"):
            if not any(url.startswith(p) for p in self.prefixes if p.startswith("file:")):
                return "outside_folder"
        elif web_prefixes:  # explicit prefixes replace the same-host rule
            if not any(url.startswith(p) for p in web_prefixes):
                return "outside_prefix"
        elif self.same_host and urlsplit(url).netloc not in self.hosts:
            return "other_host"
        if self.include and not any(p.search(url) for p in self.include):
            return "not_included"
        if any(p.search(url) for p in self.exclude):
            return "excluded"
        return None


def _is_public(ip: ipaddress._BaseAddress) -> bool:
    return not (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved
                or ip.is_multicast or ip.is_unspecified)


Resolver = Callable[[str], Awaitable[list[str]]]


async def system_resolve(host: str) -> list[str]:
    """The host's addresses from the system resolver (IPv6 zone ids dropped)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(i[4][0].split("%")[0] for i in infos))


@dataclass(frozen=True)
class _Pin:
    """A host's addresses as resolved once, and why they are refused (None: allowed)."""
    addresses: tuple[str, ...]
    refusal: str | None


class AddressGuard:
    """Refuses hosts that resolve to private, loopback or link-local addresses, and pins
    the addresses it checked: a host is resolved once per crawl, and connections go to
    those addresses (`addresses()`, used by the HTTP client's network backend), so a DNS
    answer that changes after the check (rebinding) is never used.

    `resolver` is the seam for tests (default: the system resolver).
    """

    def __init__(self, allow_private: bool, resolver: Resolver | None = None):
        self.allow_private = allow_private
        self.resolver = resolver or system_resolve
        self._pins: dict[str, _Pin] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def refusal(self, url: str) -> str | None:
        """None when the host may be fetched, else the reason."""
        if self.allow_private or url.startswith("file:"):
            return None
        return (await self._pin(urlsplit(url).hostname or "")).refusal

    async def addresses(self, host: str) -> tuple[tuple[str, ...], str | None]:
        """(the pinned addresses to connect to, the refusal or None) for a host."""
        pin = await self._pin(host)
        return pin.addresses, None if self.allow_private else pin.refusal

    async def _pin(self, host: str) -> _Pin:
        host = host.strip("[]").lower()
        if host not in self._pins:
            lock = self._locks.setdefault(host, asyncio.Lock())
            async with lock:  # concurrent first requests to a host resolve it once
                if host not in self._pins:
                    self._pins[host] = await self._check(host)
        return self._pins[host]

    async def _check(self, host: str) -> _Pin:
        try:
            ips = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                ips = [ipaddress.ip_address(a) for a in await self.resolver(host)]
            except (OSError, ValueError) as exc:
                return _Pin((), f"dns_error: {exc}")
            if not ips:
                return _Pin((), f"dns_error: no address for {host}")
        bad = [str(ip) for ip in ips if not _is_public(ip)]
        refusal = f"private_address: {host} -> {bad[0]}" if bad else None
        return _Pin(tuple(str(ip) for ip in ips), refusal)
