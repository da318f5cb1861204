"""The console's pages: job list, job page with logs, stop. Function views; HTMX requests get partials."""

from __future__ import annotations

import logging
import uuid
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from jobs import (
    access,
    audit,
    compare,
    dependencies,
    dlc,
    jobmetrics,
    jobpage,
    lifecycle,
    listing,
    notes,
    podlogs,
    priority,
    scalars,
    tasks,
)
from jobs import status as st
from jobs.models import AuditEvent, Job, Workspace

log = logging.getLogger(__name__)


def user_workspaces(request: HttpRequest) -> list[Workspace]:
    """The user's workspaces with their roles, read once per request: the top bar, the current workspace and
    the permission checks of a page all use this one query."""
    if not hasattr(request, "_user_workspaces"):
        request._user_workspaces = access.workspaces_with_roles(request.user)
    return request._user_workspaces


# The switcher's choice outlives the session (signing out ends it) in a signed cookie "user id:workspace id".
WORKSPACE_COOKIE = "dlc-console-workspace"
WORKSPACE_COOKIE_SALT = "jobs.views.workspace"
WORKSPACE_COOKIE_AGE = 365 * 24 * 3600


def last_used_workspace(user, workspace_ids: set[int], remembered: str = "") -> int | None:
    """The workspace, among the user's, to start a new session in: the one this browser last switched to for this
    user (`remembered`, the cookie's value), else that of their latest audited action (a job created, stopped,
    a template saved...), else None (the first by name). Never one they are no longer a member of."""
    user_id, _, chosen = remembered.partition(":")
    if user_id == str(user.pk) and chosen.isdigit() and int(chosen) in workspace_ids:
        return int(chosen)
    latest = (AuditEvent.objects.filter(actor=user, workspace_id__in=workspace_ids)
              .values_list("workspace_id", flat=True).first())
    return latest if latest in workspace_ids else None


def land_in_last_used_workspace(request: HttpRequest | None, user) -> None:
    """On signing in (jobs.apps connects it to user_logged_in): choose the last used workspace for the new session,
    so that a workspace added since, first by name, does not take over."""
    if request is None or not hasattr(request, "session"):
        return
    ids = set(access.workspaces_for(user).values_list("pk", flat=True))
    if len(ids) < 2:
        return  # nothing to choose
    remembered = request.get_signed_cookie(WORKSPACE_COOKIE, default="", salt=WORKSPACE_COOKIE_SALT,
                                           max_age=WORKSPACE_COOKIE_AGE)
    chosen = last_used_workspace(user, ids, remembered)
    if chosen is not None:
        request.session["workspace_id"] = chosen


def current_workspace(request: HttpRequest) -> Workspace | None:
    """The workspace the user chose (else their first)."""
    workspaces = user_workspaces(request)
    chosen = request.session.get("workspace_id")
    return next((ws for ws in workspaces if ws.pk == chosen), workspaces[0] if workspaces else None)


def show_workspace(request: HttpRequest, workspace: Workspace) -> None:
    """Have the top bar show this page's workspace (a job's page, whatever workspace is chosen), leaving the
    user's choice as it is: only the switcher changes that."""
    request._shown_workspace_id = workspace.pk


def shown_workspace(request: HttpRequest) -> Workspace | None:
    """The workspace the top bar shows and its links act in: the page's own (show_workspace), else the chosen."""
    wanted = getattr(request, "_shown_workspace_id", None)
    # From the list read once per request, which knows the user's role in each: the top bar's checks need no query.
    found = next((ws for ws in user_workspaces(request) if ws.pk == wanted), None) if wanted else None
    return found or current_workspace(request)


def can_select(request: HttpRequest, workspace: Workspace | None) -> bool:
    """Whether the job list offers "Stop selected": members stop their own jobs and admins anyone's, so exactly
    those who may create jobs; a viewer stops nothing."""
    return bool(workspace and access.can(request.user, "create", workspace=workspace))


def can_tick(workspace: Workspace | None) -> bool:
    """Whether the job list offers row checkboxes: everyone who sees a workspace's list, as "Compare selected"
    takes them and a viewer may compare; "Stop selected" only for can_select."""
    return workspace is not None


