"""A scripted OpenAI-compatible server on 127.0.0.1, for tests, benchmarks and demos.

`respond(body)` decides each /v1/chat/completions reply: a string (every choice says it), a
list (one string per choice) or a `Reply`, which can also inject faults: any status and
headers, a raw body (HTML, invalid UTF-8, an error object), a delay, a body that trickles,
a connection reset mid-body. `GET /v1/models` lists the models; `GET /stats` counts requests.
Run alone (from the repository root): `python -m tests.llm.loopback --port 8011 --latency 0.2` (an asyncio echo server
with the same replies, for benchmarks: `serve_echo`).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union


@dataclass
class Reply:
    """One scripted reply; the defaults make a well-formed chat.completion."""

    contents: list[str] | None = None
    finish_reasons: list[str] | None = None
    status: int = 200
    body: bytes | None = None  # sent as is, instead of a chat.completion
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0  # pause between 16-byte chunks of the body
    reset: bool = False  # close the connection halfway through the body
    drop: bool = False  # close the connection without a reply (a server that died)
    n_choices: int | None = None  # fewer choices than asked (None: as many as asked)


Respond = Callable[[dict[str, Any]], Union[str, list[str], Reply]]


def echo(body: dict[str, Any]) -> str:
    """The default responder: the last user message back."""
    return str(body["messages"][-1]["content"])[:200]


class LoopbackLLM:
    """The server, running on a daemon thread; `requests` keeps every chat body."""

    def __init__(self, respond: Respond = echo, models: tuple[str, ...] = ("loopback",),
                 latency_s: float = 0.0, port: int = 0):
        self.respond, self.models, self.latency_s = respond, models, latency_s
        self.requests: list[dict[str, Any]] = []
        self.models_requests = 0
        self.last_headers: dict[str, str] = {}
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()  # wakes handlers still sleeping out a delay
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # a handler still sleeping must not hold up close()
        self.httpd.request_queue_size = 256
        self.httpd.handle_error = lambda request, address: None  # resets are scripted here
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        return len(self.requests)

    def close(self) -> None:
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> "LoopbackLLM":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def reply_for(self, body: dict[str, Any]) -> Reply:
        out = self.respond(body)
        if isinstance(out, Reply):
            return out
        n = int(body.get("n") or 1)
        return Reply(contents=[out] * n if isinstance(out, str) else list(out))


def completion(body: dict[str, Any], reply: Reply) -> bytes:
    """A chat.completion JSON body for the scripted contents."""
    n = int(body.get("n") or 1)
    contents = reply.contents if reply.contents is not None else [""] * n
    k = reply.n_choices if reply.n_choices is not None else (n if contents else 0)
    finishes = reply.finish_reasons or ["stop"] * len(contents)
    choices = [{"index": i, "finish_reason": finishes[i % len(finishes)],
                "message": {"role": "assistant", "content": contents[i % len(contents)]}}
               for i in range(k)]
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    usage = {"prompt_tokens": prompt_chars // 4 + 1,
             "completion_tokens": sum(len(c["message"]["content"]) // 4 + 1 for c in choices)}
    return json.dumps({"id": "chatcmpl-loopback", "object": "chat.completion", "created": 0,
                       "model": body.get("model"), "choices": choices, "usage": usage}).encode()


def _handler(server: LoopbackLLM):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/").endswith("/models"):
                server.models_requests += 1
                data = {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]}
            elif self.path.startswith("/stats"):
                data = {"chat_requests": server.count, "models_requests": server.models_requests}
            else:
                return self._send(Reply(status=404, body=b'{"error": "not found"}'), b"")
            self._send(Reply(), json.dumps(data).encode())

        def do_POST(self):  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw)
            with server._lock:
                server.requests.append(body)
                server.last_headers = dict(self.headers)
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                reply = server.reply_for(body)
                server._closing.wait(server.latency_s + reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    return self.connection.shutdown(2)
                self._send(reply, reply.body if reply.body is not None else completion(body, reply))
            finally:
                with server._lock:
                    server.in_flight -= 1

        def _send(self, reply: Reply, data: bytes) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.end_headers()
            if reply.reset:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if reply.trickle_s:
                for i in range(0, len(data), 16):
                    self.wfile.write(data[i:i + 16])
                    self.wfile.flush()
                    time.sleep(reply.trickle_s)
                return
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Handler


async def serve_echo(port: int, latency_s: float, model: str) -> None:
    """The echo endpoint as one asyncio server (aiohttp): a thread per connection, as in
    `LoopbackLLM`, adds its own wake-up latency on a busy machine, which a benchmark of the
    client must not measure. Prints its base URL, then serves until cancelled."""
    import asyncio

    from aiohttp import web
    counts = {"chat": 0, "models": 0}

    async def chat(request):
        body = await request.json()
        counts["chat"] += 1
        await asyncio.sleep(latency_s)
        return web.Response(body=completion(body, Reply(contents=[echo(body)] * int(body.get("n") or 1))),
                            content_type="application/json")

    async def models(request):
        counts["models"] += 1
        return web.json_response({"object": "list", "data": [{"id": model, "object": "model"}]})

    async def stats(request):
        return web.json_response({"chat_requests": counts["chat"], "models_requests": counts["models"]})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/v1/models", models),
                    web.get("/stats", stats)])
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{bound}/v1", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    """Serve the echo responder until interrupted (a separate process for benchmarks)."""
    import asyncio
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--model", default="loopback")
    args = ap.parse_args(argv)
    from datagen.llm.client import new_event_loop
    try:  # uvloop where installed: the endpoint's own CPU must not be what a benchmark measures
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            runner.run(serve_echo(args.port, args.latency, args.model))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
