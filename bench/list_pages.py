"""Job list: server time of the real view (first, deep, filtered and searched page) at each data size, beside
the bare SQL floor that fetches the same rows, and the number of queries per page.

    python -m bench.list_pages --sizes 1000,100000,1000000 [--runs 30] [--data-dir DIR]

The view runs in-process through Django's test client (the whole middleware stack, session and auth included;
no network), against the database DATABASE_URL names (SQLite in a temp dir by default, or in --data-dir, where it
is kept for the next run). Jobs are bulk-inserted (bench.seed) and the sizes are reached incrementally, smallest
first; jobs already in the database count, so a kept database (or a PostgreSQL one) is not seeded again.

The floor is the bare SQL a person would write for the same rows: the page's order walked on its index with the
filters checked, except the rare name search on SQLite, which reads the name index's few matches first
(migration 0007; walking a million names for one match is no floor), and the tagged page (a tag 1% of the jobs
have, bench.seed), which reads the page's job ids in the list's order from the tag index (migration 0038) and
then those jobs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

from bench import seed
from bench.common import heading, p50, percentile, record, setup_django, timed, vendor

PAGE_SIZE = 20
TARGET_MS = 20.0
TARGET_FLOOR_RATIO = 3.0
TARGET_GROWTH = 2.0


# Case-insensitive substring match, spelled as Django's icontains is on each database, so that PostgreSQL's
# trigram index on UPPER(display_name) serves the floor as it serves the page.
SEARCH_PG = "UPPER(j.display_name::text) LIKE UPPER(%s)"
SEARCH_SQLITE = "j.display_name LIKE %s ESCAPE '\\'"


def floor_sql(kind: str, pg: bool, name_index: bool = False) -> str:
    """The bare query for a page's rows: only the columns a row shows, the same order and limit."""
    search = SEARCH_PG if pg else SEARCH_SQLITE
    if kind == "rare search" and name_index:
        from jobs.listing import NAME_INDEX

        search = f"j.id IN (SELECT rowid FROM {NAME_INDEX} WHERE {NAME_INDEX} MATCH %s) AND {search}"
    where = {
        "first": "",
        "deep": " AND (j.created_at, j.id) < (%s, %s)",
        "filtered": " AND j.status = %s AND j.job_type = %s",
        "searched": f" AND {search}",
        "rare search": f" AND {search}",
        "tagged": " AND j.id IN (SELECT t.job_id FROM jobs_jobtag t WHERE t.workspace_id = %s AND t.key = %s "
                  "AND t.value = %s ORDER BY t.created_at DESC, t.job_id DESC LIMIT %s)",
    }[kind]
    return (
        "SELECT j.id, j.display_name, j.status, j.job_type, u.username, j.created_at, j.started_at, "
        "j.finished_at, j.dlc_job_id FROM jobs_job j LEFT JOIN auth_user u ON u.id = j.owner_id "
        f"WHERE j.workspace_id = %s{where} ORDER BY j.created_at DESC, j.id DESC LIMIT %s"
    )


