"""A real loopback HTTP server whose routes are the hostile cases a crawler meets."""

from __future__ import annotations

import functools
import http.server
import threading
import time
import zlib
from functools import partial

GOOD = ("<html><head><title>Good page</title></head><body><main><h1>Good page</h1>"
        "<p>The lighthouse keeper recorded every passing ship in a leather ledger for forty "
        "years, noting the weather, the hour and the flag of each vessel.</p>"
        "<p>His ledgers are now kept in the harbour museum, where visitors can read the "
        "entries for the great storm of the winter.</p></main></body></html>")
MALFORMED = ("<html><head><title>Broken markup</title><body><div><p>Unclosed paragraph about "
             "the <b>copper mines of the northern valley, which produced ore for two centuries"
             "<p>Another paragraph <i>never closed, describing how the miners built terraced "
             "houses along the river bank.</div></span><table><tr><td>stray cell</body>")
LATIN1_TEXT = ("Das Café Müller in Köln servierte Kaffee und Kuchen für die Gäste aus aller Welt; "
               "die Besitzerin erzählte gern Geschichten über die Straße.")
CP1252_TEXT = ("The café’s naïve owner said “welcome” to every guest – and the guests, "
               "in turn, praised the crème brûlée served after dinner.")
CYRILLIC_TEXT = ("Старый город расположен на берегу реки. В центре города находится "
                 "площадь с собором и ратушей. Жители города гордятся своей историей, "
                 "а туристы приезжают посмотреть на древние стены и узкие улицы.")


def _page(title: str, body: str, head: str = "") -> str:
    return (f"<html><head><title>{title}</title>{head}</head><body><main><h1>{title}</h1>"
            f"{body}</main></body></html>")


