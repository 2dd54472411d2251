"""One small demo build on the Dask runner (2 local workers), shared by tests/flows/test_dask.py
and tests/warehouse/test_object_storage.py so the suite pays for it once.

It is built on the team warehouse — a PostgreSQL catalog (HARDQA_TEST_POSTGRES_DSN, started by
.ci/postgres.sh) and an S3 bucket on a loopback moto server — when both can be had, else on a
local folder warehouse. S3 credentials are only in this process's environment (which the Dask
workers inherit); nothing writes them anywhere else.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

# Small and cheap: the smallest demo world; crawl extraction in the worker's own process;
# compose in 2 shards (no max_questions: a budget over all seeds is composed unsharded);
# verify (~220 questions, fewer than one batch) as one task — one sentence-embedder load;
# band in 2 shards of the composed questions, at most 4 solver attempts each.
CONFIG = {"demo": {"entities": 30, "seed": 7}, "seed": 0,
          "crawl": {"extract_processes": 0},
          "compose": {"batch_size": 40},
          "band": {"where": "hops >= 1", "max_k": 4, "batch_size": 32},
          "runner": "dask", "dask_workers": 2}
S3_ENV = {"AWS_ACCESS_KEY_ID": "hardqa-test-key", "AWS_SECRET_ACCESS_KEY": "hardqa-test-s3cr3t",
          "AWS_REGION": "us-east-1"}
BUCKET = "hardqa-test"


@dataclass
class Built:
    root: Path
    team: bool             # PostgreSQL catalog + S3 data path
    why_not_team: str      # the reason when not
    seconds: float
    catalog: str = ""
    data_path: str = ""
    endpoint: str = ""


def team_reason() -> str:
    """Why the team warehouse cannot be used here ("" when it can)."""
    if not os.environ.get("HARDQA_TEST_POSTGRES_DSN"):
        return "HARDQA_TEST_POSTGRES_DSN is unset; run `eval \"$(.ci/postgres.sh)\"`"
    try:
        import boto3  # noqa: F401
        import moto  # noqa: F401
    except ImportError:
        return "moto[server]/boto3 are not installed (pip install -e '.[dev]')"
    if not shutil.which("moto_server", path=str(Path(sys.executable).parent)):
        return "moto_server is not on the venv's PATH"
    import warehouse.core
    if "add_s3_secret" not in inspect.getsource(warehouse.core.connect):
        return ("warehouse.core.connect makes no S3 secret yet (CONTRACTS.md request: "
                "warehouse.objstore.add_s3_secret), so DuckDB cannot reach the bucket")
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> str:
    """A moto S3 server on loopback (stopped at exit) with the test bucket; its endpoint URL."""
    port = _free_port()
    exe = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    atexit.register(proc.terminate)
    endpoint = f"http://127.0.0.1:{port}"
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, **_boto_keys())
    for _ in range(100):
        try:
            s3.create_bucket(Bucket=BUCKET)
            return endpoint
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None:
                raise RuntimeError("moto_server exited at start")
            time.sleep(0.2)
    raise RuntimeError("moto_server did not answer within 20 s")


def _boto_keys() -> dict[str, str]:
    return {"aws_access_key_id": S3_ENV["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": S3_ENV["AWS_SECRET_ACCESS_KEY"],
            "region_name": S3_ENV["AWS_REGION"]}


def bucket_keys(endpoint: str, prefix: str) -> list[str]:
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, **_boto_keys())
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def _pg_database() -> str:
    """A fresh database on the test server; its DuckLake catalog spec."""
    from warehouse.core import connect, load_extensions
    dsn = os.environ["HARDQA_TEST_POSTGRES_DSN"]
    name = "hardqa_" + uuid.uuid4().hex[:10]
    con = connect()
    try:
        load_extensions(con, ("postgres",))
        con.execute(f"ATTACH '{dsn}' AS pg (TYPE postgres)")
        con.execute("CALL postgres_execute('pg', ?, use_transaction => false)",
                    [f"CREATE DATABASE {name}"])
    finally:
        con.close()
    base = " ".join(p for p in dsn.split() if not p.startswith("dbname="))
    return f"postgres:{base} dbname={name}"


_ENV = pytest.MonkeyPatch()
atexit.register(_ENV.undo)


@functools.lru_cache(maxsize=1)
def dask_build(base: Path) -> Built:
    """Run the build once per test session (see the module docstring)."""
    import warehouse
    from flows import BuildConfig, run_build
    base.mkdir(parents=True, exist_ok=True)
    root = base / "wh"
    _ENV.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    _ENV.setenv("HF_HUB_OFFLINE", "1")
    why = team_reason()
    built = Built(root, False, why, 0.0)
    if not why:
        for k, v in S3_ENV.items():
            _ENV.setenv(k, v)
        built.endpoint = start_moto()
        _ENV.setenv("AWS_ENDPOINT_URL", built.endpoint)
        built.catalog, built.data_path = _pg_database(), f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}/"
        warehouse.open(root, catalog=built.catalog, data_path=built.data_path).close()
        built.team = True
    t0 = time.perf_counter()
    run_build(root, BuildConfig(**CONFIG))
    built.seconds = time.perf_counter() - t0
    return built
