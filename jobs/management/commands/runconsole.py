"""Starts the whole embedded console (Redis, localdlc, Celery worker and beat, web) until Ctrl-C or SIGTERM."""

import os
import signal
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from consoleapp.stack import Stack


class _Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise _Stop()


class Command(BaseCommand):
    help = "Run the console with every service it needs; Ctrl-C or SIGTERM stops them all."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("DLC_PORT", "8000")))
        parser.add_argument("--localdlc-port", type=int, default=int(os.environ.get("LOCALDLC_PORT", "8100")))

    def handle(self, *args, port, localdlc_port, **options):
        signal.signal(signal.SIGTERM, _raise_stop)
        signal.signal(signal.SIGINT, _raise_stop)
        call_command("migrate", verbosity=0, interactive=False)
        call_command("bootstrap")
        stack = Stack(data_dir=settings.DATA_DIR, web_port=port, localdlc_port=localdlc_port,
                      sync_interval=settings.DLC_SYNC_INTERVAL)
        try:
            stack.start()
            self.stdout.write(self.style.SUCCESS(
                f"\nDLC Console is up: {stack.url}/\n"
                f"Sign in as {settings.DEMO_USERNAME} / {settings.DEMO_PASSWORD}\n"
                f"Data dir: {settings.DATA_DIR}. Press Ctrl-C to stop.\n"
            ))
            while True:
                for name, proc in stack.procs.items():
                    if proc.poll() is not None:
                        self.stderr.write(f"{name} exited with code {proc.returncode}; stopping everything.")
                        raise _Stop()
                time.sleep(0.5)
        except _Stop:
            pass
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            self.stdout.write("Stopping…")
            stack.stop()
            self.stdout.write("Stopped.")
