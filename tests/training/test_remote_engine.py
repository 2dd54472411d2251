"""The remote engine against a hostile loopback server that drops every reused connection:
each connection answers one request, then closes (or resets) on the next without a response,
which is what a client sees when the server's keep-alive timeout closes an idle pooled
connection just as the client reuses it (vLLM closes them after 5 s)."""

from __future__ import annotations

import asyncio
import json
import socket
import socketserver
import struct
import threading

import pytest

from training.api import GenerationRequest
from training.engines.remote_engine import RemoteInferenceEngine


class _OneRequestPerConnection(socketserver.StreamRequestHandler):
    """Answers the first request of a connection (keep-alive), drops the second unanswered:
    a plain close, or a reset (RST, as a closing socket with unread data sends)."""

    def handle(self):
        for n in range(2):
            head = self.rfile.readline().decode()
            if not head:
                return
            headers = {}
            while (line := self.rfile.readline().decode().strip()):
                key, _, value = line.partition(":")
                headers[key.lower()] = value.strip()
            self.rfile.read(int(headers.get("content-length", 0)))
            path = head.split()[1].split("?")[0]
            if n == 1:
                self.server.dropped.append(path)
                if self.server.reset:  # linger 0: close() sends RST, the client's read fails
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                return  # closed without a response
            self.server.served.append(path)
            self._answer(path)

    def _answer(self, path):
        if path == "/v1/completions":
            chunks = [{"choices": [{"token_ids": [7, 8], "finish_reason": None,
                                    "logprobs": {"token_logprobs": [-0.5, -0.25]}}]},
                      {"choices": [{"token_ids": [2], "finish_reason": "stop",
                                    "logprobs": {"token_logprobs": [-0.125]}}]}]
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        else:
            body = "{}"
        data = body.encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                         + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
        self.wfile.flush()


@pytest.fixture(params=["close", "reset"])
def hostile_server(request):
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _OneRequestPerConnection)
    server.daemon_threads = True
    server.served, server.dropped, server.reset = [], [], request.param == "reset"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_request_on_a_connection_the_server_closed_is_sent_again(hostile_server):
    engine = RemoteInferenceEngine(f"http://127.0.0.1:{hostile_server.server_address[1]}")
    try:
        asyncio.run(engine.pause())
        asyncio.run(engine.resume())
        [result] = engine.generate([GenerationRequest(prompt_ids=[1, 2], max_new_tokens=8)])
    finally:
        engine.close()
    # every request after the first met a dropped connection and was served on a new one
    assert hostile_server.served == ["/pause", "/abort_requests", "/resume", "/v1/completions"]
    assert hostile_server.dropped == ["/abort_requests", "/resume", "/v1/completions"]
    assert result.output_ids == [7, 8, 2]
    assert result.output_logprobs == [-0.5, -0.25, -0.125]
    assert result.finish_reason == "stop"


class _DyingEngine(socketserver.StreamRequestHandler):
    """Streams one token, then the chunk a vLLM server streams when its engine core dies."""

    def handle(self):
        while self.rfile.readline().strip():
            pass
        chunks = [{"choices": [{"token_ids": [7], "finish_reason": None,
                                "logprobs": {"token_logprobs": [-0.5]}}]},
                  {"error": {"message": "EngineCore encountered an issue.", "code": 500}}]
        body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


def test_an_error_the_server_streams_is_raised_with_its_message():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _DyingEngine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    engine = RemoteInferenceEngine(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        with pytest.raises(RuntimeError, match="streamed an error.*EngineCore encountered"):
            engine.generate([GenerationRequest(prompt_ids=[1, 2], max_new_tokens=8)])
    finally:
        engine.close()
        server.shutdown()
        server.server_close()
