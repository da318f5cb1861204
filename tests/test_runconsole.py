"""`make run` starts every service, and stopping it, however it happens, leaves no child behind: SIGTERM to make,
make killed outright (SIGKILL, which nothing can forward), or the terminal closing (SIGHUP to make's group)."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from consoleapp.stack import BASE_DIR, alive, descendants, free_port

pytestmark = pytest.mark.integration

SERVICES = ("redis-server", "localdlc", "worker", "beat", "runserver")


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


@pytest.fixture
def make_run(tmp_path: Path):
    """Start `make run` in its own session; yields (make's Popen, every process below make once it is up, what it
    printed until then).

    Whatever the test leaves running is killed by pid afterwards: the services run in sessions of their own,
    so killing make's group would not reach them.
    """
    env = dict(os.environ, DLC_DATA_DIR=str(tmp_path), DLC_PORT=str(free_port()), LOCALDLC_PORT=str(free_port()))
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run"], cwd=BASE_DIR, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    tree: list[int] = []
    try:
        output = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            output.append(line)
            if "Sign in as" in line:
                break
        text = "".join(output)
        assert "DLC Console is up" in text, text
        assert "Sign in as demo / demo" in text
        tree.extend(descendants(proc.pid))
        names = " ".join(cmdline(p) for p in tree if alive(p))
        for service in SERVICES:
            assert service in names, f"{service} not running: {names}"
        assert any("manage.py runconsole" in cmdline(p) for p in tree)
        yield proc, tree, text
    finally:
        for pid in [proc.pid, *tree]:
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        proc.wait(timeout=10)
        proc.stdout.close()


def left_behind(tree: list[int], timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in tree):
        time.sleep(0.2)
    return [f"{p}: {cmdline(p)}" for p in tree if alive(p)]


def test_make_run_starts_everything_and_sigterm_leaves_no_child(make_run):
    proc, tree, text = make_run
    # The demo's localdlc emulates GPUs, so that GPU instance types run there too (as processes).
    assert " 8 GPU)" in text, text
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert left_behind(tree, 5) == []


@pytest.mark.parametrize("how", ["SIGKILL to make", "SIGHUP to make's group"])
def test_when_make_dies_without_passing_a_signal_on_runconsole_stops_everything(make_run, how):
    # Make forwards SIGTERM to its recipe, but a SIGKILL cannot be forwarded, and on SIGHUP make relies on the
    # group having received it too: runconsole must notice its launcher's death, and treat SIGHUP as a stop.
    proc, tree, _ = make_run
    if how == "SIGKILL to make":
        proc.kill()
    else:
        os.killpg(proc.pid, signal.SIGHUP)
    proc.wait(timeout=30)
    # The stack's own stop waits up to 10 s for the services before killing what is left.
    assert left_behind(tree, 30) == [], f"after {how}"


def test_a_worker_that_dies_is_started_again_and_sigterm_still_stops_all(make_run):
    # Celery's worker can exit on its own ("Unrecoverable error" when Redis goes away under it); make run must not
    # lose the console's worker, nor stop everything, for that.
    proc, tree, _ = make_run
    worker = next(p for p in tree if alive(p) and " worker " in cmdline(p) and "celery" in cmdline(p))
    os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:
        workers = [p for p in descendants(proc.pid) if " worker " in cmdline(p) and "celery" in cmdline(p)]
        if any(p != worker for p in workers):
            break
        assert time.monotonic() < deadline, "no new worker"
        assert proc.poll() is None, "make run stopped"
        time.sleep(0.2)
    everything = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert left_behind(everything, 5) == []
