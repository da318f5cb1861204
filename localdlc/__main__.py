"""python -m localdlc: run the local PAI-DLC stand-in.

Every option also reads an environment variable (the flag wins). See README.md for the full contract.
"""

from __future__ import annotations

import argparse
import fcntl
import ipaddress
import json
import os
import signal
import sys
import threading
from pathlib import Path

from . import actions
from .auth import Verifier
from .faults import Faults
from .runner import Runner, RunnerConfig
from .server import Service, make_server
from .store import Store

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8100
DEFAULT_DATA_DIR = "./var/localdlc"


def _machine_memory_gib() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1024 ** 3
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-Linux
        return 16.0


def default_cpu() -> float:
    """Emulated cores: 4 per host core, at least 32, so several small jobs run side by side."""
    return float(max(32, 4 * (os.cpu_count() or 1)))


def default_memory_gib() -> float:
    """Emulated GiB: 4x the host's memory, at least 128 (pods rarely use what they request)."""
    return float(max(128, round(4 * _machine_memory_gib())))


def _env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m localdlc",
        description="A local PAI-DLC OpenAPI 2020-12-03 service for the official SDK "
                    "(alibabacloud_pai_dlc20201203). It runs each job pod as a local process, as the user "
                    "who started it: a single-user development backend, never for untrusted users.",
        epilog="Capacity is emulated: jobs reserve the CPU/memory/GPU their ResourceConfig or EcsSpec asks for "
               "and queue (highest Priority first, then oldest) when the total would exceed it. Test knobs: "
               "LOCALDLC_MINUTE_SECONDS=N makes one JobMaxRunningTimeMinutes minute last N seconds; "
               "--creating-seconds/--env-preparing-seconds set how long Creating/EnvPreparing last.",
    )
    p.add_argument("--host", default=_env("LOCALDLC_HOST", DEFAULT_HOST),
                   help="address to bind [env LOCALDLC_HOST, default 127.0.0.1]; a warning is printed when "
                        "it is not loopback")
    p.add_argument("--port", type=int, default=int(_env("LOCALDLC_PORT", str(DEFAULT_PORT)) or DEFAULT_PORT),
                   help="TCP port, 0 picks a free one [env LOCALDLC_PORT, default 8100]")
    p.add_argument("--data-dir", default=_env("LOCALDLC_DATA_DIR", DEFAULT_DATA_DIR),
                   help="state directory: SQLite store, pod working dirs and logs "
                        "[env LOCALDLC_DATA_DIR, default ./var/localdlc]")
    p.add_argument("--access-key-id", default=_env("LOCALDLC_ACCESS_KEY_ID"),
                   help="the only AccessKey id accepted (required) [env LOCALDLC_ACCESS_KEY_ID]")
    p.add_argument("--access-key-secret", default=_env("LOCALDLC_ACCESS_KEY_SECRET"),
                   help="its secret, used to verify ACS3-HMAC-SHA256 signatures (required) "
                        "[env LOCALDLC_ACCESS_KEY_SECRET]")
    p.add_argument("--cpu", type=float, default=float(_env("LOCALDLC_CPU", "0") or 0) or default_cpu(),
                   help="emulated CPU cores available to jobs [env LOCALDLC_CPU, default max(32, 4 x host "
                        f"cores) = {default_cpu():g}]")
    p.add_argument("--memory-gib", type=float,
                   default=float(_env("LOCALDLC_MEMORY_GIB", "0") or 0) or default_memory_gib(),
                   help="emulated memory in GiB [env LOCALDLC_MEMORY_GIB, default max(128, 4 x host memory) "
                        f"= {default_memory_gib():g}]")
    p.add_argument("--gpu", type=float, default=float(_env("LOCALDLC_GPU", "0") or 0),
                   help="emulated GPUs [env LOCALDLC_GPU, default 0: jobs that request GPUs fail with "
                        "InsufficientResource]")
    p.add_argument("--workspace-id", action="append", default=None,
                   help="accept only this WorkspaceId in CreateJob (repeatable; default: any) "
                        "[env LOCALDLC_WORKSPACE_IDS, comma-separated]")
    p.add_argument("--resource-id", action="append", default=None,
                   help="accept only this ResourceId (quota) in CreateJob (repeatable; default: any) "
                        "[env LOCALDLC_RESOURCE_IDS, comma-separated]")
    p.add_argument("--faults", default=_env("LOCALDLC_FAULTS"),
                   help="fault rules to start with, a JSON object or list (see README) [env LOCALDLC_FAULTS]")
    p.add_argument("--creating-seconds", type=float, default=float(_env("LOCALDLC_CREATING_SECONDS", "0.3")),
                   help="how long a job stays Creating [env LOCALDLC_CREATING_SECONDS, default 0.3]")
    p.add_argument("--env-preparing-seconds", type=float,
                   default=float(_env("LOCALDLC_ENV_PREPARING_SECONDS", "0.3")),
                   help="how long a job stays EnvPreparing [env LOCALDLC_ENV_PREPARING_SECONDS, default 0.3]")
    p.add_argument("--stop-grace-seconds", type=float, default=float(_env("LOCALDLC_STOP_GRACE_SECONDS", "3")),
                   help="SIGTERM-to-SIGKILL grace when stopping pods, unless the job sets "
                        "Settings.TerminationGracePeriodSeconds [env LOCALDLC_STOP_GRACE_SECONDS, default 3]")
    p.add_argument("--metrics-seconds", type=float, default=float(_env("LOCALDLC_METRICS_SECONDS", "2")),
                   help="how often running pods' CPU, memory and disk I/O are sampled for GetJobMetrics "
                        "[env LOCALDLC_METRICS_SECONDS, default 2]")
    p.add_argument("--minute-seconds", type=float, default=float(_env("LOCALDLC_MINUTE_SECONDS", "60")),
                   help=argparse.SUPPRESS)  # test knob, documented in README.md and the epilog
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.access_key_id or not args.access_key_secret:
        print("localdlc: --access-key-id and --access-key-secret (or LOCALDLC_ACCESS_KEY_ID / "
              "LOCALDLC_ACCESS_KEY_SECRET) are required", file=sys.stderr)
        return 2
    workspaces = args.workspace_id or [w for w in (_env("LOCALDLC_WORKSPACE_IDS", "") or "").split(",") if w]
    resource_ids = args.resource_id or [r for r in (_env("LOCALDLC_RESOURCE_IDS", "") or "").split(",") if r]
    faults = Faults()
    if args.faults:
        try:
            faults.add(json.loads(args.faults))
        except ValueError as exc:
            print(f"localdlc: invalid --faults: {exc}", file=sys.stderr)
            return 2
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host == "localhost"
    if not loopback:
        print(f"localdlc: WARNING: binding {args.host}, not loopback. Anyone who can reach this port and "
              "holds the AccessKey can run commands as this user.", file=sys.stderr, flush=True)

    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # Two instances on one data dir would each "recover" (fail) the other's running jobs: refuse.
    lock = open(data_dir / "localdlc.lock", "w")  # noqa: SIM115 - held for the life of the process
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        print(f"localdlc: another localdlc is already using {data_dir}", file=sys.stderr)
        return 3
    store = Store(data_dir / "localdlc.sqlite3")
    runner = Runner(store, RunnerConfig(
        data_dir=data_dir, cpu=args.cpu, memory_gib=args.memory_gib, gpu=args.gpu,
        creating_seconds=args.creating_seconds, env_seconds=args.env_preparing_seconds,
        minute_seconds=args.minute_seconds, grace_seconds=args.stop_grace_seconds,
        metrics_seconds=args.metrics_seconds))
    ctx = actions.Context(store=store, runner=runner, data_dir=data_dir,
                          workspaces=set(workspaces) or None, resource_ids=set(resource_ids) or None)
    service = Service(ctx, Verifier(args.access_key_id, args.access_key_secret), faults)
    server = make_server(args.host, args.port, service)
    runner.start()

    def stop(signum: int, frame: object) -> None:
        # shutdown() blocks until serve_forever returns, so it must not run on the serving thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    host, port = server.server_address[:2]
    print(f"localdlc listening on http://{host}:{port} (data dir {data_dir}, capacity {args.cpu:g} CPU, "
          f"{args.memory_gib:g} GiB, {args.gpu:g} GPU)", file=sys.stderr, flush=True)
    try:
        # SIGTERM's shutdown() waits for this poll: 50 ms keeps a stop (tests stop hundreds) from idling.
        server.serve_forever(poll_interval=0.05)
    finally:
        runner.shutdown()
        server.server_close()
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
