"""Bytes -> text: charset detection, robots directives, links, canonical, licence, main text.

The HTML is parsed once (by trafilatura's own loader, which repairs broken markup); links,
canonical, title and licence are read from that tree, then trafilatura extracts the main
text from a copy of it.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property

import trafilatura
from trafilatura.utils import load_html

from datagen.crawl.urls import normalise

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_WS = re.compile(r"\s+")
_CONTROL_BYTES = bytes(b for b in range(32) if b < 9 or 13 < b)
_LICENSE_HINT = re.compile(r"creativecommons\.org/(licenses|publicdomain)/|/licen[cs]e", re.I)


@dataclass
class Extracted:
    title: str = ""
    text: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)  # (normalised url, anchor text)
    canonical: str | None = None
    license: str | None = None
    language: str | None = None
    noindex: bool = False
    nofollow: bool = False
    html: str | None = None
    encoding: str = ""

    @cached_property
    def content_hash(self) -> str:
        """Computed once (the crawler asks three times); a worker process computes it
        before the page travels back, so the crawler's own process does not."""
        return text_hash(self.text)


def text_hash(text: str) -> str:
    return hashlib.sha256(_WS.sub(" ", text).strip().encode()).hexdigest()[:32]


def detect_charset(body: bytes, content_type_header: str = "") -> str:
    """BOM, then the HTTP header, then <meta charset>, then UTF-8 if it decodes, then a guess."""
    for bom, enc in _BOMS:
        if body.startswith(bom):
            return enc
    for enc in (_header_charset(content_type_header), _meta_charset(body)):
        if enc and _known(enc):
            return enc
    try:
        body[:200_000].decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= 199_996 and len(body) > 200_000:  # a cut multi-byte character at the end
            return "utf-8"
    from charset_normalizer import from_bytes
    best = from_bytes(body[:200_000]).best()
    return best.encoding if best else "cp1252"


def _header_charset(value: str) -> str | None:
    m = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", value or "", re.I)
    return m.group(1) if m else None


def _meta_charset(body: bytes) -> str | None:
    m = _META_CHARSET.search(body[:4096])
    return m.group(1).decode("ascii", "replace") if m else None


def _known(enc: str) -> bool:
    try:
        codecs.lookup(enc)
        return True
    except LookupError:
        return False


def decode_body(body: bytes, content_type_header: str = "") -> tuple[str, str]:
    enc = detect_charset(body, content_type_header)
    # ISO-8859-1 labels mean windows-1252 in every browser (WHATWG encoding standard)
    if codecs.lookup(enc).name in ("iso8859-1", "ascii"):
        enc = "cp1252"
    return body.decode(enc, errors="replace"), enc


def looks_binary(body: bytes) -> bool:
    """NUL bytes or many control characters in the head: not a text document."""
    head = body[:4096]
    if b"\x00" in head and not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return bool(head) and controls / len(head) > 0.05


_SCOPED = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*:\s*(.*)$")
_VALUED = {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}


def robots_directives(value: str, agent: str = "hardqa-datagen") -> tuple[bool, bool]:
    """(noindex, nofollow) from a robots meta content or X-Robots-Tag value.

    `otherbot: noindex` applies to otherbot only; unscoped directives apply to everyone.
    """
    tokens: set[str] = set()
    scope = None  # None: all agents
    for part in (value or "").split(","):
        m = _SCOPED.match(part)
        if m and m.group(1).lower() not in _VALUED:
            scope, part = m.group(1).lower(), m.group(2)
        if scope in (None, "*", agent.lower()):
            tokens.update(t.lower() for t in part.split())
    none = "none" in tokens
    return none or "noindex" in tokens, none or "nofollow" in tokens


def extract_html(text: str, url: str, *, include_comments: bool = False,
                 favor_recall: bool = False) -> Extracted:
    out = Extracted()
    tree = load_html(text)
    if tree is None:
        return out
    base = _base_url(tree, url)
    _read_head(tree, base, out)
    out.links = _links(tree, base)
    body = trafilatura.extract(tree, url=url, include_comments=include_comments,
                               favor_recall=favor_recall, output_format="txt")
    if not body:  # short or oddly built pages: trafilatura's own simpler fallback
        body = trafilatura.baseline(tree)[1]
    out.text = body or ""
    return out


def _base_url(tree, url: str) -> str:
    href = tree.xpath("//base/@href")
    return normalise(href[0], base=url) or url if href else url


def _read_head(tree, base: str, out: Extracted) -> None:
    for content in tree.xpath("//meta[@name and @content]"):
        if content.get("name", "").lower() in ("robots", "hardqa-datagen"):
            noindex, nofollow = robots_directives(content.get("content", ""))
            out.noindex |= noindex
            out.nofollow |= nofollow
    canon = tree.xpath("//link[@rel='canonical']/@href")
    out.canonical = normalise(canon[0], base=base) if canon else None
    title = tree.xpath("//title/text()") or tree.xpath("//h1//text()")
    out.title = _WS.sub(" ", " ".join(title[:1])).strip()
    out.license = _license(tree, base)
    lang = tree.xpath("/html/@lang")
    out.language = lang[0].strip() or None if lang else None


def _license(tree, base: str) -> str | None:
    hrefs = tree.xpath("//*[@rel='license' or contains(concat(' ', @rel, ' '), ' license ')]/@href")
    if hrefs:
        return normalise(hrefs[0], base=base) or hrefs[0]
    metas = tree.xpath("//meta[@name='license' or @name='dc.rights' or @name='DC.rights' "
                       "or @property='og:license']/@content")
    if metas:
        return metas[0].strip() or None
    cc = [h for h in tree.xpath("//a/@href") if _LICENSE_HINT.search(h)]
    return cc[0] if cc and "creativecommons" in cc[0] else None


def _links(tree, base: str) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for a in tree.iter("a"):
        href = a.get("href")
        if not href or href.startswith(("javascript:", "mailto:", "tel:", "#")):
            continue
        if "nofollow" in (a.get("rel") or "").lower().split():
            continue
        url = normalise(href, base=base)
        if url and url not in seen:
            seen[url] = _WS.sub(" ", a.text_content()).strip()
    return list(seen.items())


def extract_text_file(text: str, url: str, markdown: bool) -> Extracted:
    """Plain text and Markdown are their own main text; the first line is the title."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    out = Extracted(title=first.lstrip("#").strip()[:300], text=text.strip())
    if markdown:
        links = {}
        for anchor, href in _MD_LINK.findall(text):
            u = normalise(href, base=url)
            if u and u not in links:
                links[u] = anchor
        out.links = list(links.items())
    return out


def process_body(body: bytes, content_type: str | None, content_type_header: str,
                 x_robots_tag: str, url: str, include_comments: bool, favor_recall: bool,
                 keep_html: bool) -> Extracted | str:
    """A fetched body -> Extracted, or the reason it is not a usable document.

    A plain function of plain arguments, so it can run in a worker process.
    """
    if looks_binary(body):
        return "binary_content"
    text, enc = decode_body(body, content_type_header)
    if content_type in ("text/plain", "text/markdown"):
        page = extract_text_file(text, url, content_type == "text/markdown" or url.endswith(".md"))
    else:
        page = extract_html(text, url, include_comments=include_comments,
                            favor_recall=favor_recall)
        page.html = text if keep_html else None
    page.encoding = enc
    noindex, nofollow = robots_directives(x_robots_tag)
    page.noindex |= noindex
    page.nofollow |= nofollow
    return page