def save_and_enqueue(*, workspace: Workspace, owner, body: dict, hints: dict | None = None,
                     sealed_secrets: str = "", cloned_from: Job | None = None,
                     audit_details: dict | None = None, run_after: Job | None = None,
                     run_after_when: str = Job.RUN_AFTER_SUCCEEDED, idempotency_tag: uuid.UUID | None = None) -> Job:
    """Save a job and hand it to a worker once the row is committed; the request never calls DLC.
    `audit_details` go into the audit event (a scheduled job: which schedule). With `run_after` (checked by
    jobs.dependencies.check) the job is held Waiting, not enqueued, while that upstream job is active.
    `idempotency_tag`: the wizard's one-time submission token (jobs.wizard.claim_token); a second save with the
    same tag raises IntegrityError (the column is unique), so a form posted twice makes one job."""
    with transaction.atomic():
        status = dependencies.initial_status(run_after, run_after_when)
        job = Job.objects.create(
            workspace=workspace,
            owner=owner,
            display_name=body["DisplayName"],
            job_type=body.get("JobType", ""),
            body=body,
            hints=hints or {},
            sealed_secrets=sealed_secrets,
            cloned_from=cloned_from,
            status=status,
            run_after=run_after,
            run_after_when=run_after_when,
            **({"idempotency_tag": idempotency_tag} if idempotency_tag else {}),
        )
        audit.record(owner, "cloned" if cloned_from else "created", workspace=workspace, job=job, source=cloned_from,
                     **({"run_after": run_after.pk, "run_after_when": run_after_when} if run_after else {}),
                     **(audit_details or {}))
        if status == st.SUBMITTING:
            transaction.on_commit(lambda: _enqueue_submit(job.pk))
        else:  # an upstream that ended badly since the form was checked skips the job now, not at the next sweep
            dependencies.release([run_after.pk])
    return job


def _enqueue_submit(job_id: int) -> None:
    # Redis may be down: the job stays "waiting to submit" and the beat sweep enqueues it later.
    try:
        tasks.submit_job.apply_async(args=[job_id], retry=False)
    except Exception as exc:  # noqa: BLE001 - whatever the broker raised, the sweep recovers the job
        log.warning("could not enqueue the submission of job %s (the sweep will): %s", job_id, exc)


def wants_partial(request: HttpRequest) -> bool:
    """An HTMX request for a fragment (not htmx restoring a page from history, which needs it whole)."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def _ids(values: list[str], limit: int = 500) -> list[int]:
    # ASCII: "²".isdigit() is true, but int("²") fails. Longer: no row has it.
    return [int(v) for v in values[:limit] if v.isascii() and v.isdigit() and len(v) <= 18]


def _ignored(values: list[str], shown: int = 10) -> str:
    """What a bulk action says of the values that are no job id ("" for none): a few of them, each cut short."""
    if not values:
        return ""
    listed = ", ".join(repr(v[:20]) for v in values[:shown]) + (f" and {len(values) - shown} more"
                                                                   if len(values) > shown else "")
    return f"Ignored, not job ids: {listed}."


def _url(name: str, params: dict[str, str]) -> str:
    query = urlencode(params, doseq=True)  # the list's repeatable `tag`
    return reverse(name) + (f"?{query}" if query else "")


# --- job list ----------------------------------------------------------------------------------------------


def _workspace_jobs(request: HttpRequest, workspace: Workspace | None):
    return access.jobs_in(request.user, workspace)


def _status_links(filters: listing.Filters, counts: listing.Counts) -> list[dict]:
    groups = [("", "All", counts.total), (listing.ACTIVE, "Active", counts.active)] + [
        (status, label, n) for status, label, n in counts.chips()
    ]
    return [
        {"label": label, "count": n, "url": _url("job_list", filters.query(status=value)),
         "current": filters.status == value}
        for value, label, n in groups
    ]


def _poll_url(filters: listing.Filters, jobs: list[Job]) -> str | None:
    """The one small poll that refreshes a page's active rows; None (no polling) when none is active."""
    watch = listing.format_watch(jobs)
    return _url("job_rows", {**filters.query(), "watch": watch}) if watch else None


def _list_context(request: HttpRequest, workspace: Workspace | None, filters: listing.Filters) -> dict:
    page = listing.page(listing.for_rows(_workspace_jobs(request, workspace)), filters, user=request.user)
    may_create = can_select(request, workspace)  # the same people: see can_select
    return {
        "workspace": workspace,
        "can_create": may_create,
        "can_stop": may_create,
        "selectable": can_tick(workspace),
        "compare_max": compare.MAX_JOBS,  # the list's Compare button stops at what the page compares
        "filters": filters,
        "page": page,
        "rows": listing.rows(page.jobs),
        "counts_url": _url("job_counts", filters.query()),
        "next_url": _url("job_list", filters.query(after=page.next_cursor)) if page.next_cursor else None,
        "prev_url": _url("job_list", filters.query(before=page.prev_cursor)) if page.prev_cursor else None,
        "first_url": _url("job_list", filters.query()) if filters.after or filters.before else None,
        "poll_url": _poll_url(filters, page.active_jobs),
    }


