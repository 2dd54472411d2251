"""Turn what the user typed (URLs, sitemap URLs, local folders or files, WARC files, folders
or globs of them) into seed URLs, WARC paths and scope; expand sitemaps (gzipped, indexes)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from datagen.crawl.fetch import Fetcher
from datagen.crawl.urls import normalise
from datagen.crawl.warc import find_warcs

log = logging.getLogger(__name__)

LOCAL_SUFFIXES = {".html", ".htm", ".md", ".txt"}
_LOC = re.compile(r"<loc>\s*([^<\s]+)\s*</loc>", re.I)
_SITEMAP_LOC = re.compile(r"<sitemap\b[^>]*>.*?<loc>\s*([^<\s]+)\s*</loc>", re.I | re.S)
_URL_LOC = re.compile(r"<url\b[^>]*>.*?<loc>\s*([^<\s]+)\s*</loc>", re.I | re.S)
MAX_SITEMAPS = 50


class SeedError(ValueError):
    """A seed the user gave can't be used (the CLI shows it as one line)."""


@dataclass
class Seeds:
    urls: list[str] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    folders: list[str] = field(default_factory=list)  # file:// prefixes in scope
    sitemaps: list[str] = field(default_factory=list)
    warcs: list[Path] = field(default_factory=list)  # web archives to ingest


def is_sitemap(url: str) -> bool:
    path = urlsplit(url).path.lower()
    return path.endswith((".xml", ".xml.gz")) and "sitemap" in path


def classify(raw: list[str]) -> Seeds:
    """Local paths become file:// URLs; everything else must be an http(s) URL."""
    seeds = Seeds()
    for item in raw:
        if "://" not in item:
            if any(ch in item for ch in "*?["):
                found = find_warcs(item)
                if not found:
                    raise SeedError(f"no .warc or .warc.gz files match {item!r}")
                seeds.warcs.extend(found)
                continue
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
    warcs = find_warcs(str(path))
    seeds.warcs.extend(warcs)
    if path.is_file():
        if not warcs:
            seeds.urls.append(normalise(path.as_uri()))
            seeds.folders.append(normalise(path.as_uri()))
        return
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in LOCAL_SUFFIXES and p.is_file())
    if not files and warcs:
        return
    if not files:
        raise SeedError(f"folder {path} has no .html, .md, .txt, .warc or .warc.gz files")
    seeds.folders.append(normalise(path.as_uri()).rstrip("/") + "/")
    seeds.urls.extend(normalise(p.as_uri()) for p in files)


async def expand_sitemaps(seeds: Seeds, fetcher: Fetcher) -> list[str]:
    """Fetch sitemaps (gzipped or not; sitemap indexes nested up to MAX_SITEMAPS) and return
    their page URLs. A `<sitemap><loc>` is another sitemap, a `<url><loc>` a page."""
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
        try:
            xml = gunzip_bounded(res.body, fetcher.cfg.max_decompressed_bytes)
        except ValueError as exc:
            log.warning("sitemap %s: %s", sm, exc)
            continue
        children, urls = parse_sitemap(xml.decode("utf-8", errors="replace"), sm)
        queue.extend(children)
        pages.extend(urls)
    return pages


def parse_sitemap(text: str, base: str) -> tuple[list[str], list[str]]:
    """(nested sitemaps, page URLs) of a sitemap or sitemap index."""
    children = [u for u in (_loc_url(m, base) for m in _SITEMAP_LOC.findall(text)) if u]
    pages = [u for u in (_loc_url(m, base) for m in _URL_LOC.findall(text)) if u]
    if not children and not pages:  # no <url>/<sitemap> wrappers: guess by the name
        for u in (_loc_url(m, base) for m in _LOC.findall(text)):
            if u:
                (children if is_sitemap(u) else pages).append(u)
    return children, pages


def _loc_url(loc: str, base: str) -> str | None:
    return normalise(loc.replace("&amp;", "&"), base=base)


def gunzip_bounded(body: bytes, cap: int) -> bytes:
    """A gzipped sitemap (.xml.gz served as application/gzip) inflated up to `cap` bytes;
    other bodies unchanged. A sitemap that inflates past the cap is refused (a bomb)."""
    if not body.startswith(b"\x1f\x8b"):
        return body
    import zlib
    d = zlib.decompressobj(31)
    try:
        out = d.decompress(body, cap + 1)
    except zlib.error as exc:
        raise ValueError(f"bad gzip: {exc}") from None
    if len(out) > cap:
        raise ValueError(f"decompressed_too_large: over {cap} bytes")
    return out
