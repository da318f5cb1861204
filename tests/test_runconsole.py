"""`make run` starts every service, and SIGTERM stops the whole process tree, leaving no child behind."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from consoleapp.stack import BASE_DIR, alive, descendants, free_port

pytestmark = pytest.mark.integration


def test_make_run_starts_everything_and_sigterm_leaves_no_child(tmp_path: Path):
    env = dict(os.environ, DLC_DATA_DIR=str(tmp_path), DLC_PORT=str(free_port()), LOCALDLC_PORT=str(free_port()))
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "run"], cwd=BASE_DIR, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    output = []
    try:
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
        tree = descendants(proc.pid)
        names = " ".join(Path(f"/proc/{p}/cmdline").read_text().replace("\0", " ") for p in tree if alive(p))
        for service in ("redis-server", "localdlc", "worker", "beat", "runserver"):
            assert service in names, f"{service} not running: {names}"

        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        time.sleep(0.5)
        left = [p for p in tree if alive(p)]
        assert left == [], f"processes left behind: {left}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
