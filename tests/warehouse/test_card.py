"""The dataset card written with every export: its counts are the exported rows', it names the
runs that built them, and every row carries its source URLs and licence."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from urllib.parse import urlparse

import pyarrow.parquet as pq
import pytest

import warehouse
from warehouse.card import parse_counts
from warehouse.export import export
from warehouse.schema import (
    DifficultyRecord, Evidence, PageRecord, QuestionRecord, VerdictRecord,
)

PAGES = {"http://a.example/p1": "https://creativecommons.org/licenses/by/4.0/",
         "http://a.example/p2": None,
         "http://b.example/p3": "https://creativecommons.org/licenses/by-sa/4.0/"}
CHECKS = ("grounded", "unique", "decontamination")


@pytest.fixture(scope="module")
def card_wh(tmp_path_factory):
    """A small warehouse whose rows come from a build run with compose/verify/band children."""
    path = tmp_path_factory.mktemp("card") / "wh"
    urls = list(PAGES)
    now = dt.datetime.now(dt.timezone.utc)
    with warehouse.open(path) as wh:
        build = wh.start_run("build", {"seeds": [], "seed": 3})
        compose = wh.start_run("compose", {"backend": "embedded", "hops_min": 2, "hops_max": 4,
                                           "seed": 3}, parent_run_id=build)
        verify = wh.start_run("verify", {"decontamination": "bench/", "checks": list(CHECKS)},
                              parent_run_id=build)
        band = wh.start_run("band", {"solver": "embedded", "solver_name": "embedded-bm25",
                                     "thresholds": [0.1, 0.4, 0.7, 0.95], "max_k": 8},
                            parent_run_id=build)
        pages = [PageRecord(url=u, title=u, text="t", content_hash=u, fetched_at=now, license=lic)
                 for u, lic in PAGES.items()]
        qs, vs, ds = [], [], []
        for i in range(30):
            src = urls[: 1 + i % 3] if i % 5 else urls[2:]
            qid = f"q{i:02d}"
            qs.append(QuestionRecord(question_id=qid, question=f"Q{i}?", answer=f"a{i}",
                                     hops=2 + i % 3, source_urls=tuple(src),
                                     evidence=tuple(Evidence(u, "t") for u in src),
                                     composer="compose:embedded", backend="embedded",
                                     run_id=compose))
            status = "fail" if i == 29 else "pass"
            vs += [VerdictRecord(question_id=qid, check_name=c, status=status, run_id=verify)
                   for c in CHECKS]
            ds.append(DifficultyRecord(question_id=qid, solver="embedded-bm25", k=8, n_correct=i % 8,
                                       pass_rate=(i % 8) / 8, band=("easy", "medium", "hard")[i % 3],
                                       run_id=band))
        with wh.transaction() as tx:
            tx.append(pages)
            tx.append(qs)
            tx.append(vs)
            tx.append(ds)
        for run in (compose, verify, band, build):
            wh.finish_run(run, "succeeded")
    return path


def _rows(out, fmt, layout):
    """The exported rows as dicts with band, hops, source_urls, license (any format)."""
    if layout == "verl":
        return [r["extra_info"] for r in pq.read_table(out / "train.parquet").to_pylist()]
    if fmt == "parquet":
        return pq.read_table(out / "questions.parquet").to_pylist()
    if fmt == "jsonl":
        return [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    import datasets
    return list(datasets.load_from_disk(str(out)))


@pytest.mark.parametrize("fmt, layout, where", [
    ("parquet", "plain", None), ("jsonl", "plain", "hops >= 3"), ("hf", "plain", None),
    ("parquet", "verl", "band <> 'easy'")])
def test_card_counts_equal_the_exported_rows(card_wh, tmp_path, fmt, layout, where):
    out = tmp_path / "out"
    res = export(card_wh, out, fmt=fmt, layout=layout, where=where)
    text = (out / "README.md").read_text()
    rows = _rows(out, fmt, layout)
    assert res.rows == len(rows) > 0 and f"rows: **{len(rows)}**" in text
    assert parse_counts(text, "Rows per band") == Counter(r["band"] for r in rows)
    assert parse_counts(text, "Rows per hops") == Counter(str(r["hops"]) for r in rows)
    assert parse_counts(text, "Rows per licence") == Counter(r["license"] for r in rows)
    pages = {u for r in rows for u in r["source_urls"]}
    licences = Counter(PAGES[u] or "unknown" for u in pages)
    assert parse_counts(text, "Evidence pages per licence") == licences
    assert parse_counts(text, "Evidence pages per source domain") == Counter(
        urlparse(u).netloc for u in pages)
    for r in rows:  # every row: its sources and their licences, in order
        assert r["source_licenses"] == [PAGES[u] or "unknown" for u in r["source_urls"]]
        assert r["license"] == "; ".join(sorted(set(r["source_licenses"])))


def test_card_says_how_the_rows_were_built(card_wh, tmp_path):
    out = tmp_path / "out"
    export(card_wh, out, fmt="parquet")
    text = (out / "README.md").read_text()
    with warehouse.open(card_wh, read_only=True) as wh:
        runs = {r["kind"]: r for r in wh.sql("select run_id, kind, code_version from runs").to_pylist()}
        snapshot = wh.current_snapshot()
    assert f"build run `{runs['build']['run_id']}`" in text
    assert runs["build"]["code_version"] in text
    assert "backend `embedded`" in text and "solver `embedded-bm25`" in text
    assert "[0.1, 0.4, 0.7, 0.95]" in text and f"snapshot: `{snapshot}`" in text
    assert "decontamination: **on (bench/)**" in text
    assert "checks that judged these rows: decontamination, grounded, unique" in text
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["card"]["rows"] == 29 and "README.md" in manifest["files"]
