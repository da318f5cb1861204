"""Starts the whole embedded console (Redis, localdlc, Celery worker and beat, web) until it is told to stop.

It stops everything it started on Ctrl-C, SIGTERM or SIGHUP (the terminal closed), when a service exits, and
when the process that launched it dies: every service runs in its own session (consoleapp.stack), so nothing
but this command would ever stop them, and a launcher killed with SIGKILL (e.g. `make run` under a supervisor
that kills make) forwards no signal. The supervision loop notices the launcher's death by its parent pid
changing, which Linux does when it re-parents an orphan.
"""

import os
import signal
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from consoleapp.stack import Stack

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Celery's worker and beat are started again when they exit on their own (see Stack.restart_exited), unless
# they do so more than MAX_RESTARTS times within RESTART_WINDOW seconds: then something is wrong for good.
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0


class _Stop(Exception):
    pass


class _StopOnce:
    """A signal handler that raises _Stop the first time only.

    `timeout make run` signals make, which forwards SIGTERM, and then make's whole group: a second _Stop
    raised while the first one is being handled would skip the clean-up.
    """

    def __init__(self) -> None:
        self.raised = False

    def __call__(self, signum, frame) -> None:
        if not self.raised:
            self.raised = True
            raise _Stop()


def _say(stream, message: str) -> None:
    # The terminal or pipe may be gone with the launcher (EIO, EPIPE); that must not keep the stack from stopping.
    try:
        stream.write(message)
        stream.flush()
    except (OSError, ValueError):
        pass


class Command(BaseCommand):
    help = "Run the console with every service it needs; Ctrl-C, SIGTERM or its launcher's death stops them all."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("DLC_PORT", "8000")))
        parser.add_argument("--localdlc-port", type=int, default=int(os.environ.get("LOCALDLC_PORT", "8100")))

    def handle(self, *args, port, localdlc_port, **options):
        launcher = os.getppid()
        handler = _StopOnce()
        for sig in STOP_SIGNALS:
            signal.signal(sig, handler)
        call_command("migrate", verbosity=0, interactive=False)
        call_command("bootstrap")
        # The demo's localdlc emulates 8 GPUs (its own default is none), so a newcomer can pick a GPU instance type
        # and see it run, as processes like every pod; LOCALDLC_GPU=0 restores the refusal.
        os.environ.setdefault("LOCALDLC_GPU", "8")
        stack = Stack(data_dir=settings.DATA_DIR, web_port=port, localdlc_port=localdlc_port,
                      sync_interval=settings.DLC_SYNC_INTERVAL)
        try:
            stack.start()
            _say(self.stdout, self.style.SUCCESS(
                f"\nDLC Console is up: {stack.url}/\n"
                f"Sign in as {settings.DEMO_USERNAME} / {settings.DEMO_PASSWORD}\n"
                f"Data dir: {settings.DATA_DIR}. Press Ctrl-C to stop.\n"
            ))
            restarts: list[float] = []
            while True:
                for name, code in stack.restart_exited():
                    now = time.monotonic()
                    restarts = [t for t in restarts if now - t < RESTART_WINDOW] + [now]
                    if len(restarts) > MAX_RESTARTS:
                        _say(self.stderr, f"{name} exited with code {code}, too often; stopping everything.")
                        raise _Stop()
                    _say(self.stderr, f"{name} exited with code {code}; started it again.\n")
                for name, proc in stack.procs.items():
                    if proc.poll() is not None:
                        _say(self.stderr, f"{name} exited with code {proc.returncode}; stopping everything.")
                        raise _Stop()
                if os.getppid() != launcher:
                    _say(self.stderr, f"The process that started this one ({launcher}) exited; stopping everything.")
                    raise _Stop()
                time.sleep(0.5)
        except _Stop:
            pass
        finally:
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
            _say(self.stdout, "Stopping…")
            stack.stop()
            _say(self.stdout, "Stopped.")
