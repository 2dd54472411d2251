"""The DuckLake warehouse every stage writes to and the trainer reads from.

    schema.py   typed records + explicit Arrow schemas + schema versions (the seam)
    core.py     open/create, atomic commits with retry, run lineage
    errors.py   user-facing errors
"""

from warehouse.core import Warehouse, default_warehouse_path, open, redact
from warehouse.errors import (
    CommitConflict, CorruptWarehouse, ForeignWarehouse, ReadOnlyViolation, SchemaMismatch,
    WarehouseError, WarehouseNotFound,
)
from warehouse.schema import (
    BANDS, DifficultyRecord, Evidence, FetchRecord, Link, PageRecord, QuestionRecord, Record,
    RolloutRecord, RunRecord, VerdictRecord, content_id,
)

__all__ = [
    "Warehouse", "open", "default_warehouse_path", "redact",
    "WarehouseError", "WarehouseNotFound", "ForeignWarehouse", "SchemaMismatch",
    "CorruptWarehouse", "ReadOnlyViolation", "CommitConflict",
    "Record", "FetchRecord", "PageRecord", "QuestionRecord", "VerdictRecord",
    "DifficultyRecord", "RolloutRecord", "RunRecord", "Evidence", "Link", "BANDS", "content_id",
]
