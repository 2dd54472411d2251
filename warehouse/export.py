"""Export the training set (`datagen export`): Parquet, JSON Lines, a Hugging Face dataset,
or the verl/SkyRL Parquet layout.

What is exported: the rows of the `train_ready` view (questions whose latest verdict for
every check is `pass` and that have a band) joined with their latest `questions` row, so
each row carries the question, answer, aliases, band and pass rate plus hops, actions,
evidence, source URLs, parent, composer, backend and run id, and the licences of its source
pages (`source_licenses`, one per source URL, "unknown" when the page declared none; `license`,
those joined). `--where` filters on those columns (e.g. `band = 'hard' and hops >= 2`) and
goes through the same read-only checks as `datagen query`. A dataset card (README.md,
warehouse/card.py) goes with every export. The export is written to a temporary folder next to OUT_DIR and
renamed into place, so OUT_DIR never holds half an export.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from warehouse import errors
from warehouse.card import make_card, render
from warehouse.query import check_read_only, execute, open_read_only

log = logging.getLogger(__name__)

FORMATS = ("parquet", "jsonl", "hf")
LAYOUTS = ("plain", "verl")
DATA_SOURCE = "hardqa"
CARD = "README.md"  # the dataset card (warehouse/card.py), written with every export

EXPORT_SQL = """
WITH e AS (
SELECT t.question_id, t.question, t.answer, t.answer_aliases, t.band, t.pass_rate,
       q.hops, q.actions, q.evidence, q.source_urls, q.parent_id, q.composer, q.backend,
       q.run_id, t.created_at
FROM train_ready t
JOIN (SELECT * FROM questions
      QUALIFY row_number() OVER (PARTITION BY question_id ORDER BY created_at DESC) = 1) q
  USING (question_id)
), lic AS (
SELECT url, arg_max(license, fetched_at) AS license FROM pages GROUP BY url
), src AS (
SELECT u.question_id, list(coalesce(nullif(lic.license, ''), 'unknown') ORDER BY u.pos)
         AS source_licenses
FROM (SELECT question_id, unnest(source_urls) AS url,
             generate_subscripts(source_urls, 1) AS pos FROM e) u
LEFT JOIN lic USING (url) GROUP BY u.question_id
)
SELECT e.*, coalesce(src.source_licenses, []::VARCHAR[]) AS source_licenses,
       CASE WHEN src.source_licenses IS NULL THEN 'unknown'
            ELSE array_to_string(list_sort(list_distinct(src.source_licenses)), '; ')
       END AS license
FROM e LEFT JOIN src USING (question_id)
"""


@dataclass(frozen=True)
class ExportResult:
    out_dir: Path
    rows: int
    files: tuple[str, ...]
    snapshot: int


def export_sql(where: str | None = None) -> str:
    sql = f"SELECT * FROM ({EXPORT_SQL}) AS export"
    if where:
        sql += f" WHERE ({where})"
    return sql + " ORDER BY question_id"


def export(path: str | Path | None, out_dir: str | Path, fmt: str = "parquet",
           where: str | None = None, layout: str = "plain", overwrite: bool = False,
           as_of: int | None = None) -> ExportResult:
    """Write the training set of the warehouse at `path` into `out_dir`."""
    out_dir = Path(out_dir)
    _check_args(out_dir, fmt, layout, overwrite)
    sql = export_sql(where)
    check_read_only(sql)
    wh = open_read_only(path, as_of)
    try:
        table = execute(wh, sql)
        snapshot = wh.current_snapshot() if as_of is None else as_of
        card = make_card(wh, table, snapshot=snapshot, fmt=fmt, layout=layout, where=where)
    finally:
        wh.close()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        files = _write(table, tmp, fmt, layout)
        (tmp / CARD).write_text(render(card, files), encoding="utf-8")
        manifest = {"format": fmt, "layout": layout, "rows": table.num_rows, "where": where,
                    "snapshot": snapshot, "files": files + [CARD], "source": "train_ready",
                    "card": card.as_dict()}
        if fmt != "hf":  # load_from_disk wants only its own files in the folder
            (tmp / "export.json").write_text(json.dumps(manifest, indent=2, default=str))
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.replace(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("exported %d rows to %s", table.num_rows, out_dir)
    return ExportResult(out_dir, table.num_rows, (*files, CARD), snapshot)


def _check_args(out_dir: Path, fmt: str, layout: str, overwrite: bool) -> None:
    if fmt not in FORMATS:
        raise errors.WarehouseError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if layout not in LAYOUTS:
        raise errors.WarehouseError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    if layout == "verl" and fmt != "parquet":
        raise errors.WarehouseError("--layout verl writes Parquet: use it with --format parquet")
    if out_dir.exists() and not out_dir.is_dir():
        raise errors.WarehouseError(f"{out_dir} is a file; give a directory to export into")
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise errors.WarehouseError(f"{out_dir} is not empty; pass --overwrite to replace it")


def _write(table: pa.Table, out: Path, fmt: str, layout: str) -> list[str]:
    import pyarrow.parquet as pq
    if layout == "verl":
        pq.write_table(to_verl(table), out / "train.parquet")
        return ["train.parquet"]
    if fmt == "parquet":
        pq.write_table(table, out / "questions.parquet")
        return ["questions.parquet"]
    if fmt == "jsonl":
        _write_jsonl(table, out / "questions.jsonl")
        return ["questions.jsonl"]
    import datasets
    datasets.Dataset(table).save_to_disk(str(out))
    return sorted(p.name for p in out.iterdir())


def _write_jsonl(table: pa.Table, target: Path) -> None:
    from warehouse.query import _jsonable
    with target.open("w", encoding="utf-8") as fh:
        for batch in table.to_batches(max_chunksize=4096):
            for row in batch.to_pylist():
                fh.write(json.dumps(row, default=_jsonable, ensure_ascii=False) + "\n")


VERL_SCHEMA = pa.schema([
    ("data_source", pa.string()),
    ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("ability", pa.string()),
    ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
    ("extra_info", pa.struct([
        ("index", pa.int64()), ("question_id", pa.string()), ("answer_aliases", pa.list_(pa.string())),
        ("band", pa.string()), ("pass_rate", pa.float64()), ("hops", pa.int32()),
        ("source_urls", pa.list_(pa.string())), ("source_licenses", pa.list_(pa.string())),
        ("license", pa.string()),
    ])),
])


def to_verl(table: pa.Table) -> pa.Table:
    """The row layout verl/SkyRL-style RL trainers read: a chat prompt, a rule-based reward
    spec whose ground truth is the answer, and the rest in extra_info."""
    rows = []
    for i, r in enumerate(table.to_pylist()):
        rows.append({
            "data_source": DATA_SOURCE,
            "prompt": [{"role": "user", "content": r["question"]}],
            "ability": "qa",
            "reward_model": {"style": "rule", "ground_truth": r["answer"]},
            "extra_info": {"index": i, "question_id": r["question_id"],
                           "answer_aliases": r["answer_aliases"] or [], "band": r["band"],
                           "pass_rate": r["pass_rate"], "hops": r["hops"],
                           "source_urls": r["source_urls"] or [],
                           "source_licenses": r["source_licenses"] or [],
                           "license": r["license"]},
        })
    return pa.Table.from_pylist(rows, schema=VERL_SCHEMA)
