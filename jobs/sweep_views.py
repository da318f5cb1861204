"""The sweep pages: a workspace's recent sweeps, one sweep with its trials (polled while any is active), and
"Stop all active trials". A user sees a sweep iff they may see its workspace's jobs; otherwise 404."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from jobs import access, early_stop, jobpage, lifecycle, scalars, sweeps
from jobs import status as st
from jobs.models import Sweep, SweepTrial
from jobs.views import can_select, current_workspace, show_workspace, wants_partial

LIST_SIZE = 50


def _get_sweep(request: HttpRequest, pk: int) -> Sweep:
    """A sweep of a workspace whose jobs the user may view (any role: access.can's "view"); 404 otherwise, not
    403, so sweep ids do not leak."""
    return get_object_or_404(Sweep.objects.select_related("workspace", "owner").filter(
        workspace__in=access.workspaces_for(request.user)), pk=pk)


def _clone_url(request: HttpRequest, sweep: Sweep, first_job: int | None) -> str:
    """The wizard cloning trial 1, its sweep box filled in: the same grid, or the same random search (its trials and
    seed too, so submitting it unchanged samples the same values), and its early stopping, ready to change."""
    if first_job is None or not access.can(request.user, "clone", workspace=sweep.workspace):
        return ""
    search = sweeps.search_of(sweep)
    query = {"clone": first_job, sweeps.FIELD: search.as_text()}
    if search.method == sweeps.RANDOM:
        query |= {sweeps.TRIALS_FIELD: search.count, sweeps.SEED_FIELD: search.seed}
    if sweep.early_stopping:
        query |= {early_stop.METRIC_FIELD: sweep.early_stop_metric, early_stop.GOAL_FIELD: sweep.early_stop_goal,
                  early_stop.AFTER_FIELD: sweep.early_stop_after, early_stop.STEP_FIELD: sweep.early_stop_step}
    return f"{reverse('job_create')}?{urlencode(query)}"


def status_summaries(sweep_ids: list[int]) -> dict[int, list[tuple[str, str, int]]]:
    """{sweep id: [(label, tone, count)]} of the sweeps' trials by job status, in one grouped query for them all
    (not one per sweep); the active statuses first, each group in lifecycle order (jobs.status.ALL)."""
    order = {status: n for n, status in enumerate(st.ALL)}
    rows = (SweepTrial.objects.filter(sweep_id__in=sweep_ids).values_list("sweep_id", "job__status")
            .annotate(n=Count("id")).order_by())
    found: dict[int, list[tuple[str, int]]] = {}
    for sweep_id, status, n in rows:
        found.setdefault(sweep_id, []).append((status, n))

    def place(count: tuple[str, int]) -> tuple[bool, int, str]:
        return st.is_terminal(count[0]), order.get(count[0], len(order)), count[0]

    return {sweep_id: [(st.label(status), st.tone(status), n) for status, n in sorted(counts, key=place)]
            for sweep_id, counts in found.items()}


@login_required
@require_GET
def sweep_list(request: HttpRequest) -> HttpResponse:
    workspace = current_workspace(request)
    found = []
    if workspace is not None and access.can(request.user, "view", workspace=workspace):
        # The order is explicit: Django leaves Meta.ordering out of a query with an aggregate (GROUP BY), which
        # would list the oldest first and never reach the newest past LIST_SIZE.
        found = list(Sweep.objects.filter(workspace=workspace).select_related("owner")
                     .annotate(trial_count=Count("trials")).order_by("-created_at", "-id")[:LIST_SIZE])
        summaries = status_summaries([s.pk for s in found])
        for s in found:
            s.statuses = summaries.get(s.pk, [])
    return render(request, "jobs/sweep_list.html", {"workspace": workspace, "sweeps": found, "limit": LIST_SIZE,
                                                     "can_create": can_select(request, workspace)})


@login_required
@require_GET
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    sweep = _get_sweep(request, pk)
    rows = sweeps.trial_rows(sweep)
    first = rows[0].row["pk"] if rows else None  # trial 1, whatever the ranking
    # The ended trials' metrics in one query, the running ones' so far (a few read from DLC per view, in turn);
    # ?rank=<metric>&goal=min|max&value=best|last puts the best ended trial first.
    board = sweeps.leaderboard(rows, sweeps.metric_values(rows), request.GET.get("rank"), request.GET.get("goal"),
                               request.GET.get("value"))
    rows = board.rows
    context = {"sweep": sweep, "rows": rows, "board": board, "tally": sweeps.tally(rows),
               "active": sweeps.any_active(rows), "polling": sweeps.polling(rows),
               "live": any(r.live for r in rows), "sample_seconds": scalars.SAMPLE_SECONDS,
               # The first trials shown: the best ones when ranked (a partial re-ranking sends it out of band).
               "compare_url": "/jobs/compare?" + urlencode([("ids", r.row["pk"]) for r in rows[:sweeps.COMPARE_MAX]])}
    if wants_partial(request):
        return render(request, "jobs/_sweep_trials.html", {**context, "oob": True})
    show_workspace(request, sweep.workspace)
    context.update({
        "can_stop": can_select(request, sweep.workspace),
        "clone_url": _clone_url(request, sweep, first),
    })
    return render(request, "jobs/sweep_detail.html", context)


@login_required
@require_POST
def sweep_stop(request: HttpRequest, pk: int) -> HttpResponse:
    """Stop every active trial, with the list's rule: members stop their own jobs, admins anyone's."""
    sweep = _get_sweep(request, pk)
    jobs = [t.job for t in sweep.trials.select_related("job", "job__workspace").order_by("number")
            if st.is_active(t.job.status)]
    outcome = lifecycle.bulk_stop(request.user, jobs) if jobs else {}
    results = [jobpage.stop_outcome(outcome[job.pk], job, job.pk) for job in jobs]
    messages.info(request, f"Stop all active trials: {sweeps.stop_summary(results)}." if results
                  else "Stop all active trials: no trial is active.")
    return redirect(sweep)
