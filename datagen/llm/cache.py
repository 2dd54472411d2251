"""The on-disk answer cache: an identical request (same model, messages, sampling
parameters, n, seed, schema and round) replays its stored answer at no cost; a new round
index draws new samples. One JSON file per key, written atomically. `put` only queues the
answer (served from memory at once); the client's writer thread writes the files with each
batch of accounting rows (`drain`), so no file write sits on the event loop."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

from datagen.llm.types import ChatRequest, ChatResult, Sample

CACHE_VERSION = 1


def request_key(model: str, req: ChatRequest) -> str:
    """A stable hash of everything that shapes the answer (not purpose or item_id)."""
    payload = {
        "v": CACHE_VERSION, "model": model, "messages": list(req.messages), "n": req.n,
        "temperature": req.temperature, "top_p": req.top_p, "max_tokens": req.max_tokens,
        "stop": list(req.stop), "seed": req.seed, "schema": req.schema, "round": req.round,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


class DiskCache:
    """`root/<key[:2]>/<key>.json`; only successful results are stored."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self._pending: dict[str, ChatResult] = {}
        self._lock = threading.Lock()
        self._root = str(self.root)
        self._dirs: set[str] = set()

    def get(self, key: str) -> ChatResult | None:
        queued = self._pending.get(key)
        if queued is not None:
            return ChatResult(request_key=key, status="cached", samples=queued.samples,
                              structured=queued.structured)
        try:
            with open(os.path.join(self._root, key[:2], f"{key}.json"), "rb") as fh:
                data = json.loads(fh.read().decode("utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None  # a damaged entry is a miss, and is overwritten by the fresh answer
        samples = tuple(Sample(**s) for s in data["samples"])
        return ChatResult(request_key=key, status="cached", samples=samples,
                          structured=data.get("structured", ""))

    def put(self, result: ChatResult) -> None:
        """Queue a successful answer; `drain` writes it."""
        with self._lock:
            self._pending[result.request_key] = result

    def drain(self) -> int:
        """Write the queued answers to disk; returns how many."""
        with self._lock:
            todo = list(self._pending.values())
        for result in todo:
            self._write(result)
        with self._lock:
            for result in todo:
                if self._pending.get(result.request_key) is result:
                    del self._pending[result.request_key]
        return len(todo)

    def _write(self, result: ChatResult) -> None:
        """One file, replaced atomically (a reader never sees half of it). Plain strings and
        os calls: this runs on the writer thread, which shares the GIL with the event loop
        (Path objects, mkstemp, dataclasses.asdict and json.dump made it ~8x dearer)."""
        key = result.request_key
        folder = os.path.join(self._root, key[:2])
        if folder not in self._dirs:
            os.makedirs(folder, exist_ok=True)
            self._dirs.add(folder)
        data = {"samples": [vars(s) for s in result.samples], "structured": result.structured}
        path = os.path.join(folder, f"{key}.json")
        tmp = f"{path}.{os.getpid()}.tmp"  # one writer thread per process writes the files
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, json.dumps(data, ensure_ascii=False).encode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
