"""The authorization matrix: every URL of the console x (viewer, member, admin of workspace Alpha; admin of
another workspace, Beta; anonymous) gives the expected answer.

The URL list comes from Django's resolver: a URL added without an entry in MATRIX fails
test_every_url_has_an_entry. Everything under admin/ is Django's admin site, which only staff may use; it
is checked route by route in test_admin_site_is_staff_only. Besides the status code, every answer to the
member of Beta is searched for Alpha's data, so a 200 that leaks is caught too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests import portal_fixtures as pf

ROLES = ("viewer", "member", "admin", "other", "anon")
LOGIN = "login"  # 302 to the sign-in page
# Strings only Alpha's pages contain: Beta's member must never see one of them.
ALPHA_SECRETS = (b"train-a-worker-0", b"dlc-train-a", b"admin-job", b"Alpha")


@dataclass
class Case:
    method: str
    path: Callable[[pf.Team], str]
    expect: dict[str, Any]
    data: Callable[[pf.Team], Any] | None = None
    json: bool = False
    check: Callable[[pf.Team, str, Any], None] | None = None  # side effects, per role
    leak_check: bool = True
    extra: dict[str, str] = field(default_factory=dict)
    # What a read-only token gets where it is not what a viewer gets (a viewer's own schedule: its owner may disable
    # or delete it, a read-only token never may); tests/test_api_tokens.py. None: the viewer's answer.
    read_only: Any = None


def roles(viewer, member, admin, other, anon=LOGIN) -> dict[str, Any]:
    return {"viewer": viewer, "member": member, "admin": admin, "other": other, "anon": anon}


def everyone(code, anon=None) -> dict[str, Any]:
    return roles(code, code, code, code, code if anon is None else anon)


READ = roles(200, 200, 200, 404)  # a page about one of Alpha's jobs or templates
ADMIN_PAGE = roles(403, 403, 200, 404)
ADMIN_POST = roles(403, 403, 302, 404)
API_READ = roles(200, 200, 200, 404, 401)


def job(t):
    return t.job.pk


def stop_effect(team, role, response):
    from jobs.models import Job

    status = Job.objects.get(pk=team.job.pk).status
    assert status == ("Stopping" if role in ("member", "admin") else "Running"), (role, status)


def priority_unchanged(team, role, response):
    from jobs.models import Job

    assert "Priority" not in Job.objects.get(pk=team.job.pk).body, role


def webhook_added(team, role, response):
    from jobs.models import Webhook

    assert Webhook.objects.filter(name="matrix").exists() == (role == "admin"), role


def webhook_toggled(team, role, response):
    from jobs.models import Webhook

    assert Webhook.objects.get(name="alpha-hook").enabled == (role != "admin"), role


def delivery_resent(team, role, response):
    from jobs.models import WebhookDelivery

    assert WebhookDelivery.objects.filter(resend_of__isnull=False).exists() == (role == "admin"), role


def _changed_by(role) -> bool:
    return role in ("member", "admin")


def _disabled(name: str, by: tuple[str, ...]):
    """A check: the schedule `name` ends disabled exactly when one of the roles `by` asked."""
    def check(team, role, response):
        from jobs.models import Schedule

        assert Schedule.objects.get(name=name).enabled != (role in by), role
    return check


def _deleted(name: str, by: tuple[str, ...]):
    """A check: the schedule `name` is gone exactly when one of the roles `by` asked."""
    def check(team, role, response):
        from jobs.models import Schedule

        assert Schedule.objects.filter(name=name).exists() != (role in by), role
    return check


schedule_toggled = _disabled("alpha-nightly", ("member", "admin"))
schedule_deleted = _deleted("alpha-nightly", ("member", "admin"))
# The viewer's own schedule: its owner (in any role) and the admins may disable or delete it.
viewers_schedule_disabled = _disabled("viewer-nightly", ("viewer", "admin"))
viewers_schedule_deleted = _deleted("viewer-nightly", ("viewer", "admin"))


def schedule_edited(team, role, response):
    from jobs.models import Schedule

    assert (Schedule.objects.get(name="alpha-nightly").kind == "weekly") == _changed_by(role), role


def viewers_schedule_unchanged_but_by_admin(team, role, response):
    """The viewer's disabled schedule: only an admin enables or edits (to weekly) it."""
    from jobs.models import Schedule

    found = Schedule.objects.get(pk=viewer_schedule(team))
    assert (found.enabled or found.kind == "weekly") == (role == "admin"), role


