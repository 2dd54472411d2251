"""`datagen serve-model` runs quietly: what the server prints goes to its log file, the
console gets the command's own lines (where it serves, ready, stopped). A loopback stand-in
for vLLM's server prints on both descriptors and answers /health, as vLLM does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from datagen.cli import main
from tests.training.engine_helpers import free_port

FAKE_SERVER = r"""
import http.server, os, sys
open(sys.argv[2], "w").write(str(os.getpid()))
print("INFO vllm api server xyzzy", flush=True)
print("WARNING engine core xyzzy", file=sys.stderr, flush=True)

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        print("GET /health xyzzy", file=sys.stderr, flush=True)

http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health).serve_forever()
"""

# `datagen serve-model` in its own process, the stand-in in place of vLLM's command line.
DATAGEN = r"""
import sys
from datagen.llm import served
fake, pid_file = sys.argv[1:3]
served.serve_command = lambda model, host, port, max_len: [sys.executable, fake, str(port),
                                                            pid_file]
from datagen.cli import main
sys.exit(main(sys.argv[3:]))
"""


def _lines_of(stream, into: list[str]) -> threading.Thread:
    """Collect `stream`'s lines into `into` as they come (the test waits for one)."""
    thread = threading.Thread(target=lambda: into.extend(iter(stream.readline, "")), daemon=True)
    thread.start()
    return thread


def _wait_for(lines: list[str], text: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(text in line for line in lines):
        assert time.monotonic() < deadline, f"no {text!r} in {lines}"
        time.sleep(0.1)


def test_serve_model_logs_the_server_and_prints_its_own_lines(tmp_path):
    fake, pid_file, log = tmp_path / "fake_server.py", tmp_path / "server.pid", tmp_path / "s.log"
    fake.write_text(FAKE_SERVER)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", DATAGEN, str(fake), str(pid_file),
                             "serve-model", "tiny", "--port", str(port), "--log", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    try:
        reader = _lines_of(proc.stderr, err)
        _wait_for(err, "ready in", 60)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(5)
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    shown = out + "".join(err)
    assert f"serving tiny at http://127.0.0.1:{port}/v1" in shown and f"output: {log}" in shown
    assert "stopped" in err[-1] and "xyzzy" not in shown
    text = log.read_text()
    for chatter in ("vllm api server", "engine core", "GET /health"):
        assert f"{chatter} xyzzy" in text
    with pytest.raises(ProcessLookupError):  # the server was stopped with the command
        os.kill(int(pid_file.read_text()), 0)


def test_a_server_that_dies_starting_is_one_line_and_its_code(tmp_path, monkeypatch, capfd):
    """The default log: logs/ in the data folder; the server's exit code is the command's."""
    from datagen.llm import served
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(served, "serve_command", lambda *args: [
        "sh", "-c", "echo no GPU xyzzy >&2; exit 3"])
    port = free_port()
    assert main(["serve-model", "tiny", "--port", str(port)]) == 3
    shown = capfd.readouterr()
    assert "vLLM exited with code 3 while starting" in shown.err
    assert "xyzzy" not in shown.out + shown.err
    log = tmp_path / "data" / "datagen" / "logs" / f"serve-model-{port}.log"
    assert "no GPU xyzzy" in log.read_text()
