"""Web archives: read WARC files as fetched pages, and write what the crawler receives.

Reading streams one record at a time (warcio), so memory stays bounded whatever the size
of the archive: each `response` record becomes a `Fetched`, with the status, headers and
payload (transfer and content encodings undone, capped like a live fetch) that were
archived. Other record types (request, warcinfo, metadata, revisit) are not pages.

Writing: `WarcOut` appends a request and a response record for every HTTP response the
crawler receives, with the headers a replay needs (WARC-Target-URI, WARC-Date,
WARC-Record-ID, WARC-Concurrent-To, WARC-IP-Address, block and payload digests), to gzipped
WARC files that rotate at `max_bytes`.
"""

from __future__ import annotations

import io
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from datagen.crawl.config import CrawlConfig
from datagen.crawl.fetch import REDIRECTS, Fetched
from datagen.crawl.urls import normalise

WARC_SUFFIXES = (".warc", ".warc.gz")


def is_warc(path: str | Path) -> bool:
    return str(path).lower().endswith(WARC_SUFFIXES)


@dataclass
class Redirect:
    """An archived 3xx: its outcome depends on whether the target is in the archive too."""
    res: Fetched
    target: str


def read_warc(path: str | Path, cfg: CrawlConfig) -> Iterator[Fetched | Redirect]:
    """Each response record of one WARC file as a Fetched (or a Redirect), in file order.

    A file that ends mid-record (a cut download) ends with one failed row naming the file
    and the offset: the records before it are kept.
    """
    from warcio.archiveiterator import ArchiveIterator

    uri = Path(path).resolve().as_uri()
    last = 0  # offset of the last record read whole
    with open(path, "rb") as fh:
        records = ArchiveIterator(fh, no_record_parse=False)
        try:
            for record in records:
                item = None
                if record.rec_type == "response" and record.http_headers is not None:
                    item = _from_record(record, cfg)
                last = records.get_record_offset()  # reads the record to its end: after use
                if item is not None:
                    yield item
        except Exception as exc:  # warcio/zlib errors on a damaged file: one row, then stop
            yield _warc_error(uri, f"{type(exc).__name__}: {exc}", last)
            return
    if str(path).lower().endswith(".gz") and _ends_mid_member(path, last):
        # warcio stops quietly at a gzip member cut short (a partial download)
        yield _warc_error(uri, "the file ends inside a gzip member (cut short)", last)


def _warc_error(uri: str, what: str, offset: int) -> Fetched:
    return Fetched(uri, uri, outcome="failed",
                   reason=f"warc_error: {what} (after the record at byte {offset})")


def _ends_mid_member(path: str | Path, offset: int) -> bool:
    """True when the gzip members from `offset` to the end of the file do not all end."""
    import zlib
    pending = False
    with open(path, "rb") as fh:
        fh.seek(offset)
        d = zlib.decompressobj(31)
        while chunk := fh.read(1 << 20):
            while chunk:
                try:
                    d.decompress(chunk)
                except zlib.error:
                    return True
                pending = not d.eof
                if d.eof:
                    chunk, d = d.unused_data, zlib.decompressobj(31)
                else:
                    chunk = b""
    return pending


def _from_record(record, cfg: CrawlConfig) -> Fetched | Redirect | None:
    url = normalise(record.rec_headers.get_header("WARC-Target-URI") or "")
    if url is None:
        return None
    http = record.http_headers
    res = Fetched(url=url, final_url=url, attempts=1,
                  raw_bytes=int(record.rec_headers.get_header("Content-Length") or 0))
    res.status = _status(http.get_statuscode())
    res.headers = {k.lower(): v for k, v in http.headers}
    ctype = res.headers.get("content-type", "").split(";")[0].strip().lower()
    res.content_type = ctype or None
    if res.status in REDIRECTS and "location" in res.headers:
        target = normalise(res.headers["location"], base=url)
        if target is None:
            return _set(res, "failed", f"bad_redirect: {res.headers['location'][:200]}")
        res.final_url = target
        return Redirect(res, target)
    if res.status == 304:
        return _set(res, "skipped", "not_modified")
    if res.status != 200:
        return _set(res, "failed", f"http_{res.status}")
    if url.endswith("/robots.txt"):
        return _set(res, "skipped", "robots_txt")
    if ctype and ctype not in cfg.allowed_content_types:
        return _set(res, "skipped", f"content_type: {ctype}")
    truncated = record.rec_headers.get_header("WARC-Truncated")
    if truncated:
        return _set(res, "failed", f"truncated: {truncated}")
    return _read_payload(record, res, cfg)


