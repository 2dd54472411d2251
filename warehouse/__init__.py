"""The DuckLake warehouse every stage writes to and the trainer reads from.

The file tree is in warehouse/README.md.
"""

from warehouse.core import Warehouse, redact
from warehouse.store import default_warehouse_path, open
from warehouse.errors import (
    CommitConflict, CorruptWarehouse, ForeignWarehouse, QueryError, QueryRefused,
    ReadOnlyViolation, SchemaMismatch, WarehouseError, WarehouseNotFound,
)
from warehouse.page_index import PageHit, StoredPages
from warehouse.reader import StreamReader, TrainItem
from warehouse.schema import (
    BANDS, DifficultyRecord, Evidence, FetchRecord, Link, LLMCallRecord, PageRecord,
    QuestionRecord, Record, RolloutRecord, RunRecord, VerdictRecord, content_id,
)

__all__ = [
    "Warehouse", "open", "default_warehouse_path", "redact",
    "WarehouseError", "WarehouseNotFound", "ForeignWarehouse", "SchemaMismatch",
    "CorruptWarehouse", "ReadOnlyViolation", "CommitConflict", "QueryRefused", "QueryError",
    "StreamReader", "TrainItem", "StoredPages", "PageHit",
    "Record", "FetchRecord", "PageRecord", "QuestionRecord", "VerdictRecord",
    "DifficultyRecord", "RolloutRecord", "RunRecord", "LLMCallRecord", "Evidence", "Link", "BANDS", "content_id",
]
