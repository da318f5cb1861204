"""What every benchmark shares: Django set-up against a chosen database, timing, the machine, and figures.

A benchmark module runs in its own process (Django reads DATABASE_URL once, at start-up), prints each figure
with the data size as it goes, and appends it as a JSON line to $BENCH_RESULTS so `python -m bench` can print
the summary against the targets.
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def setup_django(data_dir: str | Path) -> None:
    """Django for a benchmark process: settings from the environment, data under data_dir, migrated."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "consoleapp.settings")
    os.environ["DLC_DATA_DIR"] = str(data_dir)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def vendor() -> str:
    from django.db import connection

    return connection.vendor


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def timed(fn: Callable[[], Any], runs: int, warmup: int = 2) -> list[float]:
    """Wall times of `runs` calls (after `warmup` untimed ones), in milliseconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def p50(values: list[float]) -> float:
    return statistics.median(values)


def rss_kib(pid: int | None = None) -> int:
    """Resident set size of a process (this one by default), from /proc."""
    with open(f"/proc/{pid or 'self'}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024**2, 1),
        "cpu": model or platform.processor(),
        "load_avg_1m": os.getloadavg()[0],
        "python": platform.python_version(),
    }


def record(bench: str, figure: str, value: float | int | str, unit: str = "", *, size: int | str = "",
           db: str = "", target: str = "", met: bool | None = None, note: str = "") -> None:
    """Print one figure and append it to $BENCH_RESULTS (JSON lines) for the summary."""
    shown = f"{value:.2f}" if isinstance(value, float) else str(value)
    verdict = "" if met is None else ("  [met]" if met else "  [NOT MET]")
    where = " ".join(x for x in (f"db={db}" if db else "", f"size={size}" if size != "" else "") if x)
    print(f"  {bench:<10} {where:<24} {figure:<44} {shown:>10} {unit:<6}"
          f"{('  target ' + target) if target else ''}{verdict}{('  (' + note + ')') if note else ''}", flush=True)
    path = os.environ.get("BENCH_RESULTS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"bench": bench, "figure": figure, "value": value, "unit": unit, "size": size,
                                "db": db, "target": target, "met": met, "note": note}) + "\n")


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)
