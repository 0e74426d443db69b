#!/usr/bin/env bash
# Run a command against a real PostgreSQL with pgvector, on a fresh database made for this run.
#
#   scripts/pg-with-vector.sh npm test
#
# It copes with three machines:
#   - a server already listening on 127.0.0.1:5432 (trust auth, user postgres) without pgvector:
#     pgvector is built from Debian's source package and installed into that server;
#   - the same with pgvector already present: nothing is installed;
#   - no server at all: the server is installed from Debian's packages and a throwaway cluster
#     is started on loopback as the unprivileged postgres user, then removed afterwards.
# The command runs with ENGINE_DB_DSN pointing at a new database that is dropped on exit.
# Installing needs root (or sudo); a machine that already has server + pgvector needs neither.
#
# INGEST_PG_THROWAWAY=1 always starts a throwaway cluster (port INGEST_PG_PORT, default 55432),
# even beside a running server, and gives the command the means to stop and start it again:
# INGEST_PG_STOP_COMMAND (immediate mode, as a crash or a power cut leaves it) and
# INGEST_PG_START_COMMAND, each a shell command line. The database-restart fault suite needs
# them (docs/OPERATIONS.md "When the database goes away").
set -euo pipefail

PGHOST_ADDR=${INGEST_PG_HOST:-127.0.0.1}
PGPORT_NUM=${INGEST_PG_PORT:-5432}
PGUSER_NAME=${INGEST_PG_USER:-postgres}
# pgvector's source package is in the Debian suite after bookworm.
PGVECTOR_SUITE=${INGEST_PGVECTOR_SUITE:-trixie}

log() { printf '[pg-with-vector] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

WORK=$(mktemp -d)
CLUSTER_DIR=""
DB_NAME=""
cleanup() {
  local status=$?
  if [ -n "$DB_NAME" ]; then
    psql_admin -c "DROP DATABASE IF EXISTS \"$DB_NAME\" WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  if [ -n "$CLUSTER_DIR" ]; then
    as_root runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$CLUSTER_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    as_root rm -rf "$CLUSTER_DIR"
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT

psql_admin() { psql -X -q -v ON_ERROR_STOP=1 -h "$PGHOST_ADDR" -p "$PGPORT_NUM" -U "$PGUSER_NAME" -d postgres "$@"; }

server_is_up() { pg_isready -q -h "$PGHOST_ADDR" -p "$PGPORT_NUM" 2>/dev/null; }

# The version whose server-dev package and bin directory we use: the running server's when
# there is one, else the newest installed, else the distribution's default.
server_major() {
  if server_is_up; then
    psql_admin -Atc "SHOW server_version_num" | cut -c1-2
  elif ls /usr/lib/postgresql 2>/dev/null | grep -q .; then
    ls /usr/lib/postgresql | sort -n | tail -1
  else
    echo ""
  fi
}

apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

start_throwaway_cluster() {
  if ! command -v pg_isready >/dev/null || [ -z "$(server_major)" ]; then
    log "no PostgreSQL installed: installing the server from Debian's packages"
    apt_install postgresql
  fi
  PG_MAJOR=$(server_major)
  PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
  CLUSTER_DIR=$(as_root mktemp -d -t ingest-pg.XXXXXX)
  as_root chown postgres "$CLUSTER_DIR"
  PGPORT_NUM=${INGEST_PG_PORT:-55432}
  log "starting a throwaway cluster (PostgreSQL $PG_MAJOR) on $PGHOST_ADDR:$PGPORT_NUM"
  as_root runuser -u postgres -- "$PG_BIN/initdb" -D "$CLUSTER_DIR/data" -U postgres -A trust >/dev/null
  local sudo_prefix=""
  [ "$(id -u)" -eq 0 ] || sudo_prefix="sudo "
  local pg_ctl="${sudo_prefix}runuser -u postgres -- $PG_BIN/pg_ctl -D $CLUSTER_DIR/data"
  export INGEST_PG_STOP_COMMAND="$pg_ctl -m immediate -w stop"
  export INGEST_PG_START_COMMAND="$pg_ctl -l $CLUSTER_DIR/log -w -o '-c listen_addresses=$PGHOST_ADDR -p $PGPORT_NUM -k $CLUSTER_DIR -c fsync=off' start"
  sh -c "$INGEST_PG_START_COMMAND" >/dev/null
}

# The deb-src entry reuses the mirror this machine already uses, so no host is written here.
debian_mirror() {
  local uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" && $0 !~ /security/ {for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || { log "cannot find a Debian mirror in this machine's apt sources"; return 1; }
  echo "$uri"
}

install_pgvector() {
  local major=$1 mirror src_list
  log "pgvector missing for PostgreSQL $major: building it from Debian's source package ($PGVECTOR_SUITE)"
  apt_install "postgresql-server-dev-$major" dpkg-dev make gcc
  mirror=$(debian_mirror)
  src_list=/etc/apt/sources.list.d/ingest-pgvector-src.sources
  as_root tee "$src_list" >/dev/null <<SRC
Types: deb-src
URIs: $mirror
Suites: $PGVECTOR_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  as_root apt-get update -qq -o Dir::Etc::sourcelist="$src_list" -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
  (cd "$WORK" && apt-get source -qq pgvector >/dev/null 2>&1) || { as_root rm -f "$src_list"; log "apt-get source pgvector failed"; return 1; }
  as_root rm -f "$src_list"
  local dir
  dir=$(find "$WORK" -maxdepth 1 -type d -name 'pgvector-*' | head -1)
  make -s -C "$dir" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS="" >/dev/null
  as_root make -s -C "$dir" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" install >/dev/null
}

if [ "${INGEST_PG_THROWAWAY:-}" = 1 ] || ! server_is_up; then
  start_throwaway_cluster
fi
PG_MAJOR=$(server_major)
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
if [ ! -f "$("$PG_BIN/pg_config" --sharedir 2>/dev/null || echo /usr/share/postgresql/$PG_MAJOR)/extension/vector.control" ]; then
  install_pgvector "$PG_MAJOR"
fi

DB_NAME="ingest_test_$$_$RANDOM"
psql_admin -c "CREATE DATABASE \"$DB_NAME\""
psql_admin -d "$DB_NAME" -c "CREATE EXTENSION IF NOT EXISTS vector" 
log "PostgreSQL $PG_MAJOR with pgvector $(psql_admin -d "$DB_NAME" -Atc "SELECT extversion FROM pg_extension WHERE extname='vector'") on $PGHOST_ADDR:$PGPORT_NUM, database $DB_NAME"

export ENGINE_DB_DSN="postgresql://$PGUSER_NAME@$PGHOST_ADDR:$PGPORT_NUM/$DB_NAME"
"$@"
