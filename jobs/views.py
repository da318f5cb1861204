from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from jobs import access, dlc, tasks
from jobs.forms.quick import QuickJobForm
from jobs.models import Job, Workspace


def current_workspace(request: HttpRequest) -> Workspace | None:
    workspaces = access.workspaces_for(request.user)
    chosen = request.session.get("workspace_id")
    return workspaces.filter(pk=chosen).first() or workspaces.first()


@login_required
def job_list(request: HttpRequest) -> HttpResponse:
    workspace = current_workspace(request)
    jobs = access.jobs_for(request.user).select_related("owner", "workspace")
    if workspace:
        jobs = jobs.filter(workspace=workspace)
    return render(request, "jobs/list.html", {"jobs": jobs[:50], "workspace": workspace})


@login_required
def job_row(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "jobs/_row.html", {"job": access.get_job(request.user, pk)})


@login_required
def job_create(request: HttpRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if workspace is None:
        return render(request, "jobs/no_workspace.html", status=403)
    access.require(request.user, "create", workspace=workspace)
    form = QuickJobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        job = save_and_enqueue(
            workspace=workspace, owner=request.user, body=form.body(workspace.dlc_workspace_id)
        )
        return redirect(job)
    return render(request, "jobs/create.html", {"form": form, "workspace": workspace})


def save_and_enqueue(*, workspace: Workspace, owner, body: dict, hints: dict | None = None,
                     sealed_secrets: str = "", cloned_from: Job | None = None) -> Job:
    """Save a job and hand it to a worker once the row is committed; the request never calls DLC."""
    with transaction.atomic():
        job = Job.objects.create(
            workspace=workspace,
            owner=owner,
            display_name=body["DisplayName"],
            job_type=body.get("JobType", ""),
            body=body,
            hints=hints or {},
            sealed_secrets=sealed_secrets,
            cloned_from=cloned_from,
        )
        transaction.on_commit(lambda: _enqueue_submit(job.pk))
    return job


def _enqueue_submit(job_id: int) -> None:
    # Redis may be down: the job stays "waiting to submit" and the beat sweep enqueues it later.
    try:
        tasks.submit_job.apply_async(args=[job_id], retry=False)
    except Exception:  # noqa: BLE001
        pass


@login_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.get_job(request.user, pk)
    template = "jobs/_detail_live.html" if request.htmx else "jobs/detail.html"
    return render(request, template, {"job": job})


@login_required
def pod_logs(request: HttpRequest, pk: int, pod_id: str) -> HttpResponse:
    job = access.get_job(request.user, pk)
    pod = next((p for p in job.pods if p.get("PodId") == pod_id), None)
    if pod is None:
        return HttpResponse("Unknown pod.", status=404)
    error, lines = None, []
    try:
        lines = dlc.get_pod_logs(job.workspace, job.dlc_job_id, pod_id)
    except dlc.DLCError as err:
        error = err
    return render(request, "jobs/_logs.html", {"job": job, "pod": pod, "lines": lines, "error": error})


@login_required
@require_POST
def job_stop(request: HttpRequest, pk: int) -> HttpResponse:
    job = access.get_job(request.user, pk, action="stop")
    if job.is_stoppable:
        transaction.on_commit(lambda: tasks.stop_job.delay(job.pk))
    return redirect(job)


@login_required
@require_POST
def switch_workspace(request: HttpRequest) -> HttpResponse:
    workspace = get_object_or_404(access.workspaces_for(request.user), pk=request.POST.get("workspace"))
    request.session["workspace_id"] = workspace.pk
    return redirect("job_list")