def schedule_taken_over(team, role, response):
    """The member's schedule: only an admin takes it over (becomes its owner)."""
    from jobs.models import Schedule

    owner = Schedule.objects.get(name="alpha-nightly").owner
    assert (owner == team.users["admin"]) == (role == "admin") and owner in (team.users["admin"],
                                                                            team.users["member"]), role


def schedule_added(team, role, response):
    from jobs.models import Schedule

    assert Schedule.objects.filter(name="matrix-nightly").exists() == _changed_by(role), role


def own_prefs(team, role, response):
    """Saving email notifications changes the caller's own preferences, never another user's."""
    from jobs.notify_models import NotificationPrefs

    assert list(NotificationPrefs.objects.filter(email_on_failure=True).values_list("user__username", flat=True)) \
        == ([] if role == "anon" else [role]), role


def note(team) -> int:
    """A note of the member's on the team's job (jobs.notes)."""
    from jobs.models import JobNote

    found, _ = JobNote.objects.get_or_create(job=team.job, author=team.users["member"], text="alpha note")
    return found.pk


def archived(team) -> int:
    """An ended job of Alpha's whose pod's log the console archived: its log is read without DLC."""
    import zlib

    from jobs.models import Job, PodLog

    ended = Job.objects.filter(display_name="ended-a").first() or \
        pf.make_job(team.alpha, team.users["member"], "ended-a", status="Succeeded")
    PodLog.objects.get_or_create(job=ended, pod_id="ended-a-worker-0",
                                 defaults={"content": zlib.compress(b"epoch 1"), "lines": 1})
    return ended.pk


def not_on_dlc(team) -> int:
    """An Alpha job still waiting to be submitted: its events are read without DLC (it has none yet)."""
    from jobs.models import Job

    found = Job.objects.filter(display_name="waiting-a").first() or \
        pf.make_job(team.alpha, team.users["member"], "waiting-a", status="Submitting", dlc_job_id="")
    return found.pk


def note_added(team, role, response):
    from jobs.models import JobNote

    assert JobNote.objects.filter(text="matrix note").exists() == _changed_by(role), role


def note_edited(team, role, response):
    from jobs.models import JobNote

    assert JobNote.objects.filter(text="matrix note").exists() == (role == "member"), role  # its author alone


def note_deleted(team, role, response):
    from jobs.models import JobNote

    assert JobNote.objects.filter(text="alpha note").exists() != _changed_by(role), role


def favicon_served(team, role, response):
    """/favicon.ico leads to the static icon, signed in or not (a 404 was a browser console error per session)."""
    from django.test import Client

    icon = Client().get(response["Location"])
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content), role
    assert f'<link rel="icon" href="{response["Location"]}"'.encode() in Client().get("/accounts/login/").content


def wizard_data(t):
    from jobs import spec
    from jobs.forms import wizard as glue

    s = spec.inverse(pf.BODY)
    s["basic"]["name"] = "matrix-job"
    return {**glue.sections_to_data(s), "_workspace": t.alpha.pk, "_template_name": "matrix"}


