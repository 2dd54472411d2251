"""Turn what the user typed (URLs, sitemap URLs, local folders or files) into seed URLs + scope."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from datagen.crawl.fetch import Fetcher
from datagen.crawl.urls import normalise

log = logging.getLogger(__name__)

LOCAL_SUFFIXES = {".html", ".htm", ".md", ".txt"}
_LOC = re.compile(r"<loc>\s*([^<\s]+)\s*</loc>", re.I)
MAX_SITEMAPS = 50


class SeedError(ValueError):
    """A seed the user gave can't be used (the CLI shows it as one line)."""


@dataclass
class Seeds:
    urls: list[str] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    folders: list[str] = field(default_factory=list)  # file:// prefixes in scope
    sitemaps: list[str] = field(default_factory=list)


def is_sitemap(url: str) -> bool:
    path = urlsplit(url).path.lower()
    return path.endswith((".xml", ".xml.gz")) and "sitemap" in path


def classify(raw: list[str]) -> Seeds:
    """Local paths become file:// URLs; everything else must be an http(s) URL."""
    seeds = Seeds()
    for item in raw:
        if "://" not in item:
            _add_local(seeds, Path(item).expanduser())
            continue
        url = normalise(item)
        if url is None:
            raise SeedError(f"not a crawlable URL: {item!r} (use http://, https:// or a local path)")
        if url.startswith("file:"):
            _add_local(seeds, Path(urlsplit(url).path))
            continue
        seeds.hosts.add(urlsplit(url).netloc)
        (seeds.sitemaps if is_sitemap(url) else seeds.urls).append(url)
    return seeds


def _add_local(seeds: Seeds, path: Path) -> None:
    if not path.exists():
        raise SeedError(f"no such file or folder: {path}")
    path = path.resolve()
    if path.is_file():
        seeds.urls.append(normalise(path.as_uri()))
        seeds.folders.append(normalise(path.as_uri()))
        return
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in LOCAL_SUFFIXES and p.is_file())
    if not files:
        raise SeedError(f"folder {path} has no .html, .md or .txt files")
    seeds.folders.append(normalise(path.as_uri()).rstrip("/") + "/")
    seeds.urls.extend(normalise(p.as_uri()) for p in files)


async def expand_sitemaps(seeds: Seeds, fetcher: Fetcher) -> list[str]:
    """Fetch sitemaps (and nested sitemap indexes, bounded) and return their page URLs."""
    queue, done, pages = list(seeds.sitemaps), set(), []
    while queue and len(done) < MAX_SITEMAPS:
        sm = queue.pop(0)
        if sm in done:
            continue
        done.add(sm)
        res = await fetcher.fetch(sm, any_type=True)
        if res.outcome != "ok" or res.body is None:
            log.warning("sitemap %s: %s", sm, res.reason or res.status)
            continue
        for loc in _LOC.findall(res.body.decode("utf-8", errors="replace")):
            url = normalise(loc.replace("&amp;", "&"), base=sm)
            if url is None:
                continue
            (queue if is_sitemap(url) else pages).append(url)
    return pages
