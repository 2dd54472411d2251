"""Fixtures for the verifiers tests: one embedding model per session, a loopback
chat-completions server, and helpers to store pages and questions."""

from __future__ import annotations

import datetime as dt
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(scope="session")
def embedder():
    from verifiers.dedup import SentenceEmbedder
    return SentenceEmbedder()


class ChatServer:
    """A real HTTP server on 127.0.0.1 that answers /v1/chat/completions like vLLM does.

    ``reply`` maps the prompt text to the assistant's content; ``requests`` keeps every body.
    """

    def __init__(self) -> None:
        self.reply = lambda prompt: '{"equivalent": true}'
        self.requests: list[dict] = []
        self.status = 200
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                prompt = body["messages"][-1]["content"]
                payload = {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": server.reply(prompt)}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(payload if server.status == 200 else {"error": "boom"}).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def chat_server():
    server = ChatServer()
    yield server
    server.close()


def make_page(url: str, title: str, text: str):
    from warehouse import PageRecord, content_id
    return PageRecord(url=url, title=title, text=text, content_hash=content_id(text),
                      fetched_at=dt.datetime.now(dt.timezone.utc))


def make_question(qid: str, question: str, answer: str, evidence=(), aliases=(), source_urls=()):
    from warehouse import Evidence, QuestionRecord
    return QuestionRecord(question_id=qid, question=question, answer=answer,
                          answer_aliases=tuple(aliases),
                          evidence=tuple(Evidence(u, q) for u, q in evidence),
                          source_urls=tuple(source_urls))