def _read_payload(record, res: Fetched, cfg: CrawlConfig) -> Fetched:
    if res.raw_bytes > cfg.max_bytes:
        return _set(res, "failed", f"too_large: record of {res.raw_bytes} > {cfg.max_bytes} bytes")
    try:
        body = record.content_stream().read(cfg.max_decompressed_bytes + 1)
    except Exception as exc:  # a broken chunked or gzip body inside a sound record
        return _set(res, "failed", f"bad_encoding: {type(exc).__name__}: {exc}")
    if len(body) > cfg.max_decompressed_bytes:
        return _set(res, "failed", f"decompressed_too_large: over {cfg.max_decompressed_bytes} bytes")
    while record.raw_stream.read(1 << 16):  # what a decoder left (a gzip trailer)
        pass
    # warcio wraps the body in a LimitReader (its `limit`: bytes declared but not read) only
    # when the record has a usable Content-Length; otherwise raw_stream is the bare stream.
    # probe: warcio's stream type varies by record (third-party object, no declared member)
    if getattr(record.raw_stream, "limit", 0) > 0:  # fewer bytes than the record declares
        return _set(res, "failed", "warc_error: the record is cut short")
    res.body, res.outcome = body, "ok"
    return res


def _status(code) -> int | None:
    try:
        return int(code)
    except (TypeError, ValueError):
        return None


def _set(res: Fetched, outcome: str, reason: str) -> Fetched:
    res.outcome, res.reason, res.body = outcome, reason, None
    return res


def find_warcs(item: str) -> list[Path]:
    """The WARC files a seed names: the file, the WARCs under a folder, or a glob's matches."""
    import glob
    if any(ch in item for ch in "*?["):
        return sorted(Path(p) for p in glob.glob(os.path.expanduser(item), recursive=True)
                      if is_warc(p) and Path(p).is_file())
    path = Path(item).expanduser()
    if path.is_file():
        return [path] if is_warc(path) else []
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if is_warc(p) and p.is_file())
    return []


# ---- writing ------------------------------------------------------------------------------

class WarcOut:
    """Rotating gzipped WARC files: `<dir>/hardqa-<run>-<time>-<serial>.warc.gz`."""

    def __init__(self, folder: str | Path, run_id: str = "", max_bytes: int = 1_000_000_000):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.prefix = f"hardqa-{run_id or os.getpid()}-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
        self.max_bytes = max_bytes
        self.serial = itertools.count()
        self.paths: list[Path] = []
        self._fh = None
        self._writer = None

    def _open(self) -> None:
        from warcio.warcwriter import WARCWriter
        path = self.folder / f"{self.prefix}-{next(self.serial):05d}.warc.gz"
        self._fh = open(path, "wb")
        self._writer = WARCWriter(self._fh, gzip=True)
        self._writer.write_record(self._writer.create_warcinfo_record(
            path.name, {"software": "hardqa-datagen", "format": "WARC File Format 1.1"}))
        self.paths.append(path)

    def write(self, url: str, request_headers: list[tuple[str, str]], http_version: str,
              status: int, reason: str, headers: list[tuple[str, str]], raw_body: bytes,
              ip: str | None, truncated: bool) -> None:
        """One exchange: the request record and the response record, concurrent to each other."""
        from warcio.statusandheaders import StatusAndHeaders
        if self._writer is None:
            self._open()
        w = self._writer
        path = _request_target(url)
        req = w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=
                                   StatusAndHeaders(f"GET {path} {http_version}", request_headers,
                                                    is_http_request=True))
        warc_headers = {"WARC-IP-Address": ip} if ip else {}
        if truncated:
            warc_headers["WARC-Truncated"] = "length"
        resp = w.create_warc_record(url, "response", payload=io.BytesIO(raw_body),
                                    length=len(raw_body), warc_headers_dict=warc_headers,
                                    http_headers=StatusAndHeaders(f"{status} {reason}", headers,
                                                                  protocol=http_version))
        req.rec_headers.add_header("WARC-Concurrent-To", resp.rec_headers.get_header("WARC-Record-ID"))
        w.write_record(resp)
        w.write_record(req)
        if self._fh.tell() >= self.max_bytes:
            self.close()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh = self._writer = None


def _request_target(url: str) -> str:
    from urllib.parse import urlsplit
    p = urlsplit(url)
    return (p.path or "/") + (f"?{p.query}" if p.query else "")


def archived_headers(raw: list[tuple[bytes, bytes]], body_len: int) -> list[tuple[str, str]]:
    """The response headers as received, fitted to the bytes stored: the body is stored
    de-chunked (h11 undoes chunking), so Transfer-Encoding goes and Content-Length says
    how many bytes follow; Content-Encoding stays (the stored bytes are still encoded)."""
    out = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw
           if k.lower() not in (b"transfer-encoding", b"content-length")]
    out.append(("Content-Length", str(body_len)))
    return out
