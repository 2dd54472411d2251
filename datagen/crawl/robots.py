"""robots.txt per host (RFC 9309), fetched once through the same bounded Fetcher."""

from __future__ import annotations

import asyncio
import logging
import urllib.robotparser
from dataclasses import dataclass

from datagen.crawl.config import ROBOTS_AGENT
from datagen.crawl.fetch import Fetcher
from datagen.crawl.urls import host_key

log = logging.getLogger(__name__)
MAX_CRAWL_DELAY_S = 10.0  # a robots.txt can't stall the crawl for longer than this per request


@dataclass
class HostRules:
    parser: urllib.robotparser.RobotFileParser | None  # None: everything allowed
    unreachable: str = ""  # non-empty: robots.txt failed with 5xx/network error -> disallow all
    crawl_delay: float = 0.0


class RobotsCache:
    def __init__(self, fetcher: Fetcher, enabled: bool = True, agent: str = ROBOTS_AGENT):
        self.fetcher, self.enabled, self.agent = fetcher, enabled, agent
        self._rules: dict[str, HostRules] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def refusal(self, url: str) -> str | None:
        """None when robots.txt lets us fetch url, else the reason."""
        if not self.enabled or url.startswith("file:"):
            return None
        rules = await self.rules(url)
        if rules.unreachable:
            return f"robots_unreachable: {rules.unreachable}"
        if rules.parser is not None and not rules.parser.can_fetch(self.agent, url):
            return "robots_disallowed"
        return None

    def crawl_delay(self, url: str) -> float:
        """The host's Crawl-delay (0 until its robots.txt has been read)."""
        rules = self._rules.get(host_key(url))
        return rules.crawl_delay if rules else 0.0

    async def rules(self, url: str) -> HostRules:
        host = host_key(url)
        if host in self._rules:
            return self._rules[host]
        lock = self._locks.setdefault(host, asyncio.Lock())
        async with lock:  # one robots.txt request per host, even with many workers waiting
            if host not in self._rules:
                self._rules[host] = await self._load(host)
        return self._rules[host]

    async def _load(self, host: str) -> HostRules:
        res = await self.fetcher.fetch(host + "/robots.txt", any_type=True)
        if res.outcome == "ok" and res.body is not None:
            lines = res.body.decode("utf-8", errors="replace").splitlines()
            parser = urllib.robotparser.RobotFileParser()
            parser.parse(lines)
            delay = crawl_delay(lines, self.agent)
            return HostRules(parser, crawl_delay=min(delay, MAX_CRAWL_DELAY_S))
        if res.status is not None and 400 <= res.status < 500:
            return HostRules(None)  # RFC 9309 §2.3.1.3: no robots.txt means all allowed
        if res.outcome == "skipped":  # e.g. served with an odd content type: treat as absent
            return HostRules(None)
        log.info("robots.txt of %s unreachable (%s): not crawling that host", host, res.reason)
        return HostRules(None, unreachable=res.reason or f"http_{res.status}")


def crawl_delay(lines: list[str], agent: str) -> float:
    """Crawl-delay of the group naming `agent`, else of `*` (urllib's parser reads integers only)."""
    groups: dict[str, float] = {}
    agents: list[str] = []
    in_rules = False
    for raw in lines:
        key, _, value = raw.split("#", 1)[0].partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            if in_rules:
                agents, in_rules = [], False
            agents.append(value.lower())
        elif key and agents:
            in_rules = True
            if key == "crawl-delay":
                try:
                    for a in agents:
                        groups[a] = max(0.0, float(value))
                except ValueError:
                    pass
    mine = next((d for a, d in groups.items() if a != "*" and a in agent.lower()), None)
    return mine if mine is not None else groups.get("*", 0.0)
