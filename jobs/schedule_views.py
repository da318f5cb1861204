"""Pages of scheduled jobs: a workspace's schedules, enable/disable/edit/delete, and "Schedule…" from a job's page.

A schedule made from a job takes the job's configuration as a clone does (api_jobs.clone_body, jobs.clone's
policy); secrets are never copied, so the form asks again for each one the job used, exactly as a clone would.
The rules live in jobs.schedules; permissions in jobs.access.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from jobs import access, schedules, secretbox, spec
from jobs.models import Job, Schedule, Workspace

SECRET_ENV_FIELD = "secret_env__"
_SECRET_LABELS = {"registry_password": "Registry password", "ray_redis_password": "Ray Redis password"}


class ScheduleForm(forms.Form):
    name = forms.CharField(max_length=schedules.NAME_MAX, help_text="Each run's job is named <name>-YYYYMMDD-HHMM.")
    kind = forms.ChoiceField(label="Repeat", choices=Schedule.KINDS, initial=Schedule.DAILY, widget=forms.RadioSelect)
    # Each label names the kind that uses it: without CSS :has every field shows, whatever the kind.
    every_hours = forms.CharField(label="Hours between runs (1-168), for Every N hours", required=False,
                                  widget=forms.TextInput(attrs={"inputmode": "numeric", "size": 4}))
    at = forms.CharField(label="At (HH:MM), for Daily and Weekly", required=False, initial="02:00",
                         widget=forms.TextInput(attrs={"size": 5, "placeholder": "02:00"}))
    weekdays = forms.MultipleChoiceField(
        label="On, for Weekly", required=False, widget=forms.CheckboxSelectMultiple,
        choices=list(zip(schedules.WEEKDAYS, schedules.WEEKDAY_LABELS, strict=True)))
    cron = forms.CharField(
        label="Cron expression", required=False, max_length=schedules.CRON_MAX,
        help_text=f"{schedules.CRON_FIELDS}, e.g. */30 * * * * or 30 2 * * MON-FRI; also @daily, @hourly, @weekly.",
        widget=forms.TextInput(attrs={"placeholder": "*/30 * * * *", "spellcheck": "false", "autocomplete": "off"}))
    skip_if_active = forms.BooleanField(label="Skip a run while the previous run's job is still active",
                                        required=False, initial=True)

    def __init__(self, *args: Any, reprompts: Sequence[str] = (), secret_envs: Sequence[str] = (),
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key in reprompts:
            self.fields[key] = forms.CharField(label=_SECRET_LABELS.get(key, key), widget=forms.PasswordInput,
                                               help_text="The job used this secret; secrets are never copied.")
        for name in secret_envs:
            self.fields[SECRET_ENV_FIELD + name] = forms.CharField(
                label=f"Secret variable {name}", widget=forms.PasswordInput,
                help_text="The job kept this variable secret; its value is never copied.")
        self.chosen: schedules.Settings | None = None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # Every field's problem at once: the recurrence's too when the name is missing.
        chosen, errors = schedules.parse_settings(
            data.get("name", ""), data.get("kind"), data.get("every_hours"), data.get("at"),
            data.get("weekdays") or [], bool(data.get("skip_if_active")), True, data.get("cron"))
        for key, messages_ in errors.items():
            if key not in self.errors:
                self.add_error(key if key in self.fields else None, messages_)
        self.chosen = chosen
        return data


@login_required
@require_GET
def schedule_list(request: HttpRequest, ws: int) -> HttpResponse:
    """Every member may see the workspace's schedules; admins and each schedule's owner may change it."""
    from jobs.views import show_workspace

    workspace = access.get_workspace(request.user, ws)
    show_workspace(request, workspace)
    return render(request, "portal/schedules.html", {
        "workspace": workspace, "rows": schedules.rows(request.user, workspace), "tab": "schedules",
        "time_zone": schedules.zone().key, "is_admin": access.can(request.user, "manage", workspace=workspace),
    })


def _changeable(request: HttpRequest, ws: int, pk: int, *, stopping: bool | None = False) \
        -> tuple[Workspace, Schedule]:
    """The schedule, if the user may change it. stopping (a disable or a delete) lets its owner in any role too;
    None: a toggle, a stop only when the schedule is enabled now."""
    workspace = access.get_workspace(request.user, ws)
    schedule = get_object_or_404(Schedule.objects.select_related("workspace", "owner"), pk=pk, workspace=workspace)
    refused = schedules.change_refusal(request.user, schedule,
                                       stopping=schedule.enabled if stopping is None else stopping)
    if refused:
        raise PermissionDenied(refused)
    return workspace, schedule


@login_required
@require_POST
def schedule_toggle(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    workspace, schedule = _changeable(request, ws, pk, stopping=None)
    refused = schedules.set_enabled(request.user, schedule, not schedule.enabled)
    if refused:
        messages.error(request, format_html('Schedule {} was not enabled. {} <a href="{}">Edit configuration</a>',
                                            schedule.name, refused, _config_url(schedule)))
    else:
        messages.success(request, f"Schedule {schedule.name} {'enabled' if schedule.enabled else 'disabled'}.")
    return redirect("schedule_list", ws=workspace.pk)


def _config_url(schedule: Schedule) -> str:
    return f"{reverse('job_create')}?schedule={schedule.pk}"


@login_required
@require_http_methods(["GET", "POST"])
def schedule_take_over(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    """GET: what taking the schedule over does, to confirm (a page: works without JS). POST: the admin becomes its
    owner (schedules.take_over); the sealed values it dropped are named, with the way to type them again."""
    workspace = access.get_workspace(request.user, ws)
    schedule = get_object_or_404(Schedule.objects.select_related("workspace", "owner"), pk=pk, workspace=workspace)
    refused = schedules.take_over_refusal(request.user, schedule)
    if refused:
        raise PermissionDenied(refused)
    if request.method == "GET":
        return _take_over_page(request, workspace, schedule)
    previous = f"{schedule.owner.get_username()}'s" if schedule.owner else "its deleted owner's"
    if schedules.keeps_sealed(request.user, schedule):
        messages.info(request, f"You own schedule {schedule.name} already.")
        return redirect("schedule_list", ws=workspace.pk)
    # The owner the confirm page showed (its hidden field; "" a deleted user): confirmed against, not another's.
    shown = request.POST.get("owner")
    from_owner = schedules.ANY_OWNER if shown is None else int(shown) if shown.isdigit() else None
    try:
        dropped = schedules.take_over(request.user, schedule, from_owner=from_owner)
    except schedules.OwnerChanged:
        schedule = get_object_or_404(Schedule.objects.select_related("workspace", "owner"), pk=pk,
                                     workspace=workspace)
        return _take_over_page(request, workspace, schedule, owner_changed=True)
    if dropped and not schedules.missing_values(schedule):  # only the optional Ray Redis password went
        messages.warning(request, format_html(
            "Schedule {} is yours now (it was {}); its runs start as you. It is disabled: {} was the previous "
            "owner's and was dropped. Enable it to run its jobs without one, or type one again in "
            '<a href="{}" class="schedule-take-over-config">Edit configuration</a> first.', schedule.name, previous,
            schedules.sealed_words(dropped), _config_url(schedule)))
    elif dropped:
        messages.warning(request, format_html(
            "Schedule {} is yours now (it was {}); its runs start as you. It is disabled: {} {} the previous "
            'owner\'s and {} dropped. Type {} again in <a href="{}" class="schedule-take-over-config">Edit '
            "configuration</a>, then enable it.", schedule.name, previous, schedules.sealed_words(dropped),
            "was" if len(dropped) == 1 else "were", "was" if len(dropped) == 1 else "were",
            "it" if len(dropped) == 1 else "them", _config_url(schedule)))
    else:
        messages.success(request, f"Schedule {schedule.name} is yours now (it was {previous}); its runs start as "
                                  f"you. It stays {'enabled' if schedule.enabled else 'disabled'}.")
    return redirect("schedule_list", ws=workspace.pk)


def _take_over_page(request: HttpRequest, workspace: Workspace, schedule: Schedule, *,
                    owner_changed: bool = False) -> HttpResponse:
    """The confirm page; owner_changed: its previous copy named another owner, so nothing was done (409)."""
    sealed = secretbox.unseal(schedule.sealed_secrets) if schedule.sealed_secrets else {}
    return render(request, "jobs/schedule_take_over.html", {
        "workspace": workspace, "schedule": schedule, "sealed_words": schedules.sealed_words(sorted(sealed)),
        "sealed_count": len(sealed), "owned": schedules.keeps_sealed(request.user, schedule),
        # Whether the job is refused without them (else only the optional Ray Redis password is sealed).
        "sealed_required": bool(sealed.keys() & schedules.required_values(schedule)),
        "owner_changed": owner_changed},
        status=409 if owner_changed else 200)


@login_required
@require_POST
def schedule_delete(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    workspace, schedule = _changeable(request, ws, pk, stopping=True)
    schedules.delete(request.user, schedule)
    messages.success(request, f"Schedule {schedule.name} deleted; the jobs it started stay.")
    return redirect("schedule_list", ws=workspace.pk)


@login_required
@require_http_methods(["GET", "POST"])
def schedule_edit(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    """Change a schedule's name and timing (who may toggle it may edit it); its job configuration and sealed secrets
    stay, so no secret is asked again."""
    workspace, schedule = _changeable(request, ws, pk)
    if request.htmx and request.method == "GET" and "cron" in request.GET:
        return _cron_preview(request, request.GET["cron"])
    form = ScheduleForm(request.POST or None, initial=_initial(schedule))
    _preview_as_typed(form, reverse("schedule_edit", args=[workspace.pk, schedule.pk]))
    if request.method == "POST" and form.is_valid() and form.chosen is not None:
        errors = schedules.edit(request.user, schedule, form.chosen)
        if not errors:
            messages.success(request, f"Schedule {schedule.name} saved: {schedules.describe(schedule.recurrence)}; "
                                      f"{_next_run_text(schedule)}.")
            return redirect("schedule_list", ws=workspace.pk)
        for key, messages_ in errors.items():
            form.add_error(key if key in form.fields else None, messages_)
    return render(request, "jobs/schedule_edit.html", {
        "workspace": workspace, "schedule": schedule, "form": form, "time_zone": schedules.zone().key,
        "cron_runs": _typed_runs(form), "cron_min_minutes": settings.DLC_SCHEDULE_MIN_MINUTES,
        "can_take_over": not schedules.keeps_sealed(request.user, schedule)
        and schedules.take_over_refusal(request.user, schedule) is None})


def _initial(schedule: Schedule) -> dict[str, Any]:
    """The edit form's values: the schedule's own, as the form's fields take them."""
    initial: dict[str, Any] = {
        "name": schedule.name, "kind": schedule.kind, "every_hours": str(schedule.every_hours or ""),
        "weekdays": [schedules.WEEKDAYS[d] for d in schedule.weekdays or ()], "cron": schedule.cron,
        "skip_if_active": schedule.skip_if_active}
    if schedule.at:  # else the form's own default, for a change to daily or weekly
        initial["at"] = schedule.at.strftime("%H:%M")
    return initial


