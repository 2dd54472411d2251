"""Where a warehouse lives and how to reach it: the catalog and data path
(`WarehouseLocation`), a DuckDB connection with the extensions they need (`connect`), and
passwords kept out of messages. Opening and creating a warehouse directory is store.py's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

LAKE = "lake"  # the alias the DuckLake catalog is attached as

_PASSWORD = re.compile(r"\s*\bpassword\s*=\s*('[^']*'|\S+)", re.I)


def hide_password(text: str, keep: bool = True) -> str:
    """Mask (keep=True) or drop a `password=...` from a libpq DSN or a message quoting one."""
    return _PASSWORD.sub(" password=***" if keep else "", text).strip()


def connect(location: "WarehouseLocation | None" = None):
    """A fresh in-memory DuckDB with the DuckLake and SQLite extensions loaded (and those
    `location` needs: postgres for its catalog, httpfs for object storage).

    Extensions come from the `duckdb-extension-*` PyPI packages (installed into DuckDB's
    extension folder on first use), never from the network. `allow_unsigned_extensions`
    skips DuckDB's per-LOAD signature hash of the ~70 MB of extension binaries, which
    costs ~0.5 s on every open; the binaries are the signed ones from PyPI, and the
    read-only query path turns off LOAD altogether (see warehouse/query.py).
    """
    import duckdb
    con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": "true",
                                             "autoinstall_known_extensions": "false"})
    con.execute("SET TimeZone='UTC'")
    con.execute("SET enable_progress_bar = false")  # a library prints nothing on its own
    load_extensions(con, ("ducklake", "sqlite"))
    if location is not None and location.catalog.startswith("postgres"):
        load_extensions(con, ("postgres",))
    if location is not None and location.data_path.startswith("s3://"):
        from warehouse.objstore import add_s3_secret  # keys from the environment, never stored
        add_s3_secret(con)
    elif location is not None and location.data_path.startswith(
            ("gs://", "gcs://", "r2://", "az://", "abfss://")):
        load_extensions(con, ("httpfs",))
    return con


def load_extensions(con, names: Sequence[str]) -> None:
    import duckdb
    for name in names:
        try:
            con.execute(f"LOAD {name}")
        except duckdb.Error:  # not yet in DuckDB's extension folder: install from the package
            from duckdb_extensions import import_extension
            import_extension(name, con=con)
            con.execute(f"LOAD {name}")


@dataclass(frozen=True)
class WarehouseLocation:
    """Where the catalog and the data files live. A team points both elsewhere."""

    root: Path
    catalog: str          # DuckLake metadata spec, e.g. "sqlite:/w/catalog.sqlite" or "postgres:dbname=..."
    data_path: str        # local folder or object-storage prefix (s3://bucket/prefix/)
    in_folder: bool = False  # default layout: catalog and data inside root, which may move

    @classmethod
    def for_root(cls, root: Path, catalog: str | None = None,
                 data_path: str | None = None) -> "WarehouseLocation":
        return cls(root=root,
                   catalog=catalog or f"sqlite:{root / 'catalog.sqlite'}",
                   data_path=data_path or str(root / "data") + "/",
                   in_folder=not catalog and not data_path)

    def attach_sql(self, alias: str = LAKE, read_only: bool = False,
                   snapshot: int | None = None) -> str:
        """The ATTACH statement. A folder warehouse that was moved or copied (`cp -r`) still
        names its old folder in the catalog; OVERRIDE_DATA_PATH makes this attach read and
        write the folder it is in now (DuckLake keeps file paths relative to the data path)."""
        opts = [f"DATA_PATH '{self.data_path}'"]
        if self.in_folder:
            opts.append("OVERRIDE_DATA_PATH true")
        if read_only:
            opts.append("READ_ONLY")
        if snapshot is not None:
            opts.append(f"SNAPSHOT_VERSION {int(snapshot)}")
        return f"ATTACH 'ducklake:{self.catalog}' AS {alias} ({', '.join(opts)})"
