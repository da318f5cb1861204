#!/usr/bin/env bash
# `make test`: every test on SQLite and, at the same time, every integration or database test (marker
# `postgres`, tests/conftest.py) on a throwaway PostgreSQL cluster. Most of the suite's time is spent waiting
# on real processes (jobs running on localdlc, the beat's sync), so the two passes overlap well even on two
# cores. The PostgreSQL pass writes to a log that is printed once the SQLite pass is done, so each pass reads
# as one block. Fails if either pass failed.
#
#   scripts/test-both-databases.sh PYTHON [PYTEST ARGS...]
set -uo pipefail
cd "$(dirname "$0")/.."
python="$1"; shift
mkdir -p var
pg_log="var/test-postgres.log"

bash scripts/install-postgres.sh run "$python" -m pytest -m postgres "$@" >"$pg_log" 2>&1 &
pg_pid=$!
trap 'kill -TERM "$pg_pid" 2>/dev/null' INT TERM

echo "== SQLite: every test (PostgreSQL pass running alongside, log in $pg_log)"
env -u DATABASE_URL "$python" -m pytest "$@"
sqlite=$?

wait "$pg_pid"
postgres=$?
echo
echo "== PostgreSQL: every integration test and every test that touches the database"
cat "$pg_log"
echo
echo "== SQLite pass: exit $sqlite; PostgreSQL pass: exit $postgres"
[ "$sqlite" -eq 0 ] && [ "$postgres" -eq 0 ]