@login_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    from jobs import costs

    if "workspace" in request.GET:
        return _open_in_workspace(request)
    workspace = current_workspace(request)
    filters = listing.Filters.from_query(request.GET)
    if filters.took_tag_box and not wants_partial(request):
        return redirect(_url("job_list", filters.query()))  # the box's tag is now one of the URL's `tag`s
    context = _list_context(request, workspace, filters)
    if wants_partial(request):
        response = render(request, "jobs/_results.html", context)
        if filters.took_tag_box:
            response["HX-Push-Url"] = _url("job_list", filters.query())
        return response
    context["tag_box_value"] = request.GET.get("tag_add", "")  # taken ones were redirected: this one was refused
    context["choices"] = listing.filter_choices(filters, listing.owner_choices(workspace, filters.owner))
    context["budget_notice"] = costs.notice(workspace) if workspace else ""
    return render(request, "jobs/list.html", context)


def _open_in_workspace(request: HttpRequest) -> HttpResponse:
    """`?workspace=<id>&...` (a job page's tag links, jobs.jobpage): switch to that workspace as the top bar's
    switcher does, then show the list without the parameter, so the filter form, page links and polls that follow
    (all in the chosen workspace) stay in it. A workspace the user is not a member of is not found."""
    chosen = _ids([request.GET.get("workspace", "")])
    workspace = get_object_or_404(access.workspaces_for(request.user), pk=chosen[0] if chosen else 0)
    rest = request.GET.copy()
    del rest["workspace"]
    return _choose_workspace(request, workspace, redirect(f"{reverse('job_list')}?{rest.urlencode()}".rstrip("?")))


def _choose_workspace(request: HttpRequest, workspace: Workspace, response: HttpResponse) -> HttpResponse:
    """Make the workspace the session's and this browser's next sign-in's (land_in_last_used_workspace)."""
    request.session["workspace_id"] = workspace.pk
    response.set_signed_cookie(WORKSPACE_COOKIE, f"{request.user.pk}:{workspace.pk}", salt=WORKSPACE_COOKIE_SALT,
                               max_age=WORKSPACE_COOKIE_AGE, httponly=True, samesite="Lax",
                               secure=settings.SESSION_COOKIE_SECURE)
    return response


@login_required
@require_GET
def job_rows(request: HttpRequest) -> HttpResponse:
    """The list's poll: re-renders only the watched rows whose status moved, keeping their checkboxes."""
    watch = listing.parse_watch(request.GET.get("watch", ""))
    jobs = list(listing.for_rows(access.jobs_for(request.user).filter(pk__in=watch)))
    changed = [job for job in jobs if listing.row_state(job) != watch[job.pk]]
    filters = listing.Filters.from_query(request.GET)
    return render(request, "jobs/_rows.html", {
        "rows": listing.rows(changed, checked=_ids(request.GET.getlist("job"))),
        "selectable": bool(changed) and can_tick(current_workspace(request)),
        "poll_url": _poll_url(filters, [job for job in jobs if job.is_active]),
        "counts_url": _url("job_counts", filters.query()),
    })


@login_required
@require_GET
def job_counts(request: HttpRequest) -> HttpResponse:
    """Jobs per status under the list's filters (all but the status one), each counted up to a cap; loaded
    after the rows so counting never holds the page back."""
    filters = listing.Filters.from_query(request.GET)
    counts = listing.counts(_workspace_jobs(request, current_workspace(request)), filters, user=request.user)
    return render(request, "jobs/_counts.html", {"status_links": _status_links(filters, counts)})