def pages(workspace_id: int, size: int, name_index: bool) -> dict[str, tuple[dict[str, str], list[Any]]]:
    """Page kind -> (GET parameters of the real view, parameters of its floor query)."""
    from django.db import connection

    from jobs import listing
    from jobs.models import Job

    middle = Job.objects.filter(workspace_id=workspace_id).order_by("-created_at", "-id")[size // 2]
    created_at = connection.ops.adapt_datetimefield_value(middle.created_at)
    limit = PAGE_SIZE + 1
    return {
        "first": ({}, [workspace_id, limit]),
        "deep": ({"after": listing.encode_cursor(middle, listing.DEFAULT_SORT)},
                 [workspace_id, created_at, middle.pk, limit]),
        "filtered": ({"status": seed.FILTER_STATUS, "framework": seed.FILTER_TYPE},
                     [workspace_id, seed.FILTER_STATUS, seed.FILTER_TYPE, limit]),
        "searched": ({"q": seed.SEARCH_TERM}, [workspace_id, f"%{seed.SEARCH_TERM}%", limit]),
        "rare search": ({"q": seed.RARE_TERM}, [workspace_id, *([listing.fts_phrase(seed.RARE_TERM)] if name_index
                                                                 else []), f"%{seed.RARE_TERM}%", limit]),
        "tagged": ({"tag": "=".join(seed.FILTER_TAG)}, [workspace_id, workspace_id, *seed.FILTER_TAG, limit, limit]),
    }


class QueryLog:
    """Times every query a view makes, execution and fetching both: SQLite computes rows lazily, as they
    are fetched, so timing execute() alone would hide most of a GROUP BY or a sort in "template time"."""

    active: QueryLog | None = None

    def __init__(self) -> None:
        self.queries: list[list] = []  # [sql, ms]
        self._by_cursor: dict[int, list] = {}

    def __call__(self, execute, sql, params, many, context):
        entry = [sql, 0.0]
        self.queries.append(entry)
        self._by_cursor[id(context["cursor"])] = entry
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            entry[1] += (time.perf_counter() - start) * 1000

    def __enter__(self) -> QueryLog:
        from django.db import connection

        QueryLog.active = self
        self._wrapper = connection.execute_wrapper(self)
        self._wrapper.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._wrapper.__exit__(*exc)
        QueryLog.active = None

    def add_fetch(self, cursor, ms: float) -> None:
        entry = self._by_cursor.get(id(cursor))
        if entry is not None:
            entry[1] += ms

    def db_ms(self) -> float:
        return sum(ms for _, ms in self.queries)

    def rows_ms(self) -> float:
        """The query that fetches the page's rows: the one on the job table with ORDER BY and LIMIT."""
        return sum(ms for sql, ms in self.queries if 'FROM "jobs_job"' in sql and "LIMIT" in sql
                   and "ORDER BY" in sql)

    def counts_ms(self) -> float:
        """The status counts: COUNT queries on the job table other than the rows query (whose note count is a
        COUNT too)."""
        return sum(ms for sql, ms in self.queries if 'FROM "jobs_job"' in sql and "COUNT(" in sql
                   and not ("LIMIT" in sql and "ORDER BY" in sql))


def _time_fetches() -> None:
    """Instrument Django's cursor wrapper so rows fetched after execute() count as query time."""
    from django.db.backends import utils

    for name in ("fetchone", "fetchmany", "fetchall"):
        original = getattr(utils.CursorWrapper, name, None)
        if original is None:
            # CursorWrapper forwards these to the DB-API cursor through __getattr__.
            def original(self, *args, _name=name):
                return getattr(self.cursor, _name)(*args)

        def timed_fetch(self, *args, _original=original):
            start = time.perf_counter()
            try:
                return _original(self, *args)
            finally:
                if QueryLog.active is not None:
                    QueryLog.active.add_fetch(self, (time.perf_counter() - start) * 1000)

        setattr(utils.CursorWrapper, name, timed_fetch)


BARE_URL = "/bench-bare-request"


def _bare_request(request):
    from django.http import HttpResponse

    return HttpResponse(request.user.get_username())


def _add_bare_view() -> None:
    """Serve BARE_URL from the project's URLconf, in this process only: what any signed-in page costs before
    it does anything (middleware, session, user), beside which "3x a 0.2 ms query" can be judged."""
    from django.contrib.auth.decorators import login_required
    from django.urls import get_resolver, path

    get_resolver().url_patterns.insert(0, path(BARE_URL.lstrip("/"), login_required(_bare_request)))


LEAST_URL = "/bench-least-page"
_least_query: tuple[str, list[Any]] = ("SELECT 1", [])  # the floor query the least page runs (set per page kind)


def _least_page(request):
    from django.db import connection
    from django.http import HttpResponse

    with connection.cursor() as cursor:
        cursor.execute(*_least_query)
        rows = cursor.fetchall()
    return HttpResponse("\n".join("\t".join(map(str, row)) for row in rows), content_type="text/plain")


def _add_least_view() -> None:
    """Serve LEAST_URL: the least a Django page showing the rows can be (the floor query, its rows as plain text,
    no template), timed with no middleware (no session, no sign-in): beside the floor, what Django's request
    handling alone adds, against which the page's "within 3x the floor" can be judged."""
    from django.urls import get_resolver, path

    get_resolver().url_patterns.insert(0, path(LEAST_URL.lstrip("/"), _least_page))


def count_queries(client, params: dict[str, str]) -> tuple[int, int]:
    with QueryLog() as log:
        answer = client.get("/", params)
    assert answer.status_code == 200, answer.status_code
    return len(log.queries), answer.content.count(b'<tr id="job-')


def run(sizes: list[int], runs: int) -> dict[tuple[str, int], float]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client, override_settings

    from jobs import listing
    from jobs.models import Job, Membership, Workspace

    db = vendor()
    pg = db == "postgresql"
    name_index = listing.name_index_ready(connection.alias)
    print(f"  name index: {'FTS5 trigram (migration 0007)' if name_index else 'none' if not pg else 'pg_trgm'}; "
          f"counts capped at {listing.count_cap():,}", flush=True)
    _time_fetches()
    _add_bare_view()
    _add_least_view()
    workspace, _ = Workspace.objects.get_or_create(name="bench-list", defaults={"dlc_workspace_id": "ws-bench"})
    owners = seed.make_users(workspace)
    viewer, _ = get_user_model().objects.get_or_create(username="bench-viewer")
    Membership.objects.get_or_create(user=viewer, workspace=workspace, defaults={"role": Membership.VIEWER})
    client = Client(HTTP_HOST="localhost")  # an allowed host; the test client's default is not
    client.force_login(viewer)
    least_client = Client(HTTP_HOST="localhost")
    with override_settings(MIDDLEWARE=[]):
        least_client.get(LEAST_URL)  # its handler loads the middleware (none) once, at its first request

    results: dict[tuple[str, int], float] = {}
    have = Job.objects.filter(workspace=workspace).count()
    for size in sorted(sizes):
        if have > size:
            print(f"  skipped {size:,} jobs: the kept database has {have:,} (use a fresh --data-dir)", flush=True)
            continue
        if have < size:
            started = time.perf_counter()
            seed.insert(workspace.pk, owners, have, size)
            print(f"  seeded {size - have:,} jobs in {time.perf_counter() - started:.1f} s ({db})", flush=True)
            have = size
        heading(f"job list, {size:,} jobs, {db}")
        bare = p50(timed(lambda: client.get(BARE_URL), runs * 2))
        record("list", "bare signed-in request p50", bare, "ms", size=size, db=db,
               note="a view that only reads request.user, through the same middleware: Django's own floor")
        for kind, (params, floor_params) in pages(workspace.pk, size, name_index).items():
            view_ms, db_ms, rows_ms, counts_ms, floor_ms = [], [], [], [], []

            def view(params=params, view_ms=view_ms, db_ms=db_ms, rows_ms=rows_ms, counts_ms=counts_ms) -> None:
                start = time.perf_counter()
                with QueryLog() as log:
                    answer = client.get("/", params)
                view_ms.append((time.perf_counter() - start) * 1000)
                assert answer.status_code == 200, answer.status_code
                db_ms.append(log.db_ms())
                rows_ms.append(log.rows_ms())
                counts_ms.append(log.counts_ms())

            def floor(floor_params=floor_params, kind=kind) -> None:
                with connection.cursor() as cursor:
                    cursor.execute(floor_sql(kind, pg, name_index), floor_params)
                    cursor.fetchall()

            global _least_query
            _least_query = (floor_sql(kind, pg, name_index), floor_params)

            def least() -> None:
                answer = least_client.get(LEAST_URL)
                assert answer.status_code == 200, answer.status_code

            for _ in range(2):  # warm-up
                view()
                floor()
                least()
            for figures in (view_ms, db_ms, rows_ms, counts_ms):
                figures.clear()
            # Interleaved, so both see the same machine noise.
            least_ms: list[float] = []
            for _ in range(runs):
                view()
                floor_ms += timed(floor, 1, warmup=0)
                least_ms += timed(least, 1, warmup=0)
            queries, shown = count_queries(client, params)
            v50, f50, r50 = p50(view_ms), p50(floor_ms), p50(rows_ms)
            results[(kind, size)] = v50
            record("list", f"{kind}: page p50", v50, "ms", size=size, db=db, target=f"<{TARGET_MS:g} ms",
                   met=v50 < TARGET_MS)
            record("list", f"{kind}: page p95", percentile(view_ms, 95), "ms", size=size, db=db)
            record("list", f"{kind}: floor SQL p50", f50, "ms", size=size, db=db)
            record("list", f"{kind}: page / floor", v50 / f50, "x", size=size, db=db,
                   target=f"<={TARGET_FLOOR_RATIO:g}x", met=v50 / f50 <= TARGET_FLOOR_RATIO)
            record("list", f"{kind}: least Django page / floor", p50(least_ms) / f50, "x", size=size, db=db,
                   note=f"{p50(least_ms):.2f} ms: the floor query in a Django view, rows as text, no middleware")
            record("list", f"{kind}: rows query p50", r50, "ms", size=size, db=db)
            record("list", f"{kind}: rows query / floor", r50 / f50, "x", size=size, db=db,
                   target=f"<={TARGET_FLOOR_RATIO:g}x", met=r50 / f50 <= TARGET_FLOOR_RATIO)
            if any(counts_ms):
                record("list", f"{kind}: counts query p50 (in the page)", p50(counts_ms), "ms", size=size, db=db)
            record("list", f"{kind}: all queries p50", p50(db_ms), "ms", size=size, db=db)
            record("list", f"{kind}: all queries / floor", p50(db_ms) / f50, "x", size=size, db=db,
                   note="the SQL a page costs, session and auth included, against the floor")
            record("list", f"{kind}: outside the DB p50", p50([v - d for v, d in zip(view_ms, db_ms, strict=True)]),
                   "ms", size=size, db=db, note="middleware, view code, template")
            record("list", f"{kind}: queries per page", queries, "", size=size, db=db, note=f"{shown} rows shown")
            counts = timed(lambda params=params: client.get("/jobs/counts", params, HTTP_HX_REQUEST="true"),
                           max(3, runs // 3), warmup=1)
            with QueryLog() as log:
                client.get("/jobs/counts", params, HTTP_HX_REQUEST="true")
            record("list", f"{kind}: status counts request p50", p50(counts), "ms", size=size, db=db,
                   note=f"loaded by HTMX after the rows; {len(log.queries)} queries, "
                        f"counts query {log.counts_ms():.1f} ms")
        # The same page at every page size: the number of queries must not move.
        by_size = {n: count_queries(client, {"size": str(n)})[0] for n in (10, 20, 50, 100)}
        record("list", "queries at page size 10/20/50/100", "/".join(map(str, by_size.values())), size=size,
               db=db, target="constant", met=len(set(by_size.values())) == 1)
    measured = sorted({size for _, size in results})
    if len(measured) > 1:
        small, large = measured[0], measured[-1]
        for kind in ("first", "deep", "filtered", "searched", "rare search", "tagged"):
            growth = results[(kind, large)] / results[(kind, small)]
            record("list", f"{kind} growth {small:,} -> {large:,}", growth, "x", db=db,
                   target=f"<{TARGET_GROWTH:g}x", met=growth < TARGET_GROWTH)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.list_pages", description=__doc__)
    parser.add_argument("--sizes", default="1000,100000", help="comma-separated job counts")
    parser.add_argument("--runs", type=int, default=30, help="timed requests per page kind")
    parser.add_argument("--data-dir", help="keep the SQLite database here and reuse its jobs in the next run "
                                           "(default: a temp dir, deleted after the run)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.data_dir:
        setup_django(args.data_dir)
        run(sizes, args.runs)
        return
    with tempfile.TemporaryDirectory(prefix="bench-list-") as data_dir:
        setup_django(data_dir)
        run(sizes, args.runs)


if __name__ == "__main__":
    main()