@functools.lru_cache(maxsize=2)
def gzip_bomb(decompressed_mb: int) -> bytes:
    """A small gzip stream that inflates to `decompressed_mb` MB of spaces."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * (1 << 20)
    parts = [comp.compress(b"<html><body>")]
    parts += [comp.compress(chunk) for _ in range(decompressed_mb)]
    parts.append(comp.flush())
    return b"".join(parts)


class HostileState:
    """Shared by all handler threads: request log and per-route counters."""

    def __init__(self, bomb_mb: int = 64, huge_mb: int = 20):
        self.lock = threading.Lock()
        self.hits: list[tuple[float, str]] = []
        self.counts: dict[str, int] = {}
        self.bomb = gzip_bomb(bomb_mb)
        self.huge_mb = huge_mb

    def hit(self, path: str) -> int:
        with self.lock:
            self.hits.append((time.monotonic(), path))
            self.counts[path] = self.counts.get(path, 0) + 1
            return self.counts[path]

    def times(self, path: str) -> list[float]:
        return [t for t, p in self.hits if p == path]


INDEX_LINKS = ["/good.html", "/redirect-loop/a", "/huge.html", "/huge-declared.html",
               "/binary.html", "/bomb.html", "/slow.html", "/flaky.html", "/limited.html",
               "/private/secret.html", "/malformed.html", "/latin1.html", "/cp1252.html",
               "/cyrillic.html", "/noindex-header.html", "/nofollow.html", "/report.pdf",
               "/dup.html", "/moved", "/missing.html", "/variant.html", "/reset.html"]


class HostileHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def __init__(self, *args, state: HostileState, **kwargs):
        self.state = state
        super().__init__(*args, **kwargs)

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = self.path.split("?")[0]
        n = self.state.hit(path)
        route = ROUTES.get(path)
        if route is None:
            return self.send(404, b"not found", "text/plain")
        route(self, n)

    def send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
             headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def send_html(self, html: str, headers: dict | None = None) -> None:
        self.send(200, html.encode("utf-8"), headers=headers)

    def redirect(self, to: str) -> None:
        self.send(302, b"", headers={"Location": to})

    def stream_until_close(self, ctype: str, chunks) -> None:
        """No Content-Length: the body ends when the connection closes (a read-to-EOF body)."""
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the crawler hung up, as it should


def _robots(h, n):
    h.send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")


def _index(h, n):
    links = "".join(f'<li><a href="{u}">{u}</a></li>' for u in INDEX_LINKS)
    h.send_html(_page("Hostile index", f"<p>Every case a crawler should survive.</p><ul>{links}</ul>"))


def _huge(h, n):
    block = (b"<p>" + b"lorem ipsum dolor sit amet " * 37 + b"</p>\n")[:1024]
    h.stream_until_close("text/html", (block for _ in range(h.state.huge_mb * 1024)))


def _huge_declared(h, n):
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", str(h.state.huge_mb << 20))
    h.end_headers()  # a crawler must refuse from the header alone; we send nothing
    h.close_connection = True


def _binary(h, n):
    body = bytes((i * 7919 + 13) % 256 for i in range(50_000))
    h.send(200, body, "text/html")


def _bomb(h, n):
    h.send(200, h.state.bomb, "text/html", headers={"Content-Encoding": "gzip"})


def _slow(h, n):
    body = _page("Slow page", "<p>" + "s" * 100 + "</p>").encode()
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    try:
        for i in range(min(len(body), 30)):  # one byte per second (bounded: the thread ends)
            h.wfile.write(body[i:i + 1])
            h.wfile.flush()
            time.sleep(1.0)
    except (BrokenPipeError, ConnectionResetError):
        pass
    h.close_connection = True


def _flaky(h, n):
    if n <= 2:
        return h.send(500, b"temporary failure", "text/plain")
    h.send_html(_page("Flaky page", "<p>This page failed twice with a server error before it "
                      "finally answered, and the crawler kept it after retrying patiently.</p>"))


def _limited(h, n):
    if n == 1:
        return h.send(429, b"slow down", "text/plain", headers={"Retry-After": "1"})
    h.send_html(_page("Rate limited page", "<p>The server asked the crawler to wait one second "
                      "before trying again, and the crawler respected that request.</p>"))


def _reset(h, n):
    if n == 1:  # hang up without answering: a connection error, worth a retry
        h.close_connection = True
        return
    h.send_html(_page("Reset once", "<p>The first connection to this page was dropped without "
                      "an answer; the second attempt received this text in full.</p>"))


def _private(h, n):
    h.send_html(_page("Secret", "<p>robots.txt disallows this page.</p>"))


def _malformed(h, n):
    h.send_html(MALFORMED)


def _latin1(h, n):
    html = _page("Latin-1 page", f"<p>{LATIN1_TEXT}</p>")
    h.send(200, html.encode("latin-1"), "text/html; charset=iso-8859-1")


def _cp1252(h, n):
    html = _page("Windows-1252 page", f"<p>{CP1252_TEXT}</p>",
                 head='<meta charset="windows-1252">')
    h.send(200, html.encode("cp1252"), "text/html")


def _cyrillic(h, n):
    html = _page("Город", "".join(f"<p>{CYRILLIC_TEXT}</p>" for _ in range(3)))
    h.send(200, html.encode("cp1251"), "text/html")


def _noindex_header(h, n):
    h.send_html(_page("Hidden by header", "<p>An X-Robots-Tag header forbids indexing this "
                      "page, so the crawler must not store it anywhere.</p>"),
                headers={"X-Robots-Tag": "noindex"})


def _nofollow(h, n):
    h.send_html(_page("No follow", "<p>This page asks crawlers not to follow its links, though "
                      "it may itself be stored as an ordinary page of the site.</p>"
                      '<a href="/only-linked-from-nofollow.html">hidden</a>',
                      head='<meta name="robots" content="nofollow">'))


def _pdf(h, n):
    h.send(200, b"%PDF-1.4 fake", "application/pdf")


def _dup(h, n):
    h.send_html(GOOD.replace("<title>Good page</title>", "<title>Copy</title>"))


ROUTES = {
    "/robots.txt": _robots, "/": _index, "/index.html": _index,
    "/good.html": lambda h, n: h.send_html(GOOD),
    "/redirect-loop/a": lambda h, n: h.redirect("/redirect-loop/b"),
    "/redirect-loop/b": lambda h, n: h.redirect("/redirect-loop/a"),
    "/huge.html": _huge, "/huge-declared.html": _huge_declared, "/binary.html": _binary,
    "/bomb.html": _bomb, "/slow.html": _slow, "/flaky.html": _flaky, "/limited.html": _limited,
    "/private/secret.html": _private, "/malformed.html": _malformed, "/latin1.html": _latin1,
    "/cp1252.html": _cp1252, "/cyrillic.html": _cyrillic, "/noindex-header.html": _noindex_header,
    "/nofollow.html": _nofollow, "/only-linked-from-nofollow.html": lambda h, n: h.send_html(GOOD),
    "/reset.html": _reset, "/report.pdf": _pdf, "/dup.html": _dup, "/moved": lambda h, n: h.redirect("/good.html"),
    "/variant.html": lambda h, n: h.send_html(
        GOOD.replace("</head>", '<link rel="canonical" href="/good.html"></head>')),
}


def handler_factory(state: HostileState):
    return partial(HostileHandler, state=state)
