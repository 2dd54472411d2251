"""Finding, creating and opening a warehouse directory (the marker file and its checks).

Layout of a warehouse directory (default SQLite catalog):

    W/WAREHOUSE.json     marker: format name and version, catalog and data path
    W/catalog.sqlite     the DuckLake catalog (metadata, snapshots)
    W/data/              Parquet data files written by DuckLake
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from warehouse import errors
from warehouse.core import Warehouse
from warehouse.location import WarehouseLocation, hide_password

FORMAT_NAME = "hardqa-warehouse"
FORMAT_VERSION = 1
MARKER = "WAREHOUSE.json"


def data_dir() -> Path:
    """The per-user datagen data folder (`$XDG_DATA_HOME/datagen`, else ~/.local/share/datagen):
    the default warehouse, pulled models and the build's own Prefect home live under it."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "datagen"


def default_warehouse_path() -> Path:
    """`DATAGEN_WAREHOUSE`, else a per-user data folder (never ./warehouse, the package)."""
    env = os.environ.get("DATAGEN_WAREHOUSE")
    if env:
        return Path(env).expanduser()
    return data_dir() / "warehouse"


def _read_marker(root: Path) -> dict[str, Any]:
    marker = root / MARKER
    try:
        info = json.loads(marker.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise errors.ForeignWarehouse(
            f"{root} is not a warehouse of this tool ({MARKER} unreadable: {exc})") from exc
    if info.get("format") != FORMAT_NAME:
        raise errors.ForeignWarehouse(f"{root} is not a warehouse of this tool ({MARKER} says "
                                      f"format {info.get('format')!r})")
    if info.get("version") != FORMAT_VERSION:
        raise errors.SchemaMismatch(f"{root}: warehouse format version {info.get('version')}, "
                                    f"this code reads version {FORMAT_VERSION}")
    return info


def open(path: str | os.PathLike | None = None, *, create: bool = True, read_only: bool = False,
         snapshot: int | None = None, catalog: str | None = None,
         data_path: str | None = None, train_ready_copy: bool = False) -> Warehouse:
    """Open (and by default create) the warehouse at `path`.

    `catalog` and `data_path` are only used when creating: a team passes e.g.
    ``catalog="postgres:dbname=lake host=db"`` and ``data_path="s3://bucket/lake/"``;
    both are remembered in the marker file. Environment: DATAGEN_CATALOG, DATAGEN_DATA_PATH.
    `snapshot` opens the warehouse as of that DuckLake snapshot (read-only).
    `train_ready_copy`: serve plain train_ready queries from an in-memory copy (see
    Warehouse.sql; for interactive processes, never the trainer).
    """
    root = Path(path).expanduser() if path is not None else default_warehouse_path()
    if not (root / MARKER).exists():
        _check_not_foreign(root)
        if not create or read_only or snapshot is not None:
            raise errors.WarehouseNotFound(
                f"no warehouse at {root}; create one by running a stage (e.g. `datagen crawl`) "
                "or pass --warehouse PATH")
        wh = _create(root, catalog or os.environ.get("DATAGEN_CATALOG"),
                     data_path or os.environ.get("DATAGEN_DATA_PATH"))
        if wh is not None:
            wh.train_ready_copy = train_ready_copy
            return wh
    loc = locate(root)
    wh = Warehouse(loc, read_only=read_only or snapshot is not None, snapshot=snapshot,
                   train_ready_copy=train_ready_copy)
    try:
        wh.ensure_schema()  # writable: additive migrations; read-only: refuse an old schema
    except BaseException:  # a stop too: its traceback would hold the catalog's lock open
        wh.close()
        raise
    return wh


def locate(root: Path) -> WarehouseLocation:
    """Where an existing warehouse keeps its catalog and data (from its marker file)."""
    root = Path(root).expanduser()
    if not (root / MARKER).exists():
        _check_not_foreign(root)
        raise errors.WarehouseNotFound(f"no warehouse at {root} (no {MARKER})")
    info = _read_marker(root)
    loc = WarehouseLocation.for_root(root, info.get("catalog"), info.get("data_path"))
    if loc.catalog.startswith("sqlite:") and not Path(loc.catalog[len("sqlite:"):]).exists():
        raise errors.CorruptWarehouse(f"warehouse {root}: catalog file {loc.catalog[7:]} is missing")
    return loc


# What a warehouse directory may hold before its marker exists (a creation in progress
# or one that crashed): anything else means the directory belongs to someone else.
_OWN_NAMES = {"catalog.sqlite", "catalog.sqlite-journal", "catalog.sqlite-wal",
              "catalog.sqlite-shm", "data", MARKER + ".tmp", ".create.lock"}


def _check_not_foreign(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise errors.ForeignWarehouse(f"{root} is a file, not a warehouse directory")
    if root.exists():
        foreign = sorted(p.name for p in root.iterdir() if p.name not in _OWN_NAMES)
        if foreign:
            raise errors.ForeignWarehouse(
                f"{root} exists and is not empty (e.g. {foreign[0]!r}) but has no {MARKER}: "
                "not a warehouse of this tool; pass an empty or new directory")


@contextlib.contextmanager
def _create_lock(root: Path) -> Iterator[None]:
    """Serialise creation between processes that start on a fresh path at the same time."""
    try:
        import fcntl
    except ImportError:  # not POSIX: creation races are then the user's to avoid
        yield
        return
    with (root / ".create.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _create(root: Path, catalog: str | None, data_path: str | None) -> Warehouse | None:
    """Create the warehouse; None when another process created it while we waited."""
    root.mkdir(parents=True, exist_ok=True)
    with _create_lock(root):
        if (root / MARKER).exists():
            return None
        loc = WarehouseLocation.for_root(root, catalog, data_path)
        if not loc.data_path.startswith(("s3://", "gs://", "gcs://", "az://", "r2://", "http")):
            Path(loc.data_path).mkdir(parents=True, exist_ok=True)
        wh = Warehouse(loc)
        wh.ensure_schema()  # idempotent: also completes a creation that crashed half-way
        # A password never goes into the marker: libpq then reads PGPASSWORD or ~/.pgpass.
        marker = {"format": FORMAT_NAME, "version": FORMAT_VERSION,
                  "catalog": hide_password(catalog, keep=False) if catalog else None,
                  "data_path": data_path}
        tmp = root / (MARKER + ".tmp")
        tmp.write_text(json.dumps(marker, indent=2))
        tmp.replace(root / MARKER)  # the marker appears only once the schema exists
        return wh