MATRIX: dict[str, list[Case]] = {
    "accounts/login/": [Case("GET", lambda t: "/accounts/login/", everyone(200))],
    "accounts/logout/": [Case("POST", lambda t: "/accounts/logout/", everyone(LOGIN)),
                         Case("GET", lambda t: "/accounts/logout/", everyone(200, LOGIN))],
    "healthz": [Case("GET", lambda t: "/healthz", everyone(503), leak_check=False),
                Case("POST", lambda t: "/healthz", everyone(405))],
    "favicon.ico": [Case("GET", lambda t: "/favicon.ico", everyone(302), check=favicon_served)],
    "admin/login/": [Case("GET", lambda t: "/admin/login/", everyone(200))],
    "": [Case("GET", lambda t: "/", everyone(200, LOGIN))],
    "jobs/new": [
        Case("GET", lambda t: "/jobs/new", roles(403, 200, 200, 200)),
        Case("GET", lambda t: f"/jobs/new?clone={t.job.pk}", roles(403, 200, 200, 404)),
        Case("GET", lambda t: f"/jobs/new?template={t.template.pk}", roles(403, 200, 200, 404)),
        # A schedule's job configuration: who may change the schedule (its owner, the member, and the admins).
        Case("GET", lambda t: f"/jobs/new?schedule={schedule(t)}", roles(403, 200, 200, 404)),
        # A viewer's own schedule: its owner may stop it, never edit its configuration.
        Case("GET", lambda t: f"/jobs/new?schedule={viewer_schedule(t)}", roles(403, 403, 200, 404)),
    ],
    # The wizard form's target: a POST as the wizard's (no JavaScript: Apply choices re-renders); a GET opens it.
    "jobs/new/form": [Case("POST", lambda t: "/jobs/new/form", roles(403, 200, 200, 200),
                           data=lambda t: {"_workspace": t.alpha.pk, "_refresh": "1"}),
                      Case("POST", lambda t: "/jobs/new/form", roles(403, 200, 200, 404),
                           data=lambda t: {"_schedule": schedule(t), "_refresh": "1"}),
                      Case("GET", lambda t: f"/jobs/new/form?clone={t.job.pk}", everyone(302, LOGIN))],
    "jobs/new/section/<str:name>": [Case("POST", lambda t: "/jobs/new/section/basic", roles(403, 200, 200, 200),
                                         data=lambda t: {"_workspace": t.alpha.pk}),
                                    Case("POST", lambda t: "/jobs/new/section/basic", roles(403, 200, 200, 404),
                                         data=lambda t: {"_schedule": schedule(t)})],
    "jobs/new/preview": [Case("POST", lambda t: "/jobs/new/preview", roles(403, 200, 200, 200),
                              data=lambda t: {"_workspace": t.alpha.pk}),
                         Case("POST", lambda t: "/jobs/new/preview", roles(403, 200, 200, 404),
                              data=lambda t: {"_schedule": schedule(t)})],
    "api/v1/jobs/validate": [Case("POST", lambda t: f"/api/v1/jobs/validate?workspace={t.alpha.pk}",
                                  roles(200, 200, 200, 404, 401), json=True,
                                  data=lambda t: {**pf.BODY, "DisplayName": "matrix-job"})],
    "jobs/<int:pk>": [Case("GET", lambda t: f"/jobs/{job(t)}", READ)],
    "jobs/<int:pk>/row": [Case("GET", lambda t: f"/jobs/{job(t)}/row", READ)],
    "jobs/<int:pk>/stop": [Case("POST", lambda t: f"/jobs/{job(t)}/stop", roles(403, 302, 302, 404),
                                check=stop_effect)],
    "jobs/<int:pk>/priority": [Case("POST", lambda t: f"/jobs/{job(t)}/priority", roles(403, 302, 302, 404),
                                    data=lambda t: {"priority": "5"}, check=priority_unchanged)],
    "jobs/<int:pk>/pods/<str:pod_id>/logs": [Case("GET", lambda t: f"/jobs/{job(t)}/pods/train-a-worker-0/logs",
                                                  READ)],
    "jobs/counts": [Case("GET", lambda t: "/jobs/counts", everyone(200, LOGIN))],
    "jobs/rows": [Case("GET", lambda t: f"/jobs/rows?watch={t.job.pk}.Creating", everyone(200, LOGIN))],
    "jobs/stop": [Case("POST", lambda t: "/jobs/stop", everyone(302, LOGIN), data=lambda t: {"job": [t.job.pk]},
                       check=stop_effect)],
    "jobs": [Case("GET", lambda t: "/jobs", everyone(301))],
    "jobs/": [Case("GET", lambda t: "/jobs/", everyone(301))],
    # Beta's member gets the page, which says the ids could not be shown (the leak check reads it).
    "jobs/compare": [Case("GET", lambda t: f"/jobs/compare?ids={t.job.pk}&ids={t.admin_job.pk}",
                          everyone(200, LOGIN))],
    "jobs/<int:pk>/events": [Case("GET", lambda t: f"/jobs/{job(t)}/events", READ)],
    "jobs/<int:pk>/metrics": [Case("GET", lambda t: f"/jobs/{job(t)}/metrics", READ)],
    "jobs/<int:pk>/scalars": [Case("GET", lambda t: f"/jobs/{job(t)}/scalars", READ)],
    "jobs/<int:pk>/logs": [Case("GET", lambda t: f"/jobs/{job(t)}/logs", READ)],
    # Notes: members and admins write; a note's author edits it; its author or an admin deletes it.
    "jobs/<int:pk>/notes": [
        Case("GET", lambda t: f"/jobs/{job(t)}/notes", READ),
        Case("POST", lambda t: f"/jobs/{job(t)}/notes", roles(403, 302, 302, 404),
             data=lambda t: {"text": "matrix note"}, check=note_added),
    ],
    "jobs/<int:pk>/notes/<int:note_id>": [
        Case("POST", lambda t: f"/jobs/{job(t)}/notes/{note(t)}", roles(403, 302, 403, 404),
             data=lambda t: {"text": "matrix note"}, check=note_edited)],
    "jobs/<int:pk>/notes/<int:note_id>/delete": [
        Case("POST", lambda t: f"/jobs/{job(t)}/notes/{note(t)}/delete", roles(403, 302, 302, 404),
             check=note_deleted)],
    "api/v1/jobs/<int:pk>/notes": [
        Case("GET", lambda t: f"/api/v1/jobs/{job(t)}/notes", API_READ),
        Case("POST", lambda t: f"/api/v1/jobs/{job(t)}/notes", roles(403, 201, 201, 404, 401), json=True,
             data=lambda t: {"text": "matrix note"}, check=note_added),
    ],
    # The job page's logs, pods and events for scripts (jobs.api_logs): whoever may see the job reads them.
    "api/v1/jobs/<int:pk>/pods": [Case("GET", lambda t: f"/api/v1/jobs/{job(t)}/pods", API_READ)],
    "api/v1/jobs/<int:pk>/pods/<str:pod_id>/log": [
        Case("GET", lambda t: f"/api/v1/jobs/{archived(t)}/pods/ended-a-worker-0/log", API_READ)],
    "api/v1/jobs/<int:pk>/pods/<str:pod_id>/log.txt": [
        Case("GET", lambda t: f"/api/v1/jobs/{archived(t)}/pods/ended-a-worker-0/log.txt", API_READ)],
    "api/v1/jobs/<int:pk>/events": [Case("GET", lambda t: f"/api/v1/jobs/{not_on_dlc(t)}/events", API_READ)],
    "jobs/<int:pk>/pods/<str:pod_id>/logs/download": [
        Case("GET", lambda t: f"/jobs/{job(t)}/pods/train-a-worker-0/logs/download", roles(502, 502, 502, 404))],
    "sweeps/": [Case("GET", lambda t: "/sweeps/", everyone(200, LOGIN))],
    "sweeps/<int:pk>": [Case("GET", lambda t: f"/sweeps/{sweep(t)}", READ)],
    # As the list's bulk stop: a viewer's stop is "not permitted" per trial, said on the page it redirects to.
    "sweeps/<int:pk>/stop": [Case("POST", lambda t: f"/sweeps/{sweep(t)}/stop", roles(302, 302, 302, 404),
                                  check=stop_effect)],
    "workspace": [Case("POST", lambda t: "/workspace", roles(302, 302, 302, 404),
                       data=lambda t: {"workspace": t.alpha.pk})],
    "workspaces": [Case("GET", lambda t: "/workspaces", everyone(200, LOGIN))],
    "workspaces/new": [Case("GET", lambda t: "/workspaces/new", everyone(403, LOGIN))],
    "workspaces/<int:ws>/settings": [Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/settings", ADMIN_PAGE)],
    "workspaces/<int:ws>/test-connection": [Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/test-connection",
                                                 ADMIN_PAGE)],
    "workspaces/<int:ws>/members": [Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/members", ADMIN_PAGE)],
    "workspaces/<int:ws>/members/<int:pk>": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/members/{t.memberships['viewer'].pk}", ADMIN_POST,
             data=lambda t: {"role": "admin"})],
    "workspaces/<int:ws>/policy": [Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/policy", ADMIN_PAGE)],
    "workspaces/<int:ws>/prices": [
        Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/prices", ADMIN_PAGE),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/prices", ADMIN_POST,
             data=lambda t: {"currency": "CNY", "instance_prices": "ecs.g6.large 1.5"})],
    "workspaces/<int:ws>/audit": [Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/audit", ADMIN_PAGE)],
    "workspaces/<int:ws>/usage": [Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/usage", READ)],
    "workspaces/<int:ws>/notifications": [
        Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/notifications", ADMIN_PAGE),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/notifications", ADMIN_POST, check=webhook_added,
             data=lambda t: {"name": "matrix", "url": "http://127.0.0.1:9/hook", "events": ["Failed"]}),
    ],
    "workspaces/<int:ws>/notifications/<int:pk>": [
        Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/notifications/{webhook(t)}", ADMIN_PAGE)],
    "workspaces/<int:ws>/notifications/<int:pk>/toggle": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/notifications/{webhook(t)}/toggle", ADMIN_POST,
             check=webhook_toggled)],
    "workspaces/<int:ws>/notifications/<int:pk>/delete": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/notifications/{webhook(t)}/delete", ADMIN_POST)],
    # Not an htmx request: the answer is a message on the page the POST redirects to (port 9: refused at once).
    "workspaces/<int:ws>/notifications/<int:pk>/test": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/notifications/{webhook(t)}/test", ADMIN_POST)],
    "workspaces/<int:ws>/notifications/<int:pk>/deliveries": [
        Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/notifications/{webhook(t)}/deliveries", ADMIN_PAGE)],
    "workspaces/<int:ws>/notifications/<int:pk>/deliveries/<int:delivery>/resend": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/notifications/{webhook(t)}/deliveries/"
                               f"{given_up_delivery(t)}/resend", ADMIN_POST, check=delivery_resent)],
    "workspaces/<int:ws>/schedules": [Case("GET", lambda t: f"/workspaces/{schedule(t) and t.alpha.pk}/schedules",
                                           READ)],
    # The schedule is the member's: its owner and the admins may change it.
    # A viewer's own schedule (its owner demoted): they may disable and delete it, not enable it.
    "workspaces/<int:ws>/schedules/<int:pk>/toggle": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{schedule(t)}/toggle", roles(403, 302, 302, 404),
             check=schedule_toggled),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{viewer_schedule(t)}/toggle",
             roles(302, 403, 302, 404), check=viewers_schedule_disabled),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{viewer_schedule(t, enabled=False)}/toggle",
             roles(403, 403, 302, 404), check=viewers_schedule_unchanged_but_by_admin)],
    "workspaces/<int:ws>/schedules/<int:pk>/delete": [
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{schedule(t)}/delete", roles(403, 302, 302, 404),
             check=schedule_deleted),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{viewer_schedule(t)}/delete",
             roles(302, 403, 302, 404), check=viewers_schedule_deleted)],
    # As the toggle: who may change the schedule may edit it. A viewer who owns one: not it (403).
    "workspaces/<int:ws>/schedules/<int:pk>/edit": [
        Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{schedule(t)}/edit", roles(403, 200, 200, 404)),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{schedule(t)}/edit", roles(403, 302, 302, 404),
             check=schedule_edited,
             data=lambda t: {"name": "alpha-nightly", "kind": "weekly", "weekdays": ["mon"], "at": "03:00"}),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{viewer_schedule(t, enabled=False)}/edit",
             roles(403, 403, 302, 404), check=viewers_schedule_unchanged_but_by_admin,
             data=lambda t: {"name": "viewer-nightly", "kind": "weekly", "weekdays": ["mon"], "at": "03:00"}),
    ],
    # Only the workspace's admins take a schedule over (a confirm page, then the POST); never its member owner.
    "workspaces/<int:ws>/schedules/<int:pk>/take-over": [
        Case("GET", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{schedule(t)}/take-over", ADMIN_PAGE),
        Case("POST", lambda t: f"/workspaces/{t.alpha.pk}/schedules/{schedule(t)}/take-over", ADMIN_POST,
             check=schedule_taken_over)],
    "jobs/<int:pk>/schedule": [
        Case("GET", lambda t: f"/jobs/{job(t)}/schedule", roles(403, 200, 200, 404)),
        Case("POST", lambda t: f"/jobs/{job(t)}/schedule", roles(403, 302, 302, 404), check=schedule_added,
             data=lambda t: {"name": "matrix-nightly", "kind": "daily", "at": "02:00", "skip_if_active": "on"}),
    ],
    "account/api": [Case("GET", lambda t: "/account/api", everyone(200, LOGIN))],
    "account/api/tokens/<int:pk>/revoke": [
        Case("POST", lambda t: f"/account/api/tokens/{member_token(t)}/revoke", roles(404, 302, 404, 404))],
    "account/notifications": [
        Case("GET", lambda t: "/account/notifications", everyone(200, LOGIN)),
        Case("POST", lambda t: "/account/notifications", everyone(302, LOGIN),
             data=lambda t: {"email": "me@example.com", "email_on_failure": "on"}, check=own_prefs)],
    "account/notifications/test": [Case("POST", lambda t: "/account/notifications/test", everyone(302, LOGIN))],
    "templates": [Case("GET", lambda t: "/templates", everyone(200, LOGIN))],
    "templates/save": [Case("GET", lambda t: f"/templates/save?job={job(t)}", roles(403, 200, 200, 404))],
    "templates/from-wizard": [Case("POST", lambda t: "/templates/from-wizard", roles(403, 302, 302, 404),
                                   data=wizard_data)],
    "templates/<int:pk>": [Case("GET", lambda t: f"/templates/{t.template.pk}", READ)],
    "templates/<int:pk>/locks": [Case("POST", lambda t: f"/templates/{t.template.pk}/locks", ADMIN_POST,
                                      data=lambda t: {"locked": ["environment.image"]})],
    "templates/<int:pk>/default": [Case("POST", lambda t: f"/templates/{t.template.pk}/default", ADMIN_POST,
                                        data=lambda t: {"default_version": "1"})],
    "templates/<int:pk>/delete": [Case("POST", lambda t: f"/templates/{t.template.pk}/delete", ADMIN_POST)],
    "jobs/import": [Case("GET", lambda t: "/jobs/import", roles(403, 200, 200, 200))],
    "jobs/<int:pk>/export/<str:fmt>": [Case("GET", lambda t, fmt=fmt: f"/jobs/{job(t)}/export/{fmt}", READ)
                                       for fmt in ("json", "python")],
    "api/v1/openapi.json": [Case("GET", lambda t: "/api/v1/openapi.json", everyone(200), leak_check=False)],
    "api/v1/workspaces": [Case("GET", lambda t: "/api/v1/workspaces", everyone(200, 401))],
    "api/v1/jobs": [
        Case("GET", lambda t: "/api/v1/jobs", everyone(200, 401)),
        Case("POST", lambda t: f"/api/v1/jobs?workspace={t.alpha.pk}", roles(403, 201, 201, 404, 401), json=True,
             data=lambda t: {**pf.BODY, "DisplayName": "matrix-job"}),
    ],
    "api/v1/jobs/<int:pk>": [
        Case("GET", lambda t: f"/api/v1/jobs/{job(t)}", API_READ),
        # The team's job runs (and is not on a quota): those who may change it hear why not (409).
        Case("PATCH", lambda t: f"/api/v1/jobs/{job(t)}", roles(403, 409, 409, 404, 401), json=True,
             data=lambda t: {"priority": 5}, check=priority_unchanged),
    ],
    "api/v1/jobs/<int:pk>/stop": [Case("POST", lambda t: f"/api/v1/jobs/{job(t)}/stop",
                                       roles(403, 202, 202, 404, 401), check=stop_effect)],
    "api/v1/jobs/<int:pk>/clone": [Case("POST", lambda t: f"/api/v1/jobs/{job(t)}/clone",
                                        roles(403, 201, 201, 404, 401), json=True, data=lambda t: {})],
    "api/v1/sweeps": [
        # sweep(t) first: the list has one of Alpha's sweeps to show (and the leak check something to find).
        Case("GET", lambda t: f"/api/v1/sweeps?workspace={sweep(t) and t.alpha.pk}", API_READ),
        Case("POST", lambda t: f"/api/v1/sweeps?workspace={t.alpha.pk}", roles(403, 201, 201, 404, 401), json=True,
             data=lambda t: {"Job": {**pf.BODY, "DisplayName": "matrix-grid"}, "Parameters": {"LR": ["1", "2"]}}),
    ],
    "api/v1/sweeps/<int:pk>": [Case("GET", lambda t: f"/api/v1/sweeps/{sweep(t)}", API_READ)],
    # As a job's stop by the API: a viewer, who may stop nothing, gets 403 (the page says "not permitted" per trial).
    "api/v1/sweeps/<int:pk>/stop": [Case("POST", lambda t: f"/api/v1/sweeps/{sweep(t)}/stop",
                                         roles(403, 202, 202, 404, 401), check=stop_effect)],
    "api/v1/workspaces/<int:pk>/usage": [Case("GET", lambda t: f"/api/v1/workspaces/{t.alpha.pk}/usage", API_READ)],
    "api/v1/schedules": [
        Case("GET", lambda t: f"/api/v1/schedules?workspace={schedule(t) and t.alpha.pk}", API_READ),
        Case("POST", lambda t: f"/api/v1/schedules?workspace={t.alpha.pk}", roles(403, 201, 201, 404, 401),
             json=True, check=schedule_added,
             data=lambda t: {"name": "matrix-nightly", "recurrence": {"kind": "daily", "at": "02:00"},
                             "job": {**pf.BODY, "DisplayName": "matrix-job"}}),
    ],
    "api/v1/schedules/<int:pk>/take-over": [
        Case("POST", lambda t: f"/api/v1/schedules/{schedule(t)}/take-over", roles(403, 403, 200, 404, 401),
             check=schedule_taken_over)],
    "api/v1/schedules/<int:pk>": [
        Case("GET", lambda t: f"/api/v1/schedules/{schedule(t)}", API_READ),
        Case("PATCH", lambda t: f"/api/v1/schedules/{schedule(t)}", roles(403, 200, 200, 404, 401), json=True,
             data=lambda t: {"enabled": False}, check=schedule_toggled),
        Case("PATCH", lambda t: f"/api/v1/schedules/{schedule(t)}", roles(403, 200, 200, 404, 401), json=True,
             data=lambda t: {"recurrence": {"kind": "weekly", "weekdays": ["mon"], "at": "03:00"}},
             check=schedule_edited),
        Case("DELETE", lambda t: f"/api/v1/schedules/{schedule(t)}", roles(403, 204, 204, 404, 401),
             check=schedule_deleted),
        # The viewer's own schedule: a disable alone and a delete are theirs too; enabling and editing are not.
        Case("PATCH", lambda t: f"/api/v1/schedules/{viewer_schedule(t)}", roles(200, 403, 200, 404, 401), json=True,
             data=lambda t: {"enabled": False}, check=viewers_schedule_disabled, read_only=403),
        Case("PATCH", lambda t: f"/api/v1/schedules/{viewer_schedule(t, enabled=False)}",
             roles(403, 403, 200, 404, 401), json=True, data=lambda t: {"enabled": True},
             check=viewers_schedule_unchanged_but_by_admin),
        Case("PATCH", lambda t: f"/api/v1/schedules/{viewer_schedule(t, enabled=False)}",
             roles(403, 403, 200, 404, 401), json=True,
             data=lambda t: {"recurrence": {"kind": "weekly", "weekdays": ["mon"], "at": "03:00"}},
             check=viewers_schedule_unchanged_but_by_admin),
        Case("DELETE", lambda t: f"/api/v1/schedules/{viewer_schedule(t)}", roles(204, 403, 204, 404, 401),
             check=viewers_schedule_deleted, read_only=403),
    ],
}


