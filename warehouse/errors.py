"""Errors the warehouse raises for user mistakes; each message names the input and the fix."""


class WarehouseError(Exception):
    """Base class: a problem with a warehouse that the user can act on."""


class WarehouseNotFound(WarehouseError):
    pass


class ForeignWarehouse(WarehouseError):
    pass


class SchemaMismatch(WarehouseError):
    pass


class CorruptWarehouse(WarehouseError):
    pass


class ReadOnlyViolation(WarehouseError):
    pass


class CommitConflict(WarehouseError):
    """A commit kept conflicting with other writers after every retry."""


class QueryRefused(WarehouseError):
    """A statement given to the read-only query path would write or reach outside."""


class QueryError(WarehouseError):
    """A read-only statement that DuckDB could not run (syntax, unknown column, ...)."""