def _next_run_text(schedule: Schedule) -> str:
    if schedule.next_run_at is None:
        return "it stays disabled"
    return f"next run {schedule.next_run_at.astimezone(schedules.zone()):%Y-%m-%d %H:%M} ({schedules.zone().key})"


def _preview_as_typed(form: ScheduleForm, url: str) -> None:
    """htmx asks `url` for the cron preview as the expression is typed."""
    form.fields["cron"].widget.attrs.update({
        "hx-get": url, "hx-trigger": "input changed delay:400ms, change", "hx-target": "#cron-preview",
        "hx-swap": "outerHTML"})


def _typed_runs(form: ScheduleForm) -> list:
    """The next runs of the form's cron expression, for the page as it is rendered. Without JS the preview still
    shows once the form comes back with another field's error; an expression's own problem is the field's error
    (shown in the preview's place), so it is said once."""
    typed = form.data.get("cron", "") if form.is_bound else form.initial.get("cron", "")
    runs, _problem = schedules.cron_preview(typed) if typed.strip() else ([], None)
    return runs


@login_required
@require_http_methods(["GET", "POST"])
def schedule_new(request: HttpRequest, pk: int) -> HttpResponse:
    """Schedule a job's configuration (members who may create jobs in its workspace)."""
    from jobs.api_jobs import PUT_SECRET, SECRET_ENVS, clone_body

    job: Job = access.get_job(request.user, pk, "schedule")
    if request.htmx and request.method == "GET" and "cron" in request.GET:
        return _cron_preview(request, request.GET["cron"])
    body, reprompts = clone_body(job)
    envs = body.get("Envs") if isinstance(body.get("Envs"), dict) else {}
    secret_envs = [name for name, value in envs.items() if value == spec.SECRET_PLACEHOLDER]
    form = ScheduleForm(request.POST or None, reprompts=reprompts, secret_envs=secret_envs,
                        initial={"name": job.display_name[:schedules.NAME_MAX]})
    _preview_as_typed(form, reverse("schedule_new", args=[job.pk]))
    config_refused = False
    if request.method == "POST" and form.is_valid() and form.chosen is not None:
        for key in reprompts:
            PUT_SECRET[key](body, form.cleaned_data[key])
        body[SECRET_ENVS] = {name: form.cleaned_data[SECRET_ENV_FIELD + name] for name in secret_envs}
        schedule, errors = schedules.create(request.user, job.workspace, body, form.chosen, source_job=job)
        if schedule is not None:
            messages.success(request, f"Schedule {schedule.name} created: {schedules.describe(schedule.recurrence)}.")
            return redirect("schedule_list", ws=job.workspace_id)
        config_refused = _errors_to_form(form, errors, secret_envs)
    return render(request, "jobs/schedule_new.html", {
        "job": job, "form": form, "time_zone": schedules.zone().key, "cron_runs": _typed_runs(form),
        "cron_min_minutes": settings.DLC_SCHEDULE_MIN_MINUTES, "config_refused": config_refused})