def webhook(team) -> int:
    from jobs.models import Webhook
    from jobs.notify_models import url_fields

    hook, _ = Webhook.objects.get_or_create(workspace=team.alpha, name="alpha-hook",
                                            defaults={**url_fields("http://127.0.0.1:9/hook"), "events": ["Failed"]})
    return hook.pk


def given_up_delivery(team) -> int:
    """A delivery of Alpha's webhook that ran out of attempts: one an admin may resend."""
    from jobs.models import WebhookDelivery

    found, _ = WebhookDelivery.objects.get_or_create(webhook_id=webhook(team), job=team.job, status="Failed",
                                                     defaults={"attempts": 4, "last_code": 500})
    return found.pk


def sweep(team) -> int:
    """A sweep of Alpha whose trial 1 is the team's running job."""
    from jobs.models import Sweep, SweepTrial

    found, _ = Sweep.objects.get_or_create(workspace=team.alpha, name="grid-a", defaults={
        "owner": team.users["member"], "parameters": [["LR", ["1", "2"]]]})
    SweepTrial.objects.get_or_create(job=team.job, defaults={"sweep": found, "number": 1, "values": {"LR": "1"}})
    return found.pk


def schedule(team) -> int:
    """A daily schedule of Alpha, the member's, made from the team's job."""
    from jobs.models import Schedule

    found, _ = Schedule.objects.get_or_create(workspace=team.alpha, name="alpha-nightly", defaults={
        "owner": team.users["member"], "body": {**pf.BODY, "DisplayName": "alpha-nightly"}, "kind": "daily",
        "at": "02:00", "next_run_at": "2030-01-01T02:00:00Z", "source_job": team.job})
    return found.pk


