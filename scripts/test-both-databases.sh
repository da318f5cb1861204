#!/usr/bin/env bash
# `make test`: every test on SQLite and, at the same time, every integration or database test (marker
# `postgres`, tests/conftest.py) on a throwaway PostgreSQL cluster. Each database's pass is itself two pytest
# runs side by side: the unit tests, which keep a core busy for a few minutes, and the integration and browser
# tests, which spend most of their time waiting on real processes (jobs running on localdlc, the beat's sync).
# One after the other, a pass left a core idle for most of its run (the suite took about 14 minutes on two
# cores); side by side, the unit tests are done while the integration tests wait. The runs other than SQLite's
# unit tests write to logs printed once that run is done, so each run reads as one block. Fails if any failed.
#
#   scripts/test-both-databases.sh PYTHON [PYTEST ARGS...]
#   scripts/test-both-databases.sh --pass sqlite|postgres PYTHON [PYTEST ARGS...]   (one database's two runs)
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p var

UNIT="not integration and not browser"
LIVE="integration or browser"

# Waits for the given pids in half-second steps: a bare `wait` holds a SIGTERM's trap until the command ends
# (see scripts/install-postgres.sh), and a cancelled run must stop its children at once.
wait_all() {
  local pid
  for pid in "$@"; do
    while kill -0 "$pid" 2>/dev/null; do sleep 0.5 & wait $!; done
  done
}

status_of() {  # STATUS := the exit status of an ended child (not in $(...): a subshell can't wait for it)
  STATUS=0
  wait "$1" || STATUS=$?
  # 5 is pytest's "no test selected": a run of chosen files (make test PYTEST_ARGS=tests/test_x.py) may hold
  # only unit tests, or only integration tests.
  [ "$STATUS" -eq 5 ] && STATUS=0
  return 0
}

one_pass() {
  local db="$1" python="$2"; shift 2
  local unit="$UNIT" live="$LIVE" unit_url="" live_log="var/test-$db-integration.log" unit_log=""
  if [ "$db" = postgres ]; then
    unit="postgres and ($UNIT)" live="postgres and ($LIVE)"
    # Two pytest processes on one cluster: each needs its own test database (pytest-django names it after this).
    unit_url="${DATABASE_URL%/*}/dlc_unit"
    unit_log="var/test-postgres-unit.log"
  fi
  local pids=()
  if [ "$db" = postgres ]; then
    "$python" -m pytest -m "$live" "$@" >"$live_log" 2>&1 &
    pids+=($!)
    DATABASE_URL="$unit_url" "$python" -m pytest -m "$unit" "$@" >"$unit_log" 2>&1 &
    pids+=($!)
  else
    env -u DATABASE_URL "$python" -m pytest -m "$live" "$@" >"$live_log" 2>&1 &
    pids+=($!)
    env -u DATABASE_URL "$python" -m pytest -m "$unit" "$@" &
    pids+=($!)
  fi
  trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait_all "${pids[@]}"; exit 143' TERM
  trap 'kill -INT "${pids[@]}" 2>/dev/null; wait_all "${pids[@]}"; exit 130' INT
  wait_all "${pids[@]}"
  local live_status unit_status
  status_of "${pids[0]}"; live_status=$STATUS
  status_of "${pids[1]}"; unit_status=$STATUS
  if [ -n "$unit_log" ]; then
    echo "-- $db: unit tests that touch the database"
    cat "$unit_log"
  fi
  echo
  echo "-- $db: integration and browser tests"
  cat "$live_log"
  echo "-- $db: unit tests exit $unit_status; integration and browser tests exit $live_status"
  [ "$unit_status" -eq 0 ] && [ "$live_status" -eq 0 ]
}

if [ "${1:-}" = "--pass" ]; then
  shift
  one_pass "$@"
  exit $?
fi

self="scripts/$(basename "$0")"
python="$1"; shift
pg_log="var/test-postgres.log"
bash scripts/install-postgres.sh run bash "$self" --pass postgres "$python" "$@" >"$pg_log" 2>&1 &
pg_pid=$!
bash "$self" --pass sqlite "$python" "$@" &
sqlite_pid=$!
trap 'kill -TERM "$pg_pid" "$sqlite_pid" 2>/dev/null; wait_all "$pg_pid" "$sqlite_pid"; exit 143' TERM
trap 'kill -INT "$pg_pid" "$sqlite_pid" 2>/dev/null; wait_all "$pg_pid" "$sqlite_pid"; exit 130' INT

echo "== SQLite: every test (the PostgreSQL pass runs alongside, log in $pg_log); the unit tests first"
wait_all "$sqlite_pid"
status_of "$sqlite_pid"; sqlite=$STATUS
wait_all "$pg_pid"
status_of "$pg_pid"; postgres=$STATUS
echo
echo "== PostgreSQL: every integration test and every test that touches the database"
cat "$pg_log"
echo
echo "== SQLite pass: exit $sqlite; PostgreSQL pass: exit $postgres"
[ "$sqlite" -eq 0 ] && [ "$postgres" -eq 0 ]
