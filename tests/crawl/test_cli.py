"""`datagen demo-world`, `datagen serve`, `datagen crawl` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

import warehouse
from datagen.cli import main

pytestmark = pytest.mark.integration


def test_demo_world_command(tmp_path, capsys):
    out = tmp_path / "site"
    assert main(["demo-world", "--out", str(out), "--entities", "120", "--seed", "2"]) == 0
    info = json.loads((out / "world.json").read_text())
    assert info["entities"] == 120 and info["seed"] == 2
    assert len(list((out / "wiki").glob("*.html"))) == 120 + 1  # + the noindex draft
    assert "120 entity pages" in capsys.readouterr().out


def test_crawl_demo_from_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DATAGEN_CACHE", str(tmp_path / "cache"))
    wh_dir = tmp_path / "wh"
    assert main(["crawl", "--demo", "--max-pages", "40", "-w", str(wh_dir)]) == 0
    out = capsys.readouterr().out
    assert "stored 40" in out and "40 pages stored" in out
    with warehouse.open(wh_dir, read_only=True) as wh:
        assert wh.count("pages") == 40
        run = wh.sql("SELECT kind, status, summary FROM runs").to_pylist()[0]
    assert run["kind"] == "crawl" and run["status"] == "succeeded"
    assert json.loads(run["summary"])["stored"] == 40


def test_crawl_local_folder(tmp_path, capsys):
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Alpha notes\n\nThe alpha notes link to [beta](sub/b.txt).\n")
    (docs / "sub" / "b.txt").write_text("Beta\nPlain text about the beta river delta.\n")
    (docs / "c.html").write_text("<html><head><title>Gamma</title></head><body><article><p>"
                                 + "Gamma is a page about the delta of the gamma river. " * 6
                                 + "</p></article></body></html>")
    (docs / "skip.png").write_bytes(b"\x89PNG")
    wh_dir = tmp_path / "wh"
    assert main(["crawl", str(docs), "-w", str(wh_dir)]) == 0
    with warehouse.open(wh_dir, read_only=True) as wh:
        pages = {r["title"]: r for r in wh.sql("SELECT url, title, text, links FROM pages").to_pylist()}
    assert set(pages) == {"Alpha notes", "Beta", "Gamma"}
    assert all(p["url"].startswith("file://") for p in pages.values())
    assert pages["Alpha notes"]["links"][0]["anchor"] == "beta"
    assert "beta river delta" in pages["Beta"]["text"]


def test_crawl_refuses_loopback_without_allow_private(tmp_path, capsys):
    wh_dir = tmp_path / "wh"
    assert main(["crawl", "http://127.0.0.1:9/x.html", "-w", str(wh_dir)]) == 0
    out = capsys.readouterr().out
    assert "private_address" in out and "stored 0" in out


@pytest.mark.parametrize("argv,message", [
    (["crawl"], "give URLs or folders"),
    (["crawl", "ftp://example.com/x"], "not a crawlable URL"),
    (["crawl", "/no/such/folder"], "no such file or folder"),
    (["crawl", "--demo", "http://a.org/"], "drop the seeds"),
    (["crawl", "http://a.org/", "--include", "("], "include: not a valid regular expression"),
])
def test_user_mistakes_are_one_line(tmp_path, capsys, argv, message):
    assert main(argv + ["-w", str(tmp_path / "wh")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err


def test_serve_command_serves_a_folder(tmp_path):
    (tmp_path / "index.html").write_text("<html><body>hello loopback</body></html>")
    proc = subprocess.Popen([sys.executable, "-m", "datagen", "serve", str(tmp_path), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        url = line.split(" at ", 1)[1].split("/ ", 1)[0]
        assert url.startswith("http://127.0.0.1:")
        r = httpx.get(url + "/", timeout=5)
        assert r.status_code == 200 and "hello loopback" in r.text
        etag = r.headers["etag"]
        assert httpx.get(url + "/index.html", headers={"If-None-Match": etag}).status_code == 304
        assert httpx.get(url + "/../../etc/passwd").status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_help_lists_every_command_on_whole_lines(capsys):
    from datagen.cli import app

    names = [c.name for c in app.registered_commands]
    assert {"query", "export", "maintain", "demo-world", "serve", "crawl", "train"} <= set(names)
    for command in app.registered_commands:
        assert command.short_help and "\n" not in command.short_help, command.name
    assert main(["--help"]) == 0
    assert "Run read-only SQL over the warehouse." in capsys.readouterr().out
