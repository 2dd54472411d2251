"""Web archives: a WARC written with warcio ingests to exactly what an HTTP crawl of the same
site stores; --warc-out archives a crawl that re-ingests to the same pages; gzipped sitemaps."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import shutil
from functools import partial

import pytest

import warehouse
from datagen.crawl import Crawler, run_crawl, serve_folder, serve_handler
from datagen.crawl.summary import reason_code
from datagen.crawl.server import StaticHandler
from tests.crawl.conftest import demo_world, fast_config

pytestmark = pytest.mark.integration
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
PAGE_COLUMNS = ("url", "final_url", "title", "text", "content_hash", "links", "license",
                "language", "etag", "html")


class SiteWithExtras(StaticHandler):
    """The demo world plus a redirect and a PDF (a 404 comes free)."""

    target = ""

    def do_GET(self):
        if self.path == "/moved":
            self.send_response(301)
            self.send_header("Location", self.target)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/report.pdf":
            self._send(200, PDF, "application/pdf", True)
        else:
            super().do_GET()


def _extras_seeds(base: str) -> list[str]:
    return [base + "/index.html", base + "/moved", base + "/missing.html", base + "/report.pdf"]


def _pages(wh) -> dict[str, tuple]:
    rows = wh.sql(f"SELECT {', '.join(PAGE_COLUMNS)} FROM pages").to_pylist()
    return {r["url"]: tuple(str(r[c]) for c in PAGE_COLUMNS) for r in rows}


def _reasons(wh) -> dict[str, tuple]:
    rows = wh.sql("SELECT url, final_url, http_status, outcome, reason FROM fetches").to_pylist()
    return {r["url"]: (r["final_url"], r["http_status"], r["outcome"], r["reason"]) for r in rows}


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    return demo_world(tmp_path_factory, 60, seed=5)  # small: each test crawls it whole


@pytest.fixture(scope="module")
def http_crawl(world_dir, tmp_path_factory):
    """One HTTP crawl of the demo world + extras, archived with --warc-out (small files)."""
    out, world = world_dir
    tmp = tmp_path_factory.mktemp("warc")
    target = sorted(world, key=lambda e: e.path)[0].path
    handler = type("H", (SiteWithExtras,), {"target": target})
    wh = warehouse.open(tmp / "wh_http")
    with serve_handler(partial(handler, root=out.resolve())) as base:
        # one worker: the frontier order (index first) is the archive's order, so a
        # redirect meets its target as already seen on both sides
        run_crawl(fast_config(_extras_seeds(base), global_concurrency=1, extract_processes=1,
                              warc_out=str(tmp / "warcs"), warc_max_bytes=60_000), wh)
    yield base, out, world, target, tmp, _pages(wh), _reasons(wh)
    wh.close()


def _write_library_warc(path, base: str, out, target: str) -> None:
    """The same site as an archive, written with warcio alone (not with our writer)."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=True)

        def response(url_path, status, headers, body=b"", warc_headers=None):
            http = StatusAndHeaders(status, headers + [("Content-Length", str(len(body)))],
                                    protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(base + url_path, "response", payload=io.BytesIO(body),
                                                http_headers=http, warc_headers_dict=warc_headers))
        files = [out / "index.html"] + sorted((out / "wiki").glob("*.html"))
        for f in files:
            data = f.read_bytes()
            etag = '"' + hashlib.md5(data).hexdigest()[:16] + '"'
            gz = gzip.compress(data)  # content-encoded, as servers send it
            response("/" + str(f.relative_to(out)), "200 OK",
                     [("Content-Type", "text/html; charset=utf-8"), ("ETag", etag),
                      ("Content-Encoding", "gzip")], gz)
        response("/moved", "301 Moved Permanently", [("Location", target)])
        response("/missing.html", "404 Not Found", [("Content-Type", "text/html")],
                 b"<html><body><h1>Not found</h1></body></html>")
        response("/report.pdf", "200 OK", [("Content-Type", "application/pdf")], PDF)
        response("/truncated.html", "200 OK", [("Content-Type", "text/html")],
                 b"<html><body><p>The first half of a page whose", {"WARC-Truncated": "length"})


def test_library_warc_ingests_to_what_an_http_crawl_stores(http_crawl, tmp_path):
    base, out, world, target, _, http_pages, http_reasons = http_crawl
    warc = tmp_path / "site.warc.gz"
    _write_library_warc(warc, base, out, target)
    with warehouse.open(tmp_path / "wh") as wh:
        run_crawl(fast_config([str(warc)], extract_processes=1), wh)
        pages, reasons = _pages(wh), _reasons(wh)
    assert pages == http_pages and len(pages) == len(world) + 1
    private = {u for u in http_reasons if "/private/" in u}
    assert set(http_reasons) - set(reasons) == private  # robots.txt kept it out of the archive
    assert set(reasons) - set(http_reasons) == {base + "/truncated.html"}
    for url in set(reasons) & set(http_reasons):  # (final_url, status, outcome, reason)
        assert reasons[url] == http_reasons[url], url
    assert reasons[base + "/moved"][:2] == (base + target, 200)  # the final response's
    assert reason_code(reasons[base + "/moved"][3]) == "duplicate_url"
    assert reasons[base + "/report.pdf"][2:] == ("skipped", "content_type: application/pdf")
    assert reasons[base + "/missing.html"][2:] == ("failed", "http_404")
    assert reasons[base + "/truncated.html"][2:] == ("failed", "truncated: length")


