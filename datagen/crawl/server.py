"""A loopback web server for a folder (the demo world, test sites), with ETag/Last-Modified.

    with serve_folder(path) as base_url:   # http://127.0.0.1:<free port>
        ...

It binds 127.0.0.1 only. Requests are served from threads; `serve_forever` backs the
`datagen serve` command. Tests can pass their own handler class to `serve_handler`.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import http.server
import logging
import mimetypes
import threading
from functools import partial
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

log = logging.getLogger(__name__)

_TYPES = {".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
          ".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8",
          ".xml": "application/xml", ".json": "application/json"}


class StaticHandler(http.server.BaseHTTPRequestHandler):
    """GET/HEAD of files under `root`, with validators and 304s; quiet logging."""

    root: Path
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def __init__(self, *args, root: Path, **kwargs):
        self.root = root
        super().__init__(*args, **kwargs)

    def log_message(self, fmt, *args):  # noqa: D102 - route to logging, not stderr
        log.debug("%s " + fmt, self.address_string(), *args)

    def do_HEAD(self):
        self._serve(send_body=False)

    def do_GET(self):
        self._serve(send_body=True)

    def _resolve(self) -> Path | None:
        rel = unquote(urlsplit(self.path).path).lstrip("/")
        path = (self.root / rel).resolve()
        if path.is_dir():
            path = path / "index.html"
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        return path

    def _serve(self, send_body: bool) -> None:
        path = self._resolve()
        if path is None:
            self._send(404, b"<html><body><h1>Not found</h1></body></html>", "text/html", send_body)
            return
        data = path.read_bytes()
        stat = path.stat()
        etag = '"' + hashlib.md5(data).hexdigest()[:16] + '"'
        last_mod = email.utils.formatdate(stat.st_mtime, usegmt=True)
        if self._not_modified(etag, stat.st_mtime):
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        ctype = _TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] \
            or "application/octet-stream"
        self._send(200, data, ctype, send_body, {"ETag": etag, "Last-Modified": last_mod})

    def _not_modified(self, etag: str, mtime: float) -> bool:
        inm = self.headers.get("If-None-Match")
        if inm is not None:
            return etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*"
        ims = self.headers.get("If-Modified-Since")
        if ims:
            try:
                return int(mtime) <= email.utils.parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                return False
        return False

    def _send(self, status: int, data: bytes, ctype: str, send_body: bool,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if send_body:
            self.wfile.write(data)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        # clients hanging up early (deadlines, byte caps) are routine here, not errors
        log.debug("request from %s ended early", client_address, exc_info=True)


@contextlib.contextmanager
def serve_handler(handler_factory, port: int = 0) -> Iterator[str]:
    """Serve with any BaseHTTPRequestHandler factory on 127.0.0.1; yields the base URL."""
    server = _Server(("127.0.0.1", port), handler_factory)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="loopback-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def serve_folder(root: str | Path, port: int = 0, subprocess: bool = False):
    """Context manager: serve `root` on loopback; yields the base URL (no trailing slash).

    subprocess=True runs the server in its own Python process: a crawler in this process
    then doesn't share the GIL with it (several times faster for a whole-site crawl).
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no such folder: {root}")
    if subprocess:
        return _serve_subprocess(root, port)
    return serve_handler(partial(StaticHandler, root=root), port)


@contextlib.contextmanager
def _serve_subprocess(root: Path, port: int) -> Iterator[str]:
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "datagen.crawl._serve_main", str(root), str(port)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()  # "READY <url>" once it listens
        if not line.startswith("READY "):
            raise OSError(f"loopback server for {root} did not start: {line or proc.poll()}")
        yield line.split(" ", 1)[1]
    finally:
        proc.stdin.close()
        proc.terminate()  # only the process this call started
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve_forever(root: str | Path, port: int = 8000, on_ready=None) -> None:
    root = Path(root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no such folder: {root}")
    server = _Server(("127.0.0.1", port), partial(StaticHandler, root=root))
    if on_ready:
        on_ready(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        server.serve_forever()
    finally:
        server.server_close()

