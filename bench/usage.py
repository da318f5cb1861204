"""The workspace usage report (jobs.usage): server time of its page and of its CSV over 1, 7, 30 and 90 days, and
of the month-to-date spend the budget reads (jobs.costs).

    python -m bench.usage [--sizes 100000] [--runs 5]

The jobs are the list benchmark's (bench.seed: a team's history, newest last, ~900 jobs a day), and "now" is
the newest job's creation, so each period holds real history. The seed's active jobs (8%, spread over all of
it and never ending) are far more than a team has: every one of them runs into every period, so the figures are
a worst case. The page reads the instance types from the backend once and caches them; the benchmark gives it
a catalog up front so that no network call is timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from decimal import Decimal

from bench import seed
from bench.common import heading, p50, record, setup_django, timed, vendor


def run(sizes: list[int], runs: int) -> None:
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from jobs import costs, dlc, usage
    from jobs.forms.wizard import Catalog
    from jobs.models import Job, Membership, Workspace
    from localdlc.catalog import ECS_SPECS

    db = vendor()
    workspace, _ = Workspace.objects.get_or_create(name="bench-usage", defaults={"dlc_workspace_id": "ws-bench"})
    owners = seed.make_users(workspace)
    cache.set(f"wizard:ecs-specs:{workspace.pk}:{dlc.endpoint_for(workspace)}", Catalog(list(ECS_SPECS)), 3600)
    from django.contrib.auth import get_user_model

    viewer, _ = get_user_model().objects.get_or_create(username="bench-usage-viewer")
    Membership.objects.get_or_create(user=viewer, workspace=workspace, defaults={"role": Membership.VIEWER})
    client = Client(HTTP_HOST="localhost")
    client.force_login(viewer)
    have = Job.objects.filter(workspace=workspace).count()
    for size in sorted(sizes):
        if have < size:
            started = time.perf_counter()
            seed.insert(workspace.pk, owners, have, size)
            print(f"  seeded {size - have:,} jobs in {time.perf_counter() - started:.1f} s ({db})", flush=True)
            have = size
        now = Job.objects.filter(workspace=workspace).latest("created_at").created_at
        specs = {s["InstanceType"]: s for s in ECS_SPECS}
        heading(f"usage report, {size:,} jobs, {db}")
        for days in usage.PERIODS:
            def report(days: int = days, now=now, specs=specs) -> usage.Report:
                return usage.report(workspace, days, specs=specs, now=now)

            result = report()
            with CaptureQueriesContext(connection) as queries:
                report()
            record("usage", f"report {days}d p50 ({result.total.jobs:,} jobs, {len(queries)} queries)",
                   p50(timed(report, runs)), "ms", size=size, db=db, note=f"{result.total.running:,} of them active")
        # The month's spend against the budget (jobs.costs.spend, uncached: what the guardrail pays once a minute).
        prices = costs.Prices(instance={s["InstanceType"]: Decimal("1.5") for s in ECS_SPECS},
                              gpu_hour=Decimal(10), cpu_core_hour=Decimal("0.2"))
        month_start, _after = costs.month_bounds(now)
        spent = costs.spend(workspace, month_start, now, prices)
        record("usage", f"month-to-date spend p50 ({spent.jobs:,} jobs, {spent.no_price:,} without a price)",
               p50(timed(lambda s=month_start, n=now, p=prices: costs.spend(workspace, s, n, p), runs)), "ms",
               size=size, db=db)
        # The page itself reads the clock: past the seed's newest job, only its never-ending active jobs ran.
        page_ms = p50(timed(lambda: client.get(f"/workspaces/{workspace.pk}/usage?days=30"), runs))
        record("usage", "page 30d p50 (now: the seed's active jobs only)", page_ms, "ms", size=size, db=db)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.usage", description=__doc__)
    parser.add_argument("--sizes", default="100000", help="comma-separated job counts")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-usage-") as data_dir:
        setup_django(data_dir)
        run([int(s) for s in args.sizes.split(",")], args.runs)


if __name__ == "__main__":
    main()
