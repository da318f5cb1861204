"""Run a real localdlc process for tests, plus pytest fixtures.

    pytest_plugins = ["tests.support.localdlc"]   # in tests/conftest.py

Fixtures:
    localdlc           session-scoped shared instance (do not kill/restart it; Creating/EnvPreparing 0.1 s)
    localdlc_factory   function-scoped: localdlc_factory(**options) -> a fresh LocalDLC, stopped at teardown

LocalDLC(...) starts ``python -m localdlc`` (sys.executable) on a free loopback port with a temp data dir and
a random AccessKey pair, waits until /_localdlc/health answers, and offers:
    .endpoint ("127.0.0.1:port"), .host, .port, .access_key_id, .access_key_secret, .data_dir, .pid
    .client()                       an official alibabacloud_pai_dlc20201203 Client bound to it
    .config()                       the alibabacloud_tea_openapi Config used by .client()
    .stats() / .reset_stats()       per-action call counts: {"calls": {...}, "faulted": {...}, "total": n}
    .set_faults(rules, replace=True) / .clear_faults() / .faults()
    .wait_for_status(job_id, statuses, timeout)  poll GetJob through the SDK
    .kill()      SIGKILL the service (its pods die with it)
    .restart()   start again on the same port, data dir and keys (after kill() or stop())
    .stop()      SIGTERM, then SIGKILL if it does not exit

Helpers: job_processes(job_id) -> live PIDs started for a job (found via the LOCALDLC_JOB_ID marker in
/proc/<pid>/environ), alive(pid), wait_until(predicate, timeout), free_port().
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TERMINAL = ("Succeeded", "Failed", "Stopped")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def job_processes(job_id: str) -> list[int]:
    """PIDs of live processes started for this job (found by the marker localdlc puts in their environment)."""
    marker = f"LOCALDLC_JOB_ID={job_id}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != b"Z":
            pids.append(int(entry))
    return pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Poll predicate until it returns something truthy (returned) or timeout passes (last value returned)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


class LocalDLC:
    """One localdlc subprocess. Options map to CLI flags: cpu=1 -> --cpu 1, workspace_id=[..] -> repeated."""

    def __init__(self, data_dir: str | Path | None = None, port: int | None = None,
                 access_key_id: str | None = None, access_key_secret: str | None = None,
                 env: dict[str, str] | None = None, startup_timeout: float = 15.0, **options: Any) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="localdlc-"))
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.access_key_id = access_key_id or "LTAI" + secrets.token_hex(8)
        self.access_key_secret = access_key_secret or secrets.token_urlsafe(24)
        self.options = options
        self.env = env or {}
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / "localdlc.stderr.log"
        self.start()

    # -- process control -------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"http://{self.endpoint}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def _argv(self) -> list[str]:
        # The AccessKey pair goes through the environment, not argv (argv is world-readable in /proc).
        argv = [sys.executable, "-m", "localdlc", "--host", self.host, "--port", str(self.port),
                "--data-dir", str(self.data_dir)]
        for key, value in self.options.items():
            flag = "--" + key.replace("_", "-")
            if value is None or value is False:
                continue
            if key == "faults" and not isinstance(value, str):
                value = json.dumps(value)
            values = value if isinstance(value, list | tuple) else [value]
            for item in values:
                argv += [flag] if item is True else [flag, str(item)]
        return argv

    def start(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["LOCALDLC_ACCESS_KEY_ID"] = self.access_key_id
        env["LOCALDLC_ACCESS_KEY_SECRET"] = self.access_key_secret
        env.update(self.env)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self._argv(), cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"localdlc exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                self.admin("GET", "/_localdlc/health", timeout=1.0)
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.05)
        raise RuntimeError(f"localdlc did not answer within {self.startup_timeout}s:\n{self.log_text()}")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def kill(self) -> None:
        """SIGKILL, like a crash; the service's pods die with it (PDEATHSIG + guardian)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def restart(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- SDK -------------------------------------------------------------------------------------------------------
    def config(self, **overrides: Any) -> Any:
        from alibabacloud_tea_openapi.models import Config

        values = dict(access_key_id=self.access_key_id, access_key_secret=self.access_key_secret,
                      endpoint=self.endpoint, protocol="http", region_id="cn-hangzhou")
        values.update(overrides)
        return Config(**values)

    def client(self, **overrides: Any) -> Any:
        from alibabacloud_pai_dlc20201203.client import Client

        return Client(self.config(**overrides))

    def wait_for_status(self, job_id: str, statuses: Iterable[str] = TERMINAL, timeout: float = 20.0,
                        client: Any = None) -> Any:
        """Poll GetJob until its Status is one of statuses; returns the GetJobResponseBody."""
        from alibabacloud_pai_dlc20201203 import models

        wanted = set(statuses)
        client = client or self.client()
        deadline = time.monotonic() + timeout
        while True:
            body = client.get_job(job_id, models.GetJobRequest()).body
            if body.status in wanted:
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} is {body.status}, not in {sorted(wanted)} after {timeout}s")
            time.sleep(0.05)

    # -- admin endpoints -----------------------------------------------------------------------------------------------
    def admin(self, method: str, path: str, payload: Any = None, timeout: float = 5.0) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return json.loads(resp.read())

    def stats(self) -> dict[str, Any]:
        return self.admin("GET", "/_localdlc/stats")

    def reset_stats(self) -> dict[str, Any]:
        return self.admin("POST", "/_localdlc/stats/reset")

    def set_faults(self, rules: dict[str, Any] | list[dict[str, Any]], replace: bool = True) -> list[dict]:
        """Install fault rules, e.g. {"action": "CreateJob", "mode": "503", "count": 2}."""
        method = "PUT" if replace else "POST"
        return self.admin(method, "/_localdlc/faults", rules)["faults"]

    def clear_faults(self) -> None:
        self.admin("DELETE", "/_localdlc/faults")

    def faults(self) -> list[dict[str, Any]]:
        return self.admin("GET", "/_localdlc/faults")["faults"]


@pytest.fixture(scope="session")
def localdlc() -> Iterator[LocalDLC]:
    """A shared localdlc for the whole session; tests must not kill it or rely on its counters being zero.

    Creating and EnvPreparing last 0.1 s here (default 0.3 s) to keep suites fast; they are still visible.
    """
    instance = LocalDLC(creating_seconds=0.1, env_preparing_seconds=0.1)
    try:
        yield instance
    finally:
        instance.cleanup()


@pytest.fixture
def localdlc_factory() -> Iterator[Any]:
    """Start private instances: localdlc_factory(cpu=1, creating_seconds=0.1, ...); all stopped afterwards."""
    started: list[LocalDLC] = []

    def make(**options: Any) -> LocalDLC:
        instance = LocalDLC(**options)
        started.append(instance)
        return instance

    try:
        yield make
    finally:
        for instance in started:
            instance.cleanup()