def _cron_preview(request: HttpRequest, typed: str) -> HttpResponse:
    """The next runs of the typed cron expression (htmx, as it is typed), or the problem saving would say, in the
    place of the field's error."""
    runs, problem = schedules.cron_preview(typed) if typed.strip() else ([], None)
    return render(request, "jobs/_schedule_cron_preview.html",
                  {"cron_runs": runs, "cron_errors": [problem] if problem else [], "time_zone": schedules.zone().key})


def _errors_to_form(form: ScheduleForm, errors: dict[str, list[str]], secret_envs: list[str]) -> bool:
    """Each error at its field; True if the job's own configuration was refused, which no field here can fix
    (the page then says how: clone, fix, schedule the clone)."""
    config_refused = False
    for key, messages_ in errors.items():
        path = key.removeprefix(f"{schedules.JOB}.")
        env = path.split(".", 1)[1] if path.startswith(("SecretEnvs.", "Envs.")) else None
        if key == "name":
            form.add_error("name", messages_)
        elif env in secret_envs:
            form.add_error(SECRET_ENV_FIELD + env, messages_)
        elif path == "DisplayName":
            form.add_error("name", messages_)
        else:
            # The job's own configuration (e.g. a guardrail changed since it ran): said whole, with its field.
            form.add_error(None, [f"The job's configuration, {path}: {m}" for m in messages_])
            config_refused = True
    return config_refused