def test_warc_out_reingests_to_identical_pages(http_crawl, tmp_path):
    from warcio.archiveiterator import ArchiveIterator
    base, out, world, target, tmp, http_pages, _ = http_crawl
    files = sorted((tmp / "warcs").glob("*.warc.gz"))
    assert len(files) > 1  # rotated at warc_max_bytes
    types, concurrent, ips = [], 0, set()
    for f in files:
        with open(f, "rb") as fh:
            for rec in ArchiveIterator(fh):
                types.append(rec.rec_type)
                concurrent += rec.rec_headers.get_header("WARC-Concurrent-To") is not None
                ips.add(rec.rec_headers.get_header("WARC-IP-Address"))
    assert types.count("response") == types.count("request") == concurrent
    assert types.count("warcinfo") == len(files)
    assert "127.0.0.1" in ips
    with warehouse.open(tmp_path / "wh") as wh:
        run_crawl(fast_config([str(tmp / "warcs")], extract_processes=1), wh)
        assert _pages(wh) == http_pages


def test_a_cut_archive_keeps_the_records_before_the_cut(http_crawl, tmp_path):
    base, out, world, target, _, http_pages, _ = http_crawl
    whole = tmp_path / "whole.warc.gz"
    _write_library_warc(whole, base, out, target)
    data = whole.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[: len(data) // 2])
    with warehouse.open(tmp_path / "wh") as wh:
        summary = run_crawl(fast_config([str(tmp_path / "c*.warc.gz")], extract_processes=0), wh)
        pages, reasons = _pages(wh), _reasons(wh)
    assert 0.3 * len(http_pages) < len(pages) < 0.7 * len(http_pages)
    assert all(pages[u] == http_pages[u] for u in pages)
    # one row names the cut file; where the cut falls inside a response (it does in some
    # worlds: the half-way byte depends on the pages), that page's row fails as well
    cut_rows = [u for u, r in reasons.items() if r[3].startswith("warc_error")]
    file_rows = [u for u in cut_rows if u.startswith("file:")]
    page_rows = [u for u in cut_rows if not u.startswith("file:")]
    assert file_rows == [cut.resolve().as_uri()]
    assert len(page_rows) <= 1 and set(page_rows) <= set(http_pages) - set(pages)
    assert summary.by_reason[("failed", "warc_error")] == len(cut_rows)
    # max_pages ends the ingestion early, with no row for the records left unread
    small = asyncio.run(Crawler(fast_config([str(whole)], max_pages=5, global_concurrency=2,
                                            extract_processes=0), None).run())
    assert small.stored == 5 and small.attempted < 10


def test_gzipped_sitemap_index(world_dir, tmp_path):
    out, world = world_dir
    site = tmp_path / "site"
    site.mkdir()
    paths = sorted(e.path for e in world)
    half = len(paths) // 2
    for name, chunk in (("sitemap-a.xml.gz", paths[:half]), ("sitemap-b.xml.gz", paths[half:])):
        urls = "".join(f"<url><loc>{p}</loc></url>" for p in chunk)
        (site / name).write_bytes(gzip.compress(
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            f"{urls}</urlset>".encode()))
    (site / "sitemap_index.xml").write_text(
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>/sitemap-a.xml.gz</loc></sitemap>"
        "<sitemap><loc>/sitemap-b.xml.gz</loc></sitemap></sitemapindex>")
    shutil.copytree(out / "wiki", site / "wiki")
    with serve_folder(site) as base:
        summary = asyncio.run(Crawler(fast_config([base + "/sitemap_index.xml"], max_depth=0),
                                      None).run())
    assert summary.stored == len(world) and summary.failed == 0


def test_cli_ingests_a_warc_and_refuses_a_file_as_warc_out(http_crawl, tmp_path, capsys):
    from datagen.cli import main
    base, out, world, target, _, http_pages, _ = http_crawl
    warc = tmp_path / "site.warc.gz"
    _write_library_warc(warc, base, out, target)
    assert main(["crawl", str(warc), "-w", str(tmp_path / "wh")]) == 0
    assert f"stored {len(http_pages)}" in capsys.readouterr().out
    assert main(["crawl", str(warc), "--warc-out", str(warc), "-w", str(tmp_path / "wh")]) == 2
    assert "is a file" in capsys.readouterr().err
