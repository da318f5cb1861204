"""python -m bench: every benchmark, on SQLite and on PostgreSQL, each in its own process on a fresh database.

    python -m bench                                   # list at 1k and 100k jobs, sync, submit, job page, usage...
    python -m bench --sizes 1000,100000,1000000       # the full list set (the 1M runs take a while)
    python -m bench --db sqlite --only list,sync      # a subset
    python -m bench --only localdlc                   # localdlc's scheduler alone (no database: runs once)

PostgreSQL comes from scripts/install-postgres.sh: a throwaway cluster (durable settings, as in production)
started for the run and deleted after it. Figures print as they come; a summary against the targets follows,
and the run is kept as JSON lines and Markdown under var/bench/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

from bench.common import ROOT, heading, machine

BENCHES = ("list", "sync", "live", "usage", "localdlc")


def _pg_database(base_url: str, name: str) -> str:
    """A fresh database on the cluster DATABASE_URL points at; its URL."""
    import psycopg

    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunparse(urlparse(base_url)._replace(path=f"/{name}"))


def _run(module: str, args: list[str], db: str, base_url: str) -> int:
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    if db == "postgres":
        env["DATABASE_URL"] = _pg_database(base_url, f"bench_{module.rsplit('.', 1)[-1]}")
    print(f"\n$ python -m {module} {' '.join(args)}   [{db}]", flush=True)
    return subprocess.call([sys.executable, "-m", module, *args], cwd=ROOT, env=env)


def run_on(db: str, args: argparse.Namespace) -> int:
    base_url = os.environ.get("DATABASE_URL", "")
    failures = 0
    if "list" in args.only:
        failures += _run("bench.list_pages", ["--sizes", args.sizes, "--runs", str(args.runs)], db, base_url) != 0
    if "sync" in args.only:
        failures += _run("bench.sync", ["--active", str(args.active)], db, base_url) != 0
    if "live" in args.only:
        failures += _run("bench.live", ["--jobs", str(args.jobs), "--log-lines", str(args.log_lines)],
                         db, base_url) != 0
    if "usage" in args.only:
        failures += _run("bench.usage", ["--sizes", args.sizes, "--runs", "5"], db, base_url) != 0
    return failures


def summary(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = ["| bench | db | size | figure | value | target | met |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        value = f"{r['value']:.2f}" if isinstance(r["value"], float) else str(r["value"])
        met = "" if r["met"] is None else ("yes" if r["met"] else "**no**")
        out.append(f"| {r['bench']} | {r['db']} | {r['size']} | {r['figure']} | {value} {r['unit']} | "
                   f"{r['target']} | {met} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,100000", help="job counts for the list (default 1000,100000)")
    parser.add_argument("--db", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated, from {','.join(BENCHES)}")
    parser.add_argument("--runs", type=int, default=30, help="timed requests per list page kind")
    parser.add_argument("--active", type=int, default=10_000, help="active jobs in the sync cycle")
    parser.add_argument("--jobs", type=int, default=100, help="concurrent wizard posts")
    parser.add_argument("--log-lines", type=int, default=100_000)
    args = parser.parse_args(argv)
    args.only = [b for b in args.only.split(",") if b]
    dbs = [d for d in args.db.split(",") if d]
    if unknown := set(args.only) - set(BENCHES) | set(dbs) - {"sqlite", "postgres"}:
        parser.error(f"unknown: {', '.join(sorted(unknown))}")

    top = "BENCH_RESULTS" not in os.environ
    load_at_start = os.getloadavg()[0]
    if top:
        out_dir = ROOT / "var" / "bench"
        out_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        os.environ["BENCH_RESULTS"] = str(out_dir / f"results-{stamp}.jsonl")
        heading("machine")
        for key, value in machine().items():
            print(f"  {key}: {value}")
    failures = 0
    if top and "localdlc" in args.only:
        failures += _run("bench.localdlc_idle", ["--queued", str(args.active)], "no database", "") != 0
    for db in dbs if set(args.only) - {"localdlc"} else []:
        if db == "postgres" and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
            # A throwaway cluster for this run; this same command runs again inside it.
            rest = ["--db", "postgres", "--only", ",".join(args.only), "--sizes", args.sizes, "--runs",
                    str(args.runs), "--active", str(args.active), "--jobs", str(args.jobs), "--log-lines",
                    str(args.log_lines)]
            env = dict(os.environ, DLC_PG_DURABLE="1")
            failures += subprocess.call(["bash", str(ROOT / "scripts" / "install-postgres.sh"), "run",
                                         sys.executable, "-m", "bench", *rest], cwd=ROOT, env=env) != 0
        else:
            failures += run_on(db, args)
    if top:
        results = Path(os.environ["BENCH_RESULTS"])
        if results.exists():
            table = summary(results)
            markdown = results.with_suffix(".md")
            info = machine()
            markdown.write_text(f"Run ending {info['date']} on {info['nproc']} CPUs ({info['cpu']}), "
                                f"{info['memory_gib']} GiB; load average {load_at_start:.1f} at the start, "
                                f"{info['load_avg_1m']:.1f} at the end.\n\n{table}\n")
            heading(f"summary (also in {markdown.relative_to(ROOT)})")
            print(table)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
