"""Object-storage credentials for DuckDB, from the environment, never stored.

DuckDB reads S3 credentials only from a secret. `s3_secret_sql()` is the statement that makes
a temporary (in-memory) one whose keys come from the AWS credential chain — the environment
(`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` /
`AWS_DEFAULT_REGION`) and `~/.aws` — when the connection is made. Only the endpoint goes into
the statement, from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (an S3-compatible server:
MinIO, moto, R2): path-style URLs, TLS when its scheme is https. Nothing is written to the
warehouse's marker, its runs or DuckDB's persistent secret store.

>>> s3_secret_sql({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1"})
"CREATE OR REPLACE SECRET hardqa_s3 (TYPE s3, PROVIDER credential_chain, CHAIN 'env;config', REGION 'eu-west-1', ENDPOINT '127.0.0.1:9000', URL_STYLE 'path', USE_SSL false)"
"""

from __future__ import annotations

import os
from typing import Mapping
from urllib.parse import urlparse

OBJECT_STORES = ("s3://", "gs://", "gcs://", "r2://", "az://", "abfss://")


def s3_secret_sql(environ: Mapping[str, str] | None = None) -> str:
    """CREATE SECRET for s3:// paths: keys from the credential chain, endpoint from the env."""
    env = os.environ if environ is None else environ
    opts = ["TYPE s3", "PROVIDER credential_chain", "CHAIN 'env;config'"]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        opts.append(f"REGION {_quote(region)}")
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        url = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        opts += [f"ENDPOINT {_quote(url.netloc)}", "URL_STYLE 'path'",
                 f"USE_SSL {'true' if url.scheme == 'https' else 'false'}"]
    return f"CREATE OR REPLACE SECRET hardqa_s3 ({', '.join(opts)})"


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def add_s3_secret(con, environ: Mapping[str, str] | None = None) -> None:
    """Load httpfs + aws and create the in-memory S3 secret on a DuckDB connection."""
    from warehouse.location import load_extensions
    load_extensions(con, ("httpfs", "aws"))
    con.execute(s3_secret_sql(environ))
