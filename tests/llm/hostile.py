"""A hostile OpenAI-compatible endpoint: a competent model behind a server that misbehaves the
way real ones do, attempt by attempt (a retry may well succeed).

Each chat request draws one fate from `FAULT_SHARES` (seeded, so a run is repeatable up to
thread order): a 500 with an HTML page, a 429 with Retry-After, a 200 whose body is not JSON,
a completion cut at max_tokens (finish_reason length), a connection dropped before or during
the reply, prose instead of the JSON asked for, or a hang of `hang_s` seconds (one request in
ten by default); the rest get the scripted model's answer (tests/llm/scripted.py).
`Hostile(fail_share=0.95)` makes the same server mostly failing (500s and hangs).

Run by hand (from the repository root): `python -m tests.llm.hostile --port 8012 --hang 120`.
"""

from __future__ import annotations

import argparse
import collections
import random
import threading
import time
from typing import Any

from tests.llm import scripted
from tests.llm.loopback import LoopbackLLM, Reply

PROSE = "Sure! Here is a harder question about that, I think it would be a good one."
FAULT_SHARES = {  # of chat requests; "hang" is set by the knob
    "http_500": 0.03, "http_429": 0.03, "not_json": 0.03, "cut_at_max_tokens": 0.03,
    "dropped": 0.02, "reset": 0.02, "prose": 0.03,
}


def fault_reply(kind: str, body: dict[str, Any], hang_s: float) -> Reply:
    """The reply of one misbehaviour."""
    n = int(body.get("n") or 1)
    return {
        "http_500": lambda: Reply(status=500, body=b"<html><title>500 Internal Server Error"
                                                   b"</title></html>"),
        "http_429": lambda: Reply(status=429, body=b'{"error": {"message": "rate limited"}}',
                                  headers={"Retry-After": "1"}),
        "not_json": lambda: Reply(body=b"upstream connect error or disconnect/reset"),
        "cut_at_max_tokens": lambda: Reply(contents=['{"question": "Which'] * n,
                                           finish_reasons=["length"]),
        "dropped": lambda: Reply(drop=True),
        "reset": lambda: Reply(reset=True),
        "prose": lambda: Reply(contents=[PROSE] * n),
        "hang": lambda: _late(scripted.respond(body), n, hang_s),
    }[kind]()


def _late(answer: str | list[str], n: int, delay_s: float) -> Reply:
    """The model's answer, after `delay_s` (a client that waits that long gets it)."""
    return Reply(contents=[answer] * n if isinstance(answer, str) else list(answer), delay_s=delay_s)


class Hostile:
    """The responder (for `LoopbackLLM`): `hang_share` of requests hang `hang_s` seconds;
    `fail_share`, when set, replaces the mix: that share of requests get a 500 or a hang."""

    def __init__(self, hang_s: float = 120.0, hang_share: float = 0.1,
                 fail_share: float | None = None, seed: int = 0):
        self.hang_s = hang_s
        if fail_share is None:
            self.shares = {**FAULT_SHARES, "hang": hang_share}
        else:
            self.shares = {"http_500": fail_share * 0.8, "hang": fail_share * 0.2}
        self.served: collections.Counter = collections.Counter()  # fates dealt, by kind
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def fate(self) -> str:
        with self._lock:
            x, acc = self._rng.random(), 0.0
            for kind, share in self.shares.items():
                acc += share
                if x < acc:
                    break
            else:
                kind = "ok"
            self.served[kind] += 1
            return kind

    def __call__(self, body: dict[str, Any]):
        kind = self.fate()
        return scripted.respond(body) if kind == "ok" else fault_reply(kind, body, self.hang_s)


def main(argv: list[str] | None = None) -> int:
    """Serve the hostile endpoint until interrupted; print its base URL, and the fates dealt
    at the end."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--hang", type=float, default=120.0, help="seconds a hanging request hangs")
    ap.add_argument("--fail-share", type=float, default=None)
    args = ap.parse_args(argv)
    hostile = Hostile(args.hang, fail_share=args.fail_share)
    with LoopbackLLM(hostile, models=("scripted",), port=args.port) as server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    print(dict(hostile.served), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
