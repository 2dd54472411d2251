"""`datagen export`: Parquet, JSONL, HF datasets and the verl layout of the train_ready set."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from datagen.cli import main

READY = {f"q{i:03d}" for i in range(60)}


def _export(path, out, *args):
    return main(["export", str(out), *args, "--warehouse", str(path)])


def test_parquet_export_is_the_train_ready_set_with_question_columns(shared_ready_wh, tmp_path):
    out = tmp_path / "pq"
    assert _export(shared_ready_wh, out, "--format", "parquet") == 0
    table = pq.read_table(out / "questions.parquet")
    assert set(table.column("question_id").to_pylist()) == READY  # failed/unbanded left out
    assert {"question", "answer", "answer_aliases", "band", "pass_rate", "hops", "evidence",
            "source_urls", "run_id"} <= set(table.column_names)
    manifest = json.loads((out / "export.json").read_text())
    assert manifest["rows"] == 60 and manifest["source"] == "train_ready"


def test_jsonl_with_where_filter(shared_ready_wh, tmp_path):
    out = tmp_path / "jl"
    assert _export(shared_ready_wh, out, "--format", "jsonl", "--where", "band = 'hard'") == 0
    rows = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and {r["band"] for r in rows} == {"hard"}
    assert rows[0]["answer_aliases"] == [rows[0]["answer"].replace("ans-", "alias-")]


def test_hf_export_loads_with_load_from_disk(shared_ready_wh, tmp_path):
    import datasets
    out = tmp_path / "hf"
    assert _export(shared_ready_wh, out, "--format", "hf", "--where", "band <> 'easy'") == 0
    ds = datasets.load_from_disk(str(out))
    assert len(ds) == 40 and set(ds["band"]) == {"medium", "hard"}
    assert ds[0]["answer_aliases"] and isinstance(ds[0]["question"], str)


def test_verl_layout(shared_ready_wh, tmp_path):
    out = tmp_path / "verl"
    assert _export(shared_ready_wh, out, "--format", "parquet", "--layout", "verl") == 0
    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert len(rows) == 60
    row = next(r for r in rows if r["extra_info"]["question_id"] == "q002")
    assert row["data_source"] == "hardqa" and row["ability"] == "qa"
    assert row["prompt"] == [{"role": "user", "content": "What is q002?"}]
    assert row["reward_model"] == {"style": "rule", "ground_truth": "ans-q002"}
    assert row["extra_info"]["band"] == "hard" and row["extra_info"]["answer_aliases"] == ["alias-q002"]


@pytest.mark.parametrize("args, message", [
    (["--where", "1=1) union all select * from read_csv('/etc/passwd') --"], "error:"),
    (["--where", "nosuchcolumn = 1"], "nosuchcolumn"),
    (["--format", "jsonl", "--layout", "verl"], "--layout verl writes Parquet"),
])
def test_bad_export_requests_are_one_line_errors(shared_ready_wh, tmp_path, capsys, args, message):
    out = tmp_path / "bad"
    assert _export(shared_ready_wh, out, *args) != 0
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_non_empty_out_dir_needs_overwrite(shared_ready_wh, tmp_path, capsys):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert _export(shared_ready_wh, out) != 0
    assert "--overwrite" in capsys.readouterr().err and (out / "keep.txt").exists()
    assert _export(shared_ready_wh, out, "--overwrite") == 0
    assert not (out / "keep.txt").exists() and (out / "questions.parquet").exists()
