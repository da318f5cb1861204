#!/usr/bin/env bash
# PostgreSQL for the tests and benchmarks, from Debian's packages; no docker.
#
#   scripts/install-postgres.sh              install PostgreSQL (apt-get) when no server binaries are found
#   scripts/install-postgres.sh run CMD...   ... then start a throwaway cluster on a free loopback port in a
#                                            temp dir, export DATABASE_URL for it, run CMD (stdin: /dev/null),
#                                            and stop and delete the cluster however CMD or this script ends
#                                            (SIGKILL included); exits with CMD's status
#
# The cluster runs as the invoking user, or as `postgres` when invoked as root (postgres refuses root).
# It trades durability for speed (fsync off) unless DLC_PG_DURABLE=1: it lives only as long as CMD.
set -euo pipefail

pg_bindir() {
  # The newest installed major version.
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

install_postgres() {
  if [ -n "$(pg_bindir)" ] && [ -x "$(pg_bindir)/initdb" ]; then
    return 0
  fi
  echo "Installing PostgreSQL from Debian's packages..."
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "Need root (or sudo) to install PostgreSQL" >&2; exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
}

free_port() {
  local python
  python="$(command -v python3.11 || command -v python3)"
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Globals, not locals: the EXIT trap that stops the cluster runs after run_with_cluster has returned.
PG_BINDIR="" PG_DIR="" PG_AS=()

stop_cluster() {
  [ -n "$PG_DIR" ] || return 0
  "${PG_AS[@]}" "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}

run_with_cluster() {
  local bindir dir port password as_user=() db="dlc_console" user="dlc"
  bindir="$(pg_bindir)"
  dir="$(mktemp -d "${TMPDIR:-/tmp}/dlc-pg.XXXXXX")"
  port="$(free_port)"
  password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
    as_user=(runuser -u postgres --)
  fi

  PG_BINDIR="$bindir" PG_DIR="$dir" PG_AS=("${as_user[@]}")
  trap stop_cluster EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  printf '%s\n' "$password" > "$dir/pwfile"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pwfile"
  "${as_user[@]}" "$bindir/initdb" -D "$dir/data" -U "$user" --pwfile="$dir/pwfile" --auth=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"

  local options="-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200"
  if [ "${DLC_PG_DURABLE:-0}" != "1" ]; then
    options="$options -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  "${as_user[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$options" -w -t 60 start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  PGPASSWORD="$password" "$bindir/createdb" -h 127.0.0.1 -p "$port" -U "$user" "$db"
  # If this script is killed outright (SIGKILL: no trap runs), a watchdog still stops and removes the cluster.
  local parent=$$
  ( trap '' INT TERM
    while kill -0 "$parent" 2>/dev/null; do sleep 1; done
    stop_cluster ) </dev/null >/dev/null 2>&1 &

  export DATABASE_URL="postgres://$user:$password@127.0.0.1:$port/$db"
  # The command runs in the background so a SIGTERM (CI timeout, cancel) reaches this script at once; it is
  # passed on, and the cluster goes when the command has stopped. The traps are set before the command starts:
  # a signal that came while a trap was being replaced could be lost, leaving this script waiting on a command
  # that was never told (seen once: a cancel that waited out the whole command).
  CHILD=""
  trap 'stop_child TERM; exit 143' TERM
  trap 'stop_child INT; exit 130' INT
  echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (throwaway cluster in $dir)"
  "$@" &
  CHILD=$!
  # A bare `wait` can miss a SIGTERM that lands just before it blocks: bash then runs the trap only once the
  # command has ended (a cancelled test run waited out its whole command; a CI run's test of this timed out).
  # Short waits bound that to half a second; the last `wait` only collects the status of a command already ended.
  while kill -0 "$CHILD" 2>/dev/null; do sleep 0.5 & wait $!; done
  local status=0
  wait "$CHILD" || status=$?
  return "$status"
}

# Pass a signal on to the command and wait for it, boundedly. A signal sent in the instant after the fork, before
# the child has exec'd the command, is taken by the child's copy of this script's trap and lost at the exec (a CI
# run's test of this waited out its whole `sleep 60`): so if the command still runs after 5 s it is sent SIGTERM
# again, and SIGKILL after 5 more.
stop_child() {
  [ -n "$CHILD" ] || return 0
  kill -"$1" "$CHILD" 2>/dev/null
  local i
  for i in $(seq 100); do
    kill -0 "$CHILD" 2>/dev/null || break
    [ "$i" -eq 50 ] && kill -TERM "$CHILD" 2>/dev/null
    sleep 0.1
  done
  kill -KILL "$CHILD" 2>/dev/null
  wait "$CHILD" 2>/dev/null
}

case "${1:-install}" in
  install) install_postgres ;;
  run)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 run CMD..." >&2; exit 2; }
    install_postgres
    run_with_cluster "$@"
    ;;
  *) echo "usage: $0 [install | run CMD...]" >&2; exit 2 ;;
esac
