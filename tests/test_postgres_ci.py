"""`make test` runs the integration tests a second time on PostgreSQL: scripts/install-postgres.sh starts a
throwaway cluster, hands its DATABASE_URL to the command, and removes the cluster however the command ends."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from consoleapp.stack import BASE_DIR

SCRIPT = BASE_DIR / "scripts" / "install-postgres.sh"

pytestmark = pytest.mark.integration

PROBE = """
import os, sys, psycopg
url = os.environ["DATABASE_URL"]
with psycopg.connect(url, autocommit=True) as conn:
    conn.execute("CREATE TABLE probe (id int)")
    data_dir = conn.execute("SHOW data_directory").fetchone()[0]
print(url, data_dir, sep="\\n")
sys.exit(7)
"""


def command_lines() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_text(errors="replace").replace("\0", " "))
        except OSError:  # exited meanwhile
            pass
    return found


def test_throwaway_cluster_serves_the_command_and_is_removed_afterwards():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    result = subprocess.run(
        ["bash", str(SCRIPT), "run", sys.executable, "-c", PROBE + "\n"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 7, "the command's exit status must come through: " + result.stderr
    url, data_dir = result.stdout.strip().splitlines()[-2:]
    parsed = urlparse(url)
    assert parsed.scheme == "postgres" and parsed.hostname == "127.0.0.1" and parsed.port
    assert parsed.password and len(parsed.password) >= 32, "the cluster must not accept a guessable password"
    assert not Path(data_dir).exists(), "the cluster's directory must be deleted"
    assert not [line for line in command_lines() if data_dir in line], "no postgres may outlive the command"


def start_run(*command: str) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    proc = subprocess.Popen(["bash", str(SCRIPT), "run", *command], env=env, stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    banner = proc.stdout.readline()  # "PostgreSQL 15.x on 127.0.0.1:port (throwaway cluster in DIR)"
    cluster_dir = banner.rsplit(" ", 1)[1].rstrip(")\n")
    assert Path(cluster_dir).is_dir(), banner
    return proc, cluster_dir


def wait_gone(cluster_dir: str, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(cluster_dir).exists() and not [c for c in command_lines() if cluster_dir in c]:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("how", ["SIGTERM to the group", "SIGTERM to the script", "SIGKILL to the script"])
def test_a_killed_run_still_removes_its_cluster(how):
    proc, cluster_dir = start_run("sleep", "60")
    try:
        if how == "SIGTERM to the group":  # CI cancelling the job
            os.killpg(proc.pid, signal.SIGTERM)
        elif how == "SIGTERM to the script":  # `timeout`: the command must be told too, not waited for
            proc.send_signal(signal.SIGTERM)
        else:  # no trap can run: the watchdog must clean up
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert wait_gone(cluster_dir), f"cluster {cluster_dir} left behind"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the orphaned `sleep` after a SIGKILL
        except ProcessLookupError:
            pass


@pytest.mark.postgres
def test_this_pass_runs_on_the_database_it_was_given():
    from django.db import connection

    expected = "postgresql" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "sqlite"
    assert connection.vendor == expected