def viewer_schedule(team, enabled: bool = True) -> int:
    """A daily schedule of Alpha owned by the viewer (made while they were a member, say): they may stop it only."""
    from jobs.models import Schedule

    found, _ = Schedule.objects.get_or_create(workspace=team.alpha, name="viewer-nightly", defaults={
        "owner": team.users["viewer"], "body": {**pf.BODY, "DisplayName": "viewer-nightly"}, "kind": "daily",
        "at": "02:00", "enabled": enabled, "next_run_at": "2030-01-01T02:00:00Z" if enabled else None})
    return found.pk


def member_token(team) -> int:
    from jobs import apitokens

    token, _ = apitokens.create_token(team.users["member"], "matrix")
    return token.pk


def routes(patterns=None, prefix: str = "", namespace: str | None = None):
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            yield from routes(p.url_patterns, prefix + str(p.pattern), p.namespace or namespace)
        elif isinstance(p, URLPattern):
            yield namespace, prefix + str(p.pattern), p


def console_routes() -> list[str]:
    return [route for ns, route, _ in routes() if ns != "admin"]


def test_every_url_has_an_entry():
    missing = sorted(set(console_routes()) - set(MATRIX))
    stale = sorted(set(MATRIX) - set(console_routes()))
    assert not missing, f"URLs without an authorization entry: {missing}"
    assert not stale, f"entries for URLs that no longer exist: {stale}"


