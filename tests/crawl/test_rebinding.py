"""DNS rebinding: the crawler connects to the address its guard checked, on every hop.

The resolver is the seam: a host answers a public address first and 127.0.0.1 after. A
loopback server stands for the private network; a "network" under the pins records every
socket the crawler opens and reaches only the fake public addresses the test maps.
"""

from __future__ import annotations

import asyncio
import http.server
import ssl
import threading
from collections import defaultdict
from functools import partial

import httpcore
import pytest

from datagen.crawl import Crawler, serve_handler
from datagen.crawl.fetch import Fetcher
from datagen.crawl.urls import AddressGuard
from tests.crawl.conftest import fast_config

pytestmark = pytest.mark.integration
PUBLIC, PUBLIC_2 = "93.184.216.34", "93.184.216.35"


class ScriptedResolver:
    """Answers per host in turn (the last answer repeats); counts the lookups."""

    def __init__(self, answers: dict[str, list[list[str]]]):
        self.answers, self.calls = answers, defaultdict(int)

    async def __call__(self, host: str) -> list[str]:
        script = self.answers[host]
        self.calls[host] += 1
        return script[min(self.calls[host], len(script)) - 1]


class FakeNetwork(httpcore.AsyncNetworkBackend):
    """Records every connect; a mapped fake public address reaches a loopback port."""

    def __init__(self, routes: dict[str, int] | None = None):
        self.routes, self.connects = routes or {}, []
        self.real = httpcore.AnyIOBackend()

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        self.connects.append((host, port))
        if host not in self.routes:
            raise httpcore.ConnectError(f"no route to {host}")
        return await self.real.connect_tcp("127.0.0.1", self.routes[host], timeout=timeout)

    async def sleep(self, seconds):
        await self.real.sleep(seconds)


class Recorder(http.server.BaseHTTPRequestHandler):
    """Counts requests and their Host headers; /start redirects to `redirect_to`."""

    protocol_version = "HTTP/1.1"

    def __init__(self, *a, log: list, redirect_to: str = "", **kw):
        self.log, self.redirect_to = log, redirect_to
        super().__init__(*a, **kw)

    def log_message(self, *a):
        pass

    def do_GET(self):
        self.log.append((self.path, self.headers.get("Host")))
        if self.path == "/start" and self.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.redirect_to)
            body = b""
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            body = (b"<html><head><title>Inside</title></head><body><article><p>"
                    + b"The private network's page, which no crawler should read. " * 5
                    + b"</p></article></body></html>")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _crawl(url: str, resolver, network, **kw):
    cfg = fast_config([url], allow_private=False, respect_robots=False, max_retries=0, **kw)
    return asyncio.run(Crawler(cfg, None, resolver=resolver, network=network).run())


def test_rebinding_host_never_reaches_loopback():
    log: list = []
    with serve_handler(partial(Recorder, log=log)) as private:
        port = _port(private)
        resolver = ScriptedResolver({"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
        network = FakeNetwork()
        summary = _crawl(f"http://rebind.test:{port}/page.html", resolver, network)
    assert log == []  # the loopback server received nothing
    assert network.connects == [(PUBLIC, port)]  # the checked answer, not a second lookup
    assert resolver.calls["rebind.test"] == 1
    assert summary.by_reason[("failed", "connection_error")] == 1


def test_rebinding_on_a_redirect_hop_never_reaches_loopback():
    public_log: list = []
    private_log: list = []
    with serve_handler(partial(Recorder, log=private_log)) as private:
        port = _port(private)
        target = f"http://rebind.test:{port}/secret.html"
        with serve_handler(partial(Recorder, log=public_log, redirect_to=target)) as public:
            resolver = ScriptedResolver({"a.test": [[PUBLIC_2]],
                                         "rebind.test": [[PUBLIC], ["127.0.0.1"]]})
            network = FakeNetwork({PUBLIC_2: _port(public)})
            summary = _crawl(f"http://a.test:{_port(public)}/start", resolver, network,
                             same_host=False)
    assert public_log == [("/start", f"a.test:{_port(public)}")]  # Host header kept
    assert private_log == []
    assert network.connects == [(PUBLIC_2, _port(public)), (PUBLIC, port)]
    assert resolver.calls["rebind.test"] == 1
    assert summary.by_reason[("failed", "connection_error")] == 1


def test_private_first_answer_is_refused_before_any_connection():
    resolver = ScriptedResolver({"inside.test": [["10.0.0.7"], [PUBLIC]]})
    network = FakeNetwork()
    summary = _crawl("http://inside.test/x.html", resolver, network)
    assert network.connects == []
    assert summary.by_reason[("skipped", "private_address")] == 1


def test_pinned_connection_keeps_the_host_header(tmp_path):
    """allow_private: the answer checked first (loopback) is the one connected to."""
    log: list = []
    with serve_handler(partial(Recorder, log=log)) as server:
        port = _port(server)
        resolver = ScriptedResolver({"site.test": [["127.0.0.1"], ["10.255.255.1"]]})
        cfg = fast_config([f"http://site.test:{port}/a.html"], respect_robots=False)
        summary = asyncio.run(Crawler(cfg, None, resolver=resolver).run())
    assert summary.stored == 1
    assert log == [("/a.html", f"site.test:{port}")]


def _tls_pair(tmp_path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server context with a certificate for `name`, client context trusting its CA)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def cert(subject, issuer, key, sign_key, ca: bool, san=None):
        now = datetime.datetime.now(datetime.timezone.utc)
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(hours=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
        return b.sign(sign_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = cert(ca_name, ca_name, ca_key, ca_key, True)
    leaf = cert(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]), ca_name, key,
                ca_key, False, san=name)
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "leaf.pem").write_bytes(pem(leaf) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "leaf.pem")
    client = ssl.create_default_context(cadata=pem(ca).decode())
    return server, client


def test_https_to_a_pinned_address_verifies_the_host_name(tmp_path):
    server_ctx, client_ctx = _tls_pair(tmp_path, "secure.test")
    sni: list = []
    server_ctx.sni_callback = lambda sock, name, ctx: sni.append(name)
    log: list = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Recorder, log=log))
    httpd.socket = server_ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    port = httpd.server_address[1]
    try:
        resolver = ScriptedResolver({"secure.test": [["127.0.0.1"]],
                                     "other.test": [["127.0.0.1"]]})

        async def fetch(host: str):
            fetcher = Fetcher(fast_config([], max_retries=0),
                              guard=AddressGuard(True, resolver), ssl_context=client_ctx)
            try:
                return await fetcher.fetch(f"https://{host}:{port}/a.html")
            finally:
                await fetcher.aclose()
        ok = asyncio.run(fetch("secure.test"))
        wrong = asyncio.run(fetch("other.test"))  # same address, a name the cert lacks
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert ok.outcome == "ok" and ok.status == 200
    assert sni[0] == "secure.test" and log[0] == ("/a.html", f"secure.test:{port}")
    assert wrong.outcome == "failed" and len(log) == 1  # certificate name mismatch
