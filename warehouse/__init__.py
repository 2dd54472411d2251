"""The DuckLake warehouse every stage writes to and the trainer reads from.

    schema.py    typed records + explicit Arrow schemas + schema versions (the seam)
    core.py      DuckLake connection, atomic commits with retry, run lineage
    store.py     open/create a warehouse directory (marker file, foreign/missing checks)
    errors.py    user-facing errors
    query.py     read-only SQL for people and scripts (`datagen query`)
    export.py    Parquet / JSONL / HF datasets / verl exports (`datagen export`)
    reader.py    the trainer's streaming reader (StreamReader, TrainItem, select_items)
    ranges.py    train_ready one key range at a time (the reader's bounded memory)
    runs.py      run lineage helpers: redaction, code version, process liveness
    maintain.py  compaction, snapshot expiry, file cleanup (`datagen maintain`)
    migrate.py   additive schema migrations on a writable open
"""

from warehouse.core import Warehouse, redact
from warehouse.store import default_warehouse_path, open
from warehouse.errors import (
    CommitConflict, CorruptWarehouse, ForeignWarehouse, QueryError, QueryRefused,
    ReadOnlyViolation, SchemaMismatch, WarehouseError, WarehouseNotFound,
)
from warehouse.reader import StreamReader, TrainItem
from warehouse.schema import (
    BANDS, DifficultyRecord, Evidence, FetchRecord, Link, LLMCallRecord, PageRecord,
    QuestionRecord, Record, RolloutRecord, RunRecord, VerdictRecord, content_id,
)

__all__ = [
    "Warehouse", "open", "default_warehouse_path", "redact",
    "WarehouseError", "WarehouseNotFound", "ForeignWarehouse", "SchemaMismatch",
    "CorruptWarehouse", "ReadOnlyViolation", "CommitConflict", "QueryRefused", "QueryError",
    "StreamReader", "TrainItem",
    "Record", "FetchRecord", "PageRecord", "QuestionRecord", "VerdictRecord",
    "DifficultyRecord", "RolloutRecord", "RunRecord", "LLMCallRecord", "Evidence", "Link", "BANDS", "content_id",
]
