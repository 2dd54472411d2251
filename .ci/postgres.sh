#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on loopback for the warehouse's PostgreSQL-catalog test.
# Idempotent: a second call finds the server running and only prints the DSN.
#
#   eval "$(.ci/postgres.sh)"      # sets HARDQA_TEST_POSTGRES_DSN for this shell
#   .venv/bin/pytest tests/warehouse/test_postgres.py
#
# Installs Debian's `postgresql` package when no server binaries are found (needs root or
# sudo). Everything else lives under $HARDQA_PG_DIR (default /tmp/hardqa-pg); stop it with
# `.ci/postgres.sh stop`. Progress goes to stderr; stdout is only the export line.
set -euo pipefail

PG_DIR="${HARDQA_PG_DIR:-/tmp/hardqa-pg}"
PG_PORT="${HARDQA_PG_PORT:-54329}"
PG_USER=hardqa
PG_DB=hardqa_test
DSN="host=127.0.0.1 port=${PG_PORT} user=${PG_USER} dbname=${PG_DB}"

log() { echo "postgres.sh: $*" >&2; }

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

install_postgres() {
  log "installing postgresql (apt-get)"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql >&2
}

# initdb and postgres refuse to run as root: run them as the `postgres` user then.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ]; then install_postgres; BIN="$(find_bin)"; fi

if [ "${1:-}" = "stop" ]; then
  as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" -m fast stop >&2 || true
  exit 0
fi

mkdir -p "$PG_DIR"
[ "$(id -u)" -eq 0 ] && chown postgres "$PG_DIR"
if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
  log "initdb in $PG_DIR/data"
  as_owner "$BIN/initdb" -D "$PG_DIR/data" -U "$PG_USER" -A trust --no-sync >&2
fi
if ! as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
  log "starting on 127.0.0.1:$PG_PORT"
  as_owner "$BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off" start >&2
fi
if ! as_owner "$BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" | grep -q 1; then
  as_owner "$BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$PG_USER" "$PG_DB"
fi
echo "export HARDQA_TEST_POSTGRES_DSN=\"$DSN\""