@login_required
@require_GET
def job_row(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.get_job(request.user, pk)
    return render(request, "jobs/_row.html", {"rows": listing.rows([job]),
                                              "selectable": can_tick(job.workspace)})


@login_required
@require_POST
def jobs_stop(request: HttpRequest) -> HttpResponse:
    """Stop the selected jobs; one result per job (a job sent twice is one), and the values that are no job id
    said as ignored. Jobs outside the user's workspaces read as not found."""
    given = list(dict.fromkeys(request.POST.getlist("job")))
    ids = _ids(given)
    ignored = _ignored([value for value in given[:500] if not _ids([value])])
    found = {job.pk: job for job in access.jobs_for(request.user).filter(pk__in=ids).select_related("workspace")}
    outcome = lifecycle.bulk_stop(request.user, list(found.values())) if found else {}
    results = [jobpage.stop_outcome(outcome.get(pk, "not-found"), found.get(pk), pk) for pk in ids]
    if not wants_partial(request):
        for result in results:
            messages.info(request, f"{result.name}: {result.text}")
        if ignored:
            messages.warning(request, ignored)
        return redirect("job_list")
    rows = listing.rows(listing.for_rows(access.jobs_for(request.user).filter(pk__in=found)))
    return render(request, "jobs/_bulk_result.html", {"results": results, "rows": rows, "ignored": ignored,
                                                      "selectable": can_tick(current_workspace(request))})


@login_required
@require_GET
def job_compare(request: HttpRequest) -> HttpResponse:
    """Jobs side by side (?ids=..&ids=.., 2 to 6); `all=1` shows every row, not only those that differ."""
    clean = compare.canonical_url(request.GET)
    if clean is not None:  # the job list's form, sent without JavaScript
        return redirect(clean)
    comparison = compare.compare(request.user, request.GET.getlist("ids"))
    all_rows = request.GET.get("all") == "1"
    return render(request, "jobs/compare.html", {"cmp": comparison, "all_rows": all_rows,
                                                 "groups": comparison.shown(all_rows)})


# --- job page -------------------------------------------------------------------------------------------


@login_required
@require_GET
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.get_job(request.user, pk)
    context = jobpage.live(job, request.user)
    if wants_partial(request):
        return render(request, "jobs/_detail_live.html", context)
    show_workspace(request, job.workspace)
    context["sections"] = jobpage.sections(job)
    context["priority"] = priority.control(request.user, job)
    context["pod_id"] = request.GET.get("pod", "")
    context["notes_card"] = notes.card(request.user, job)
    return render(request, "jobs/detail.html", context)


@login_required
@require_POST
def job_stop(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.get_job(request.user, pk, action="stop")
    result = jobpage.stop_outcome(lifecycle.request_stop(request.user, job), job, job.pk)
    if not wants_partial(request):
        messages.info(request, f"Stop: {result.text}")
        return redirect(job)
    job = access.get_job(request.user, pk)
    return render(request, "jobs/_detail_live.html", {**jobpage.live(job, request.user), "notice": result})


@login_required
@require_POST
def job_priority(request: HttpRequest, pk: int) -> HttpResponse:
    """Change a queued quota job's priority (DLC UpdateJob, answered while the user waits). htmx gets the
    priority fragment with the new value or the reason in place; a plain POST, the page with a message."""
    job = access.get_job(request.user, pk, action="priority")  # stop's rule: owner or admin; 403 for viewers
    notice = error = ""
    try:
        change = priority.change_priority(request.user, job, request.POST.get("priority", ""))
        notice = f"Priority changed from {change.old} to {change.new}." if change.changed else \
            f"Priority is {change.new}."
    except priority.PriorityError as err:
        error = err.message
    if not wants_partial(request):
        (messages.error if error else messages.success)(request, error or notice)
        return redirect(job)
    return render(request, "jobs/_priority.html", {"priority": priority.control(request.user, job),
                                                  "priority_notice": notice, "priority_error": error})


@login_required
@require_GET
def job_events(request: HttpRequest, pk: int) -> HttpResponse:
    """GetJobEvents, read on demand with a short timeout; a failure is shown in place of the events."""
    job = access.get_job(request.user, pk)
    events, error = [], None
    if job.dlc_job_id:
        try:
            events = jobpage.events(dlc.get_job_events(job.workspace, job.dlc_job_id))
        except dlc.DLCError as err:
            error = err
    return _section(request, "jobs/_events.html", {"job": job, "events": events, "error": error}, "Events",
                    "events-section")


@login_required
@require_GET
def job_metrics(request: HttpRequest, pk: int) -> HttpResponse:
    """The monitoring charts (GetJobMetrics per metric, read on demand); a bad ?range= or a failed read is said
    in place of the charts."""
    job = access.get_job(request.user, pk)
    context = {"job": job, "ranges": jobmetrics.RANGES, "range": None, "charts": [], "error": "", "failure": ""}
    try:
        context["range"] = jobmetrics.parse_range(request.GET.get("range"))
    except jobmetrics.BadRange as err:
        context["error"] = str(err)
    if context["range"] is not None and job.dlc_job_id:
        context["window"], context["charts"] = jobmetrics.read_shared(job, context["range"])
        context["failure"] = jobmetrics.failure(context["charts"])
    return _section(request, "jobs/_metrics.html", context, "Monitoring", "monitoring")


@login_required
@require_GET
def job_scalars(request: HttpRequest, pk: int) -> HttpResponse:
    """The training metrics (METRIC lines of the log, jobs.scalars): stored rows once the job ended and its log
    was archived, else parsed from DLC now and refreshed. `?pod=` is the pod the last refresh charted, looked at
    first; a failed read is said in place."""
    job = access.get_job(request.user, pk)
    view = scalars.section(job, request.GET.get("pod", "")[:256])
    context = {"job": job, "view": view, "examples": scalars.FORMAT_EXAMPLES}
    return _section(request, "jobs/_scalars.html", context, "Training metrics", "training-metrics")


def _section(request: HttpRequest, partial: str, context: dict, heading: str, anchor: str,
             script: str = "") -> HttpResponse:
    """A job page section loaded in place (htmx), or, without JavaScript (the page's <noscript> link, a time range
    link), the same section on a page of its own rather than a bare fragment. `script`: the static JS the section
    needs when JavaScript is on there after all (the job page loads it in its head)."""
    if wants_partial(request):
        return render(request, partial, context)
    return render(request, "jobs/section_page.html",
                  {**context, "partial": partial, "heading": heading, "anchor": anchor, "script": script})


# The id of the log panel's search form: its requests come with it (HX-Trigger), and their answer sets the URL.
LOG_SEARCH_FORM = "log-search"


def _log_query(request: HttpRequest) -> tuple[str, str]:
    """The log search (?q=) and, when it cannot be searched for, why (the log is then shown unsearched)."""
    try:
        return podlogs.parse_query(request.GET.get("q", "")), ""
    except podlogs.BadQuery as err:
        return "", str(err)


def _log_page_url(job: Job, pod_id: str, query: str = "") -> str:
    """The job page opened at this pod's log and search: what a reload or a shared link shows."""
    params = {"pod": pod_id, **({"q": query} if query else {})}
    return f"{reverse('job_detail', args=[job.pk])}?{urlencode(params)}#logs"


def _log_panel(request: HttpRequest, job: Job, pod: jobpage.PodRow | None, *, head: bool = False) -> HttpResponse:
    """The log panel; `head`: an archived log read from its start ("From the start"), else its end."""
    query, query_error = _log_query(request)
    typed = request.GET.get("q", "").strip()
    # Where the panel's plain links and its search form go (what works without JavaScript, or in a new tab): the
    # job page, which loads the panel; on the panel's own page (no JavaScript), that page again, at the log's end
    # (#log-end, in the box: without JavaScript nothing else scrolls the box to its newest lines).
    partial = wants_partial(request)
    page = reverse("job_detail" if partial else "job_logs", args=[job.pk])
    context = {"job": job, "pod": pod, "pods": jobpage.pods(job), "q": query, "q_typed": typed, "page": page,
               "page_anchor": "logs" if partial else "log-end",
               "q_error": query_error, "log_search_form": LOG_SEARCH_FORM, "error": None,
               "following": False, "retrying": False, "chunk": podlogs.Chunk([])}
    if pod is not None:
        try:
            first = podlogs.head(job, pod.pod_id, query) if head else None
            context["chunk"] = first or podlogs.first_view(job, pod.pod_id, query)
        except dlc.DLCError as err:
            # Without a first view there is no cursor to tail from: the panel itself asks again.
            context["error"], context["retrying"] = err, job.is_active and pod.live
        context["following"] = podlogs.following(job, pod, context["chunk"].cursor)
    response = _section(request, "jobs/_logs.html", context, "Logs", "logs", script="js/logpanel.js")
    if pod is not None and request.htmx and request.htmx.trigger == LOG_SEARCH_FORM:
        # The URL says the search (as the pod tabs push ?pod=), so a reload or a shared link shows it again.
        response["HX-Push-Url"] = _log_page_url(job, pod.pod_id, typed)
    return response


@login_required
@require_GET
def job_logs(request: HttpRequest, pk: int) -> HttpResponse:
    """The log panel for the pod asked for (?pod=), else the first one; waits for pods while none run. Without
    JavaScript (the job page's <noscript> link), the panel on a page of its own."""
    job = access.get_job(request.user, pk)
    pods = jobpage.pods(job)
    wanted = request.GET.get("pod", "")
    pod = next((p for p in pods if p.pod_id == wanted), pods[0] if pods else None)
    return _log_panel(request, job, pod)


@login_required
@require_GET
def pod_logs(request: HttpRequest, pk: int, pod_id: str) -> HttpResponse:
    """Without `since`: the whole panel. With `since=<cursor>`: the lines logged after it (the live tail). With
    `upto` or `until`: the lines before those shown ("Load older lines"). With `from=start`: an archived log's first
    lines ("From the start"); the whole panel is a page of its own when asked without JavaScript."""
    job = access.get_job(request.user, pk)
    pod = jobpage.find_pod(job, pod_id)
    if pod is None and "since" in request.GET:
        # A tail whose pod left the job's pod list (DLC recreated it under another id): a 404 would leave htmx
        # polling it every second with nothing shown, while this tail, with no trigger, stops and says why.
        return render(request, "jobs/_log_chunk.html", {
            "job": job, "pod": None, "q": "", "chunk": podlogs.Chunk([]), "following": False,
            "error": "this pod is no longer part of the job; reload the page to see its pods"})
    if pod is None:
        raise Http404("Unknown pod.")
    if "upto" in request.GET or "until" in request.GET:
        return _older_lines(request, job, pod)
    if "since" not in request.GET:
        if request.GET.get("from") == "start":
            return _log_panel(request, job, pod, head=True)
        if "after" in request.GET:  # a tail from a page served before cursors: it would nest a panel
            return HttpResponse("This page is out of date; reload it.", status=400, content_type="text/plain")
        return _log_panel(request, job, pod)
    try:
        since = podlogs.parse_cursor(request.GET["since"], job, pod_id)
        number, style = podlogs.parse_carried(request.GET)
    except podlogs.BadCursor as err:
        return HttpResponse(str(err), status=400, content_type="text/plain; charset=utf-8")
    query, query_error = _log_query(request)
    if query_error:  # the page never sends one (its panel refuses it): a hand-made URL
        return HttpResponse(query_error, status=400, content_type="text/plain; charset=utf-8")
    try:
        chunk, error = podlogs.tail(job, pod_id, since, query, number=number, style=style), None
        following = podlogs.following(job, pod, chunk.cursor)
    except dlc.DLCError as err:
        # Ask again from the same cursor while the pod runs; an ended pod's log may be gone for good.
        chunk, error = podlogs.unchanged(since, number, style), err
        following = job.is_active and pod.live
    return render(request, "jobs/_log_chunk.html",
                  {"job": job, "pod": pod, "q": query, "chunk": chunk, "error": error, "following": following})


def _older_lines(request: HttpRequest, job: Job, pod: jobpage.PodRow) -> HttpResponse:
    query, query_error = _log_query(request)
    try:
        at = podlogs.parse_older(request.GET, job, pod.pod_id)
    except podlogs.BadOlder as err:
        query_error = query_error or str(err)
    if query_error:  # the page never sends one: a hand-made or outdated URL
        return HttpResponse(query_error, status=400, content_type="text/plain; charset=utf-8")
    try:
        chunk, error = podlogs.older(job, pod.pod_id, at, query), None
    except dlc.DLCError as err:
        # The same button again: the same request, once DLC answers.
        again = request.GET.copy()
        again.pop("q", None)  # the button adds it
        chunk, error = podlogs.Chunk([], older=again.urlencode()), err
    return render(request, "jobs/_log_older.html",
                  {"job": job, "pod": pod, "q": query, "chunk": chunk, "error": error, "answer": True})


@login_required
@require_GET
def pod_log_download(request: HttpRequest, pk: int, pod_id: str) -> HttpResponse:
    """The full log as a streamed text/plain attachment, from the archive or DLC (read whole: the user asked)."""
    job = access.get_job(request.user, pk)
    if jobpage.find_pod(job, pod_id) is None:
        raise Http404("Unknown pod.")
    try:
        text = podlogs.download(job, pod_id)
    except dlc.DLCError as err:
        return HttpResponse(f"Could not read the log: {err}\n", status=502, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(text, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{podlogs.filename(job, pod_id)}"'
    return response


@login_required
@require_POST
def switch_workspace(request: HttpRequest) -> HttpResponse:
    chosen = _ids([request.POST.get("workspace", "")])  # garbage is "no such workspace", not a crash
    workspace = get_object_or_404(access.workspaces_for(request.user), pk=chosen[0] if chosen else 0)
    return _choose_workspace(request, workspace, redirect("job_list"))