CASES = [(route, i, role) for route, cases in MATRIX.items() for i in range(len(cases)) for role in ROLES]


def client_for(team, role):
    return pf.client_for(None if role == "anon" else team.users[role])


@pytest.mark.parametrize(("route", "index", "role"), CASES, ids=[f"{r or '/'}#{i}-{role}" for r, i, role in CASES])
def test_authorization_matrix(db, route, index, role):
    case = MATRIX[route][index]
    team = pf.make_team()
    client = client_for(team, role)
    path = case.path(team)
    kwargs: dict[str, Any] = {}
    if case.data is not None:
        data = case.data(team)
        kwargs = {"data": json.dumps(data), "content_type": "application/json"} if case.json else {"data": data}
    response = getattr(client, case.method.lower())(path, **kwargs)
    expected = case.expect[role]
    if expected == LOGIN:
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), \
            (path, role, response.status_code)
    else:
        assert response.status_code == expected, (path, role, response.status_code, response.content[:500])
        if response.status_code == 302:
            assert not response["Location"].startswith("/accounts/login/")
    if role == "other" and case.leak_check:
        body = b"".join(response.streaming_content) if response.streaming else response.content
        leaked = [s for s in ALPHA_SECRETS if s in body]
        assert not leaked, f"{path} shows Beta's member Alpha data: {leaked}"
    if case.check:
        case.check(team, role, response)


# --- Django's admin site --------------------------------------------------------------------------------


def admin_path(route: str) -> str:
    import re

    path = "/" + route.lstrip("^").rstrip("$")
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: {"app_label": "jobs"}.get(m.group(1), "1"), path)
    path = re.sub(r"\(\?P<app_label>[^)]*\)", "jobs", path)
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", "1", path)
    return path


# admin/login/ is shadowed by the console's rate-limited sign-in (in MATRIX); signing out needs no rights.
ADMIN_ROUTES = sorted({route for ns, route, _ in routes() if ns == "admin"} - {"admin/login/", "admin/logout/"})


@pytest.mark.parametrize("route", ADMIN_ROUTES)
def test_admin_site_is_staff_only(db, route):
    team = pf.make_team()
    path = admin_path(route)
    for role in ROLES:
        response = client_for(team, role).get(path)
        assert response.status_code in (302, 405), (path, role, response.status_code)
        if response.status_code == 302:
            assert "/login/" in response["Location"], (path, role, response["Location"])
