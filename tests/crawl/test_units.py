"""URL normalisation, scope, the address guard, charset detection and robots directives."""

from __future__ import annotations

import asyncio
import re

import pytest

from datagen.crawl.extract import (
    decode_body, detect_charset, extract_html, looks_binary, robots_directives, text_hash,
)
from datagen.crawl.urls import AddressGuard, Scope, normalise


@pytest.mark.parametrize("raw,base,expected", [
    ("HTTP://Example.COM:80/a/./b/../c", None, "http://example.com/a/c"),
    ("https://example.com:443/x#frag", None, "https://example.com/x"),
    ("https://example.com:8443/x?", None, "https://example.com:8443/x"),
    ("/p?utm_source=t&id=3&fbclid=z", "http://h.org/q/r", "http://h.org/p?id=3"),
    ("%7euser/%41b%2f", "http://h.org/", "http://h.org/~user/Ab%2F"),
    ("../up.html", "http://h.org/a/b/c.html", "http://h.org/a/up.html"),
    ("mailto:x@y.z", None, None),
    ("javascript:void(0)", None, None),
    ("http://[::1]:8000/x", None, "http://[::1]:8000/x"),
])
def test_normalise(raw, base, expected):
    assert normalise(raw, base=base) == expected


def test_normalise_is_idempotent():
    for u in ["http://h.org/%C3%89mile_Zola.html", "http://h.org/a%20b?x=1&y=%7e"]:
        once = normalise(u)
        assert normalise(once) == once


def test_scope_rules():
    s = Scope(hosts={"a.org"}, include=(re.compile(r"/wiki/"),),
              exclude=(re.compile(r"\.pdf$"),), max_depth=2)
    assert s.refusal("http://a.org/wiki/x", 1) is None
    assert s.refusal("http://b.org/wiki/x", 1) == "other_host"
    assert s.refusal("http://a.org/other", 1) == "not_included"
    assert s.refusal("http://a.org/wiki/x.pdf", 1) == "excluded"
    assert s.refusal("http://a.org/wiki/x", 3) == "max_depth"
    p = Scope(prefixes=("http://a.org/docs/",))
    assert p.refusal("http://a.org/docs/1") is None
    assert p.refusal("http://a.org/blog/1") == "outside_prefix"


@pytest.mark.parametrize("host", ["127.0.0.1", "10.1.2.3", "192.168.0.9", "169.254.169.254",
                                  "[::1]", "[fe80::1]", "0.0.0.0", "localhost"])
def test_private_addresses_are_refused(host):
    guard = AddressGuard(allow_private=False)
    reason = asyncio.run(guard.refusal(f"http://{host}/x"))
    assert reason and reason.startswith("private_address")
    assert asyncio.run(AddressGuard(allow_private=True).refusal(f"http://{host}/x")) is None


def test_public_literal_address_is_allowed():
    assert asyncio.run(AddressGuard(False).refusal("http://93.184.216.34/")) is None


@pytest.mark.parametrize("body,header,expected", [
    ("Grüße".encode("utf-8"), "", "utf-8"),
    ("Grüße".encode("latin-1"), "text/html; charset=ISO-8859-1", "ISO-8859-1"),
    (b'<meta charset="koi8-r">' + "привет".encode("koi8-r"), "text/html", "koi8-r"),
    (b"\xef\xbb\xbfhello", "text/html; charset=latin-1", "utf-8-sig"),
])
def test_charset_order(body, header, expected):
    assert detect_charset(body, header) == expected


def test_latin1_label_decodes_as_windows_1252():
    text, enc = decode_body("“quoted”".encode("cp1252"), "text/html; charset=iso-8859-1")
    assert text == "“quoted”" and enc == "cp1252"


def test_content_sniffing_without_any_label():
    body = ("Съешь же ещё этих мягких французских булок, да выпей чаю. " * 5).encode("cp1251")
    text, _ = decode_body(body, "text/html")
    assert text.startswith("Съешь же ещё")


def test_binary_sniffing():
    assert looks_binary(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert not looks_binary("<html><body>plain ünïcode text</body></html>".encode())


@pytest.mark.parametrize("value,expected", [
    ("noindex", (True, False)), ("nofollow, noarchive", (False, True)),
    ("none", (True, True)), ("index, follow", (False, False)), ("", (False, False)),
    ("otherbot: noindex, nofollow", (False, False)),
    ("otherbot: noindex, hardqa-datagen: nofollow", (False, True)),
    ("unavailable_after: 2030-01-01, noindex", (True, False)),
    ("NOINDEX,NOFOLLOW", (True, True)),
])
def test_robots_directives(value, expected):
    assert robots_directives(value) == expected


def test_extract_html_reads_head_and_links():
    page = extract_html(
        '<html lang="de"><head><title>T</title><link rel="canonical" href="/c.html">'
        '<meta name="robots" content="noindex"><link rel="license" href="/lic"></head><body>'
        '<article><p>' + "Ein langer Absatz über die Stadt und ihre Geschichte. " * 8 +
        '</p><a href="b.html#x">Next <b>page</b></a><a href="/n" rel="nofollow">skip</a>'
        '<a href="mailto:a@b.c">mail</a></article></body></html>', "http://h.org/a/p.html")
    assert page.title == "T" and page.language == "de" and page.noindex
    assert page.canonical == "http://h.org/c.html"
    assert page.license == "http://h.org/lic"
    assert page.links == [("http://h.org/a/b.html", "Next page")]
    assert "Ein langer Absatz" in page.text
    assert text_hash("a  b\n") == text_hash("a b")


@pytest.mark.parametrize("text,expected", [
    ("User-agent: *\nCrawl-delay: 0.5\n", 0.5),
    ("User-agent: other\nCrawl-delay: 9\n\nUser-agent: *\nDisallow: /x\nCrawl-delay: 2\n", 2.0),
    ("User-agent: hardqa-datagen\nCrawl-delay: 3 # ours\nUser-agent: *\nCrawl-delay: 1\n", 3.0),
    ("User-agent: *\nCrawl-delay: soon\n", 0.0),
    ("", 0.0),
])
def test_crawl_delay_parsing(text, expected):
    from datagen.crawl.robots import crawl_delay
    assert crawl_delay(text.splitlines(), "hardqa-datagen") == expected
