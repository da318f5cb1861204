"""Team portal pages: workspaces and members, guardrail policy, audit log, API tokens, job templates,
import and export, and the rate-limited sign-in. Function views; permissions come from jobs.access."""

from __future__ import annotations

import json
import time
from secrets import token_urlsafe
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.functional import SimpleLazyObject
from django.utils.html import format_html
from django.utils.text import slugify
from django.utils.timezone import localtime
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from jobs import (
    access,
    apitokens,
    audit,
    budget_alerts,
    dlc,
    export,
    idle,
    notify,
    policies,
    ratelimit,
    schedules,
    secretbox,
    spec,
    syncstate,
    tags,
    templates_lib,
)
from jobs.models import AuditEvent, Membership, Webhook, Workspace, WorkspacePolicy
from jobs.portal_forms import (
    SETTINGS_FIELDS,
    AuditFilterForm,
    CostForm,
    DefaultVersionForm,
    ImportForm,
    LockForm,
    MemberAddForm,
    MemberRoleForm,
    PolicyForm,
    TemplateSaveForm,
    TokenForm,
    WebhookForm,
    WorkspaceCreateForm,
    WorkspaceSettingsForm,
    import_note_rows,
    official_image_addresses,
)

AUDIT_PAGE_SIZE = 50
# The session key under which imports wait for the wizard, by the key in its URL (see take_prefill).
PREFILL_SESSION_KEY = "dlc-console:wizard-prefill"
# A token just created, sealed (jobs.secretbox), until the page the create redirects to shows it once.
NEW_TOKEN_SESSION_KEY = "dlc-console:new-api-token"


def _current_workspace(request: HttpRequest) -> Workspace | None:
    from jobs.views import current_workspace  # the pages module owns the notion of "current"

    return current_workspace(request)


def _user_workspaces(request: HttpRequest) -> list[Workspace]:
    from jobs.views import user_workspaces

    return user_workspaces(request)


def _show_workspace(request: HttpRequest, workspace: Workspace) -> None:
    from jobs.views import show_workspace

    show_workspace(request, workspace)


def nav(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the workspace switcher and the links of the top bar, each shown only to those who may
    follow it. The switcher shows the page's workspace (a job's page shows the job's, see views.show_workspace),
    and Create job and the settings link act in it; Import always imports into the chosen workspace.

    Lazy, because every render runs it, HTMX fragments that never show the top bar included. No query of its
    own: the workspaces come with the user's role in each (views.user_workspaces, read once per request).
    """
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from jobs.views import shown_workspace

    def shown() -> Workspace | None:
        return shown_workspace(request)  # no query: a pick from the list read once per request

    def may(action: str, workspace: Workspace | None) -> bool:
        return bool(workspace and access.can(user, action, workspace=workspace))

    def create_url() -> str:
        workspace, url = shown(), reverse("job_create")
        # The wizard starts in the chosen workspace unless told otherwise: tell it when the page shows another.
        return f"{url}?_workspace={workspace.pk}" if workspace and workspace != _current_workspace(request) else url

    return {
        "nav_workspaces": SimpleLazyObject(lambda: _user_workspaces(request)),
        "nav_workspace": SimpleLazyObject(shown),
        "nav_is_admin": SimpleLazyObject(lambda: may("manage", shown())),
        "nav_can_create": SimpleLazyObject(lambda: may("create", shown())),
        "nav_create_url": SimpleLazyObject(create_url),
        "nav_can_import": SimpleLazyObject(lambda: may("create", _current_workspace(request))),
    }


# --- sign-in ---------------------------------------------------------------------------------------------


class RateLimitedLoginView(auth_views.LoginView):
    """Django's LoginView with a failure counter per client IP and username (see jobs.ratelimit)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        username = request.POST.get("username", "")
        wait = ratelimit.blocked_for(request, username)
        if wait:
            form = self.get_form()
            form.errors.clear()
            form.add_error(None, f"Too many failed sign-ins. Try again in {ratelimit.describe(wait)}.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        ratelimit.failed(self.request, self.request.POST.get("username", ""))
        return super().form_invalid(form)

    def form_valid(self, form):
        ratelimit.succeeded(self.request, form.get_user().get_username())
        return super().form_valid(form)

    def get_redirect_url(self) -> str:
        # next= naming the sign-in or sign-out page itself would land a fresh sign-in on a Sign out button (or the
        # form again): those go to LOGIN_REDIRECT_URL, the job list.
        url = super().get_redirect_url()
        if url and urlsplit(url).path in (reverse("login"), reverse("logout")):
            return ""
        return url


login = RateLimitedLoginView.as_view()


class SignOutView(auth_views.LogoutView):
    """Django's LogoutView, whose empty 405 to a GET left a typed or bookmarked /accounts/logout/ a blank error
    page. A GET shows the Sign out button instead (signing out stays a POST, so no link or image can do it); one
    who is signed out already goes to the sign-in page."""

    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect("login")
        return render(request, "registration/logout.html")

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        # The browser drops what it cached of the console's private pages. Browsers that also evict their back/forward
        # cache on it then never show the page just left on Back; for those that keep it (Chromium 156 does),
        # base.html reloads a page restored after a sign-out. No no-store everywhere: it would lose the wizard's
        # typed form on Back.
        response["Clear-Site-Data"] = '"cache"'
        return response


logout = SignOutView.as_view()


# --- workspaces -------------------------------------------------------------------------------------------


def _checked_again(form: Any) -> Any:
    """A bound form whose save broke a unique rule (another post saved the same name since its check) validated anew:
    the check that missed it now says so at its field."""
    form.is_valid()
    return form


@login_required
@require_GET
def workspace_list(request: HttpRequest) -> HttpResponse:
    rows = [(ws, access.role_in(request.user, ws)) for ws in access.workspaces_for(request.user)]
    return render(request, "portal/workspaces.html", {"rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def workspace_create(request: HttpRequest) -> HttpResponse:
    if not request.user.is_superuser:
        raise PermissionDenied("Only a console superuser creates workspaces.")
    form = WorkspaceCreateForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                workspace = form.save()
                Membership.objects.create(user=request.user, workspace=workspace, role=Membership.ADMIN)
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="workspace-created",
                             settings={f: form.cleaned_data.get(f) for f in form.Meta.fields})
        except IntegrityError:  # its name taken by another post since the check (a double click): checked again
            form = _checked_again(WorkspaceCreateForm(request.POST, user=request.user))
            return render(request, "portal/workspace_new.html", {"form": form})
        messages.success(request, f"Workspace {workspace.name} created; you are its admin.")
        return redirect("workspace_settings", ws=workspace.pk)
    return render(request, "portal/workspace_new.html", {"form": form})


def _settings_of(workspace: Workspace) -> dict[str, Any]:
    return {name: getattr(workspace, name) for name in SETTINGS_FIELDS}


@login_required
@require_http_methods(["GET", "POST"])
def workspace_settings(request: HttpRequest, ws: int) -> HttpResponse:
    workspace = access.get_workspace(request.user, ws, "manage")
    before = _settings_of(workspace)
    form = WorkspaceSettingsForm(request.POST or None, instance=workspace, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                workspace = form.save()
                syncstate.retry_soon(workspace)  # a sync backing off after failures tries the saved settings now
                changed = audit.changes(before, _settings_of(workspace))
                if changed:
                    audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="settings",
                                 changes=changed)
        except IntegrityError:  # renamed to a name another post took since the check: checked again, as saved
            workspace = access.get_workspace(request.user, ws, "manage")  # the form's copy holds the refused values
            form = _checked_again(WorkspaceSettingsForm(request.POST, instance=workspace, user=request.user))
            return render(request, "portal/settings.html", {"workspace": workspace, "form": form, "tab": "settings"})
        messages.success(request, "Workspace settings saved." if changed else "Nothing changed.")
        return redirect("workspace_settings", ws=workspace.pk)
    return render(request, "portal/settings.html", {"workspace": workspace, "form": form, "tab": "settings"})


@login_required
@require_POST
def test_connection(request: HttpRequest, ws: int) -> HttpResponse:
    """Call ListEcsSpecs with the settings in the form (saved or not) and show the answer or the error."""
    workspace = access.get_workspace(request.user, ws, "manage")
    candidate = Workspace.objects.get(pk=workspace.pk)  # a copy the form may change without saving
    form = WorkspaceSettingsForm(request.POST, instance=candidate, user=request.user)
    context: dict[str, Any] = {"workspace": workspace, "specs": None, "error": None, "reason": "", "form_errors": None}
    if request.POST and not form.is_valid():
        context["form_errors"] = form.errors
    else:
        try:
            context["specs"] = dlc.list_ecs_specs(candidate if request.POST else workspace)
        except dlc.DLCError as err:
            context["error"] = err
        except Exception as exc:  # noqa: BLE001 - a credentials provider can fail before the SDK does
            # The same classification, and so redaction, as a failure inside an SDK call: the credentials
            # library quotes an STS answer (a temporary AccessKeySecret and SecurityToken) in its errors.
            context["error"] = dlc.classify(exc)
        if context["error"] is not None:
            context["reason"] = dlc.reason(context["error"])
    if request.htmx:
        return render(request, "portal/_connection.html", context)
    return render(request, "portal/settings.html", {**context, "form": form, "tab": "settings"})


# --- members ----------------------------------------------------------------------------------------------


def _admin_count(workspace: Workspace) -> int:
    return Membership.objects.filter(workspace=workspace, role=Membership.ADMIN).count()


@login_required
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest, ws: int) -> HttpResponse:
    workspace = access.get_workspace(request.user, ws, "manage")
    form = MemberAddForm(request.POST or None, workspace=workspace)
    if request.method == "POST" and form.is_valid():
        user, role = form.cleaned_data["username"], form.cleaned_data["role"]
        try:
            with transaction.atomic():
                Membership.objects.create(user=user, workspace=workspace, role=role)
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="member-added",
                             member=user.get_username(), role=role)
        except IntegrityError:  # added by another post since the form's check (a double click): checked again
            form = _checked_again(MemberAddForm(request.POST, workspace=workspace))
        else:
            messages.success(request, f"{user.get_username()} added as {role}.")
            return redirect("members", ws=workspace.pk)
    # Each member's enabled schedules here, told before a removal or demotion would leave their runs skipped.
    rows = (Membership.objects.filter(workspace=workspace).select_related("user").order_by("user__username")
            .annotate(enabled_schedules=Count("user__job_schedules", filter=Q(
                user__job_schedules__workspace=workspace, user__job_schedules__enabled=True))))
    return render(request, "portal/members.html", {
        "workspace": workspace, "form": form, "rows": rows, "roles": Membership.ROLES, "tab": "members",
    })


@login_required
@require_POST
def member_update(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    """Change a member's role (`role=`) or remove them (`remove=1`). The last admin stays. An admin who removes or
    demotes themselves confirms first (`confirm=1`, a page without JS) and lands where they still may look."""
    workspace = access.get_workspace(request.user, ws, "manage")
    with transaction.atomic():
        # The workspace's membership changes one at a time: locking only the changed row, two admins demoting each
        # other at once each counted the other still admin and left no admin (PostgreSQL; SQLite queues writes).
        Workspace.objects.select_for_update().only("pk").get(pk=workspace.pk)
        # of=self: the member's user row stays unlocked (the audit event's actor key needs it: two admins changing
        # each other's roles deadlocked on their user rows).
        membership = get_object_or_404(
            Membership.objects.select_for_update(of=("self",)).select_related("user"), pk=pk, workspace=workspace
        )
        name = membership.user.get_username()
        last_admin = membership.role == Membership.ADMIN and _admin_count(workspace) <= 1
        form = MemberRoleForm(request.POST)
        remove, role = bool(request.POST.get("remove")), form.cleaned_data["role"] if form.is_valid() else None
        steps_down = membership.user_id == request.user.pk and not last_admin and (
            remove or role not in (None, Membership.ADMIN))
        if steps_down and not request.POST.get("confirm"):
            return render(request, "portal/member_confirm.html", {
                "workspace": workspace, "membership": membership, "remove": remove, "role": role, "tab": "members",
                "stranded": schedules.stranded(membership.user, workspace, None if remove else role)})
        if remove:
            if last_admin:
                messages.error(request, f"{name} is the last admin of this workspace and cannot be removed.")
            else:
                membership.delete()
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="member-removed",
                             member=name, role=membership.role)
                _say_done(request, workspace, f"{name} removed.", name,
                          schedules.stranded(membership.user, workspace, None), linked=not steps_down, removed=True)
        else:
            if role is None:
                messages.error(request, "Choose viewer, member or admin.")
            elif last_admin and role != Membership.ADMIN:
                messages.error(request, f"{name} is the last admin of this workspace; make someone else admin first.")
            elif role != membership.role:
                before, membership.role = membership.role, role
                membership.save(update_fields=["role"])
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="member-role",
                             member=name, role={"from": before, "to": membership.role})
                _say_done(request, workspace, f"{name} is now {membership.role}.", name,
                          schedules.stranded(membership.user, workspace, membership.role), linked=True)
            else:  # Change role with the role unchanged: said, as the other admin forms say it, not a silent reload
                messages.info(request, f"Nothing changed: {name} is {role} already.")
    if steps_down:
        # The members page is for admins only: a 403 after "done" reads as a failure. A demoted admin still sees
        # the workspace's jobs, so the list shows that workspace.
        if not remove:
            request.session["workspace_id"] = workspace.pk
        return redirect("workspace_list" if remove else "job_list")
    return redirect("members", ws=workspace.pk)


def _say_done(request: HttpRequest, workspace: Workspace, done: str, name: str, stranded: list[str], *,
              linked: bool, removed: bool = False) -> None:
    """The change's message; when it leaves the member's enabled schedules unable to run (the beat skips each run),
    which ones and what to do, with a link to the Schedules page (not for who just removed themselves)."""
    if not stranded:
        messages.success(request, done)
        return
    shown = ", ".join(stranded[:3]) + (f" and {len(stranded) - 3} more" if len(stranded) > 3 else "")
    # A member still (a viewer) may disable or delete their own schedules (schedules.can_stop); a removed one not.
    who = "an admin" if removed else f"{name} or an admin"
    if len(stranded) == 1:
        said = (f"Their schedule {shown} can no longer run: its runs are skipped until an admin takes it over, or "
                f"{who} disables or deletes it")
    else:
        said = (f"Their {len(stranded)} schedules ({shown}) can no longer run: their runs are skipped until an admin "
                f"takes them over, or {who} disables or deletes them")
    text = f"{done} {said}, or {name} may create jobs here again."
    if linked:
        text = format_html('{} <a href="{}">Schedules</a>', text, reverse("schedule_list", args=[workspace.pk]))
    messages.warning(request, text)


# --- guardrail policy -------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def policy_edit(request: HttpRequest, ws: int) -> HttpResponse:
    workspace = access.get_workspace(request.user, ws, "manage")
    row = policies.policy_row(workspace)
    form = PolicyForm(request.POST or None, initial=PolicyForm.initial_from(row))
    if request.method == "POST" and form.is_valid():
        values = form.policy_values()
        before = {k: getattr(row, k) for k in values}
        with transaction.atomic():
            WorkspacePolicy.objects.update_or_create(workspace=workspace, defaults=values)
            if values["idle_after_minutes"] is None:
                idle.clear_flags(workspace)
            changed = audit.changes(before, values)
            if changed:
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="policy", changes=changed)
        messages.success(request, "Policy saved." if changed else "Nothing changed.")
        return redirect("policy_edit", ws=workspace.pk)
    return render(request, "portal/policy.html", {
        "workspace": workspace, "form": form, "hints": policies.hints_for(workspace), "tab": "policy",
    })


# --- prices and budget ------------------------------------------------------------------------------------


def _costs_changed_since(workspace: Workspace) -> str:
    """The refusal of a save from a page opened before another change of the prices or budget, naming it."""
    last = AuditEvent.objects.filter(workspace=workspace, action=AuditEvent.CHANGED, details__event="costs").first()
    by = "" if last is None else \
        f" (by {last.actor_name or 'a deleted user'} at {localtime(last.created_at):%Y-%m-%d %H:%M %Z})"
    return (f"The prices or budget were changed since you opened this page{by}. Your entries are kept below: check "
            "them against the saved ones (open this page anew in another tab), then save again to replace them.")


@login_required
@require_http_methods(["GET", "POST"])
def cost_edit(request: HttpRequest, ws: int) -> HttpResponse:
    """The workspace's price table and monthly budget (jobs.costs), audited as a settings change. A changed table
    applies from when it is saved (jobs.costs.save_prices); the page lists the tables it replaced."""
    from jobs import costs
    from jobs.forms.wizard import instance_catalog

    workspace = access.get_workspace(request.user, ws, "manage")
    row = costs.row(workspace)
    form = CostForm(request.POST or None, initial=CostForm.initial_from(row))
    if request.method == "POST" and form.is_valid():
        table, priced = form.cleaned_data["instance_prices"], row.instance_prices or {}
        # The wizard's catalog (cached; None: not known), asked only for a type not priced already.
        offered = instance_catalog(workspace).by_type() if set(table) - set(priced) else None
        for problem in costs.unoffered(workspace, table, offered, priced):
            form.add_error("instance_prices", problem)
        if form.is_valid() and form.changed_since_shown(row):
            form.add_error(None, _costs_changed_since(workspace))
    if request.method == "POST" and form.is_valid():
        values = form.cost_values()
        # In the form's own terms (plain decimal text, None for blank), so an unchanged save records nothing.
        before = {**CostForm.initial_from(row), "instance_prices": row.instance_prices or {}}
        before.pop("seen")  # the page's digest, not a setting
        before.update({k: before[k] or None for k in ("gpu_hour_price", "cpu_core_hour_price", "monthly_budget")})
        with transaction.atomic():
            was = row.prices_from
            stored = costs.save_prices(workspace, values, request.user)
            changed = audit.changes(before, values)
            if changed:
                # When a new table took effect: the audit says from when the changed prices count.
                since = {"prices_from": stored.prices_from.isoformat()} if stored.prices_from != was else {}
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="costs", changes=changed,
                             **since)
        messages.success(request, "Prices saved." if changed else "Nothing changed.")
        return redirect("cost_edit", ws=workspace.pk)
    current, past, replaced = costs.tables_shown(row)
    return render(request, "portal/costs.html", {
        "workspace": workspace, "form": form, "tab": "costs", "budget": costs.budget(workspace, stored=row),
        "current_table": current, "past_tables": past, "replaced": replaced,
    })


# --- audit log ----------------------------------------------------------------------------------------------


@login_required
@require_GET
def audit_log(request: HttpRequest, ws: int) -> HttpResponse:
    """Read-only, newest first, filtered; keyset pages by id so deep pages cost the same as the first."""
    workspace = access.get_workspace(request.user, ws, "manage")
    form = AuditFilterForm(request.GET or None)
    events = AuditEvent.objects.filter(workspace=workspace).select_related("job", "source")
    data: dict[str, Any] = {}
    if form.is_bound:
        form.is_valid()  # runs the checks: a refused filter shows its error at its field, and the others still apply
        data = form.cleaned_data  # only the valid ones: not every event under filters that look applied
    if data.get("user"):
        events = events.filter(actor_name=data["user"].strip())
    if data.get("action"):
        events = events.filter(action=data["action"])
    if data.get("job"):
        term = data["job"].strip()
        # Longer digit strings are names, not row ids; "²" is a digit to isdigit() but not to int().
        by_id = term.isascii() and term.isdigit() and len(term) <= 18
        events = events.filter(Q(job_id=int(term)) | Q(source_id=int(term)) if by_id else Q(job_name__icontains=term))
    if data.get("since"):
        events = events.filter(created_at__gte=data["since"])
    if data.get("until"):
        events = events.filter(created_at__lte=data["until"])
    if data.get("before"):
        events = events.filter(id__lt=data["before"])
    rows = list(events.order_by("-id")[: AUDIT_PAGE_SIZE + 1])
    more = len(rows) > AUDIT_PAGE_SIZE
    rows = rows[:AUDIT_PAGE_SIZE]
    next_query = None
    if more:
        params = request.GET.copy()
        params["before"] = rows[-1].pk
        next_query = params.urlencode()
    actors = (AuditEvent.objects.filter(workspace=workspace).order_by("actor_name")
              .values_list("actor_name", flat=True).distinct())
    return render(request, "portal/audit.html", {
        "workspace": workspace, "form": form, "rows": rows, "next_query": next_query, "actors": actors,
        "tab": "audit", "first_page": not data.get("before"),
    })


# --- notifications (webhooks) -------------------------------------------------------------------------------


def _webhook_record(webhook: Webhook) -> dict[str, Any]:
    """What the audit log keeps of a webhook: the URL's host and a digest, not its path, which often is the
    receiver's secret (chat webhooks); a signing secret only as on or off."""
    return {"name": webhook.name, "url_host": webhook.url_host, "url_digest": webhook.url_digest,
            "events": list(webhook.events),
            "sweeps": webhook.sweeps, "enabled": webhook.enabled, "signing": "on" if webhook.has_secret else "off"}


def _resumed(webhook: Webhook) -> str:
    """Its held deliveries sent on (jobs.notify.resume), in words for the message."""
    job_ids, dropped = notify.resume(webhook)
    notify.enqueue(job_ids)
    words = ""
    if job_ids:
        words += " Its paused deliveries are sent now."
    if dropped:
        words += f" {dropped} paused for over a day {'was' if dropped == 1 else 'were'} dropped: Resend if wanted."
    return words


def _notifications_page(request: HttpRequest, workspace: Workspace, form: WebhookForm,
                        editing: Webhook | None = None) -> HttpResponse:
    webhooks = list(Webhook.objects.filter(workspace=workspace))
    latest = notify.latest_deliveries(webhooks)
    return render(request, "portal/notifications.html", {
        "workspace": workspace, "form": form, "editing": editing, "tab": "notifications",
        "rows": [(w, latest[w.pk]) for w in webhooks], "pause_after": settings.DLC_WEBHOOK_PAUSE_AFTER,
    })


def _webhook(request: HttpRequest, ws: int, pk: int) -> tuple[Workspace, Webhook]:
    workspace = access.get_workspace(request.user, ws, "manage")
    return workspace, get_object_or_404(Webhook, pk=pk, workspace=workspace)


@login_required
@require_http_methods(["GET", "POST"])
def notifications(request: HttpRequest, ws: int) -> HttpResponse:
    """The workspace's webhooks, their latest deliveries, and the form that adds one."""
    workspace = access.get_workspace(request.user, ws, "manage")
    form = WebhookForm(request.POST or None, workspace=workspace)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                webhook = form.save()
                audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="webhook-added",
                             webhook=_webhook_record(webhook))
        except IntegrityError:  # its name taken by another post since the check (a double click)
            return _notifications_page(request, workspace, _checked_again(WebhookForm(request.POST,
                                                                                      workspace=workspace)))
        messages.success(request, f"Webhook {webhook.name} added.")
        return redirect("notifications", ws=workspace.pk)
    return _notifications_page(request, workspace, form)


def _edit_form(request: HttpRequest, webhook: Webhook, workspace: Workspace) -> WebhookForm:
    form = WebhookForm(request.POST or None, instance=webhook, workspace=workspace)
    form.fields["name"].widget.attrs["autofocus"] = True  # Edit's anchor shows the form; typing goes into it
    return form


@login_required
@require_http_methods(["GET", "POST"])
def webhook_edit(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    workspace, webhook = _webhook(request, ws, pk)
    before = _webhook_record(webhook)
    form = _edit_form(request, webhook, workspace)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                webhook = form.save()
                changed = audit.changes(before, _webhook_record(webhook))
                if form.cleaned_data.get("secret"):
                    changed["signing"] = {"from": before["signing"], "to": "new"}
                if changed:
                    audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="webhook-changed",
                                 webhook=webhook.name, changes=changed)
                resumed = _resumed(webhook) if webhook.enabled and not before["enabled"] else ""
        except IntegrityError:  # renamed to a name another post took since the check: checked again, as saved
            _workspace, webhook = _webhook(request, ws, pk)  # the form's copy holds the refused values
            return _notifications_page(request, workspace, _checked_again(_edit_form(request, webhook, workspace)),
                                       editing=webhook)
        messages.success(request, (f"Webhook {webhook.name} saved." if changed else "Nothing changed.") + resumed)
        return redirect("notifications", ws=workspace.pk)
    return _notifications_page(request, workspace, form, editing=webhook)


@login_required
@require_POST
def webhook_toggle(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    workspace, webhook = _webhook(request, ws, pk)
    with transaction.atomic():
        if webhook.enabled:
            webhook.enabled = False
        else:
            webhook.resume()  # also from a pause: the admin says the receiver is fixed
        webhook.save(update_fields=["enabled", "failures_in_a_row", "paused_at", "paused_reason", "updated_at"])
        audit.record(request.user, AuditEvent.CHANGED, workspace=workspace,
                     event="webhook-enabled" if webhook.enabled else "webhook-disabled", webhook=webhook.name)
        resumed = _resumed(webhook) if webhook.enabled else ""
    messages.success(request, f"Webhook {webhook.name} {'enabled' if webhook.enabled else 'disabled'}.{resumed}")
    return redirect("notifications", ws=workspace.pk)


@login_required
@require_POST
def webhook_resend(request: HttpRequest, ws: int, pk: int, delivery: int) -> HttpResponse:
    """Send a given-up delivery again: a new delivery under the same event id (jobs.notify.resend); a second click
    finds it resent and makes nothing."""
    workspace, webhook = _webhook(request, ws, pk)
    if not webhook.enabled:
        messages.error(request, f"Enable {webhook.name} first: a paused webhook sends nothing.")
        return _back_from_resend(request, workspace, webhook)
    with transaction.atomic():
        copy = notify.resend(webhook, delivery)
        if copy is not None:
            audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, job=copy.job,
                         event="webhook-delivery-resent", webhook=webhook.name, delivery=delivery,
                         event_id=str(copy.event_id))
            notify.enqueue([copy.job_id]) if copy.job_id else notify.enqueue_budget([copy.budget_alert_id])
    if copy is None:
        messages.info(request, "That delivery was resent already, or is not given up: nothing sent.")
    else:
        messages.success(request, f"Resending to {webhook.name} (same event id).")
    return _back_from_resend(request, workspace, webhook)


def _back_from_resend(request: HttpRequest, workspace: Workspace, webhook: Webhook) -> HttpResponse:
    # A fixed choice of pages, not a URL from the form: no redirect elsewhere.
    back = request.POST.get("back")
    if back in ("all", "given_up"):
        url = reverse("webhook_deliveries", args=[workspace.pk, webhook.pk])
        return redirect(url + ("?given_up=1" if back == "given_up" else ""))
    return redirect("notifications", ws=workspace.pk)


@login_required
@require_GET
def webhook_deliveries(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    """All of a webhook's deliveries, newest first in keyset pages; "given up" lists those Resend can send."""
    workspace, webhook = _webhook(request, ws, pk)
    given_up = request.GET.get("given_up") == "1"
    before = request.GET.get("before", "")
    before_id = int(before) if before.isascii() and before.isdigit() and len(before) <= 18 else None  # else: page 1
    rows, next_before = notify.deliveries_page(webhook, before=before_id, given_up=given_up)
    next_query = None
    if next_before is not None:
        params = request.GET.copy()
        params["before"] = next_before
        next_query = params.urlencode()
    return render(request, "portal/webhook_deliveries.html", {
        "workspace": workspace, "webhook": webhook, "deliveries": rows, "given_up": given_up, "tab": "notifications",
        "next_query": next_query, "first_page": before_id is None, "back": "given_up" if given_up else "all",
    })


@login_required
@require_POST
def webhook_delete(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    workspace, webhook = _webhook(request, ws, pk)
    with transaction.atomic():
        record = _webhook_record(webhook)
        webhook.delete()
        audit.record(request.user, AuditEvent.CHANGED, workspace=workspace, event="webhook-deleted", webhook=record)
    messages.success(request, f"Webhook {record['name']} deleted.")
    return redirect("notifications", ws=workspace.pk)


@login_required
@require_POST
def webhook_test(request: HttpRequest, ws: int, pk: int) -> HttpResponse:
    """POST {"event": "test"} to the webhook now and show the answer in place (waits up to notify.TIMEOUT)."""
    _workspace, webhook = _webhook(request, ws, pk)
    answer = notify.send_test(webhook)
    if request.htmx:
        return render(request, "portal/_webhook_test.html", {"webhook": webhook, "answer": answer})
    (messages.success if answer.ok else messages.error)(request, f"Test of {webhook.name}: {answer}.")
    return redirect("notifications", ws=webhook.workspace_id)


# --- API tokens ---------------------------------------------------------------------------------------------


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The caller's tokens and the form that creates one (Post/Redirect/Get: reloading the page after a create
    creates nothing). A new token is shown once, on the page the create redirects to; never stored in plaintext."""
    form = TokenForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        token, raw = apitokens.create_token(request.user, data["name"], workspace=data["workspace"],
                                            read_only=data["read_only"], expires_in_days=data["expiry"])
        apitokens.record(request.user, token, "created")
        # Sealed, because session data is only signed: its row in the database (or a signed cookie) would
        # otherwise hold the token in the clear until the redirect's GET takes it out.
        request.session[NEW_TOKEN_SESSION_KEY] = secretbox.seal({"token": raw})
        return redirect("api_tokens")
    new_token = None
    if request.method == "GET":
        new_token = secretbox.unseal(request.session.pop(NEW_TOKEN_SESSION_KEY, "")).get("token")
    tokens = request.user.api_tokens.select_related("workspace")
    return render(request, "portal/api.html", {"form": form, "tokens": tokens, "new_token": new_token})


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token, revoked = apitokens.revoke(request.user, pk)
    if token is None:  # someone else's token is as unknown as one that never was: its id tells nothing
        raise Http404("No such token.")
    if revoked:
        messages.success(request, f"Token {token.name} revoked.")
    else:
        messages.info(request, f"Token {token.name} was already revoked.")
    return redirect("api_tokens")


# --- job templates ------------------------------------------------------------------------------------------


@login_required
@require_GET
def template_list(request: HttpRequest) -> HttpResponse:
    workspace = _current_workspace(request)
    rows = templates_lib.templates_in(workspace) if workspace else []
    can_create = bool(workspace and access.can(request.user, "create", workspace=workspace))
    return render(request, "portal/templates.html", {"workspace": workspace, "rows": rows, "can_create": can_create})


@login_required
@require_GET
def template_detail(request: HttpRequest, pk: int) -> HttpResponse:
    template = access.get_template(request.user, pk)
    _show_workspace(request, template.workspace)  # the template's workspace, whichever one is chosen
    is_admin = access.can(request.user, "manage", workspace=template.workspace)
    versions = list(template.versions.select_related("created_by"))
    current = templates_lib.version_of(template) if versions else None
    return render(request, "portal/template_detail.html", {
        "template": template, "versions": versions, "current": current, "is_admin": is_admin,
        "can_create": access.can(request.user, "create", workspace=template.workspace),
        "lock_form": LockForm(initial={"locked": template.locked}),
        "locked_labels": [templates_lib.LOCKABLE[p][0] for p in template.locked if p in templates_lib.LOCKABLE],
        "started_jobs": templates_lib.jobs_started_from(template) if is_admin else 0,  # what a delete would free
        "current_json": json.dumps(current.sections, indent=2, ensure_ascii=False) if current else "",
    })


@login_required
@require_http_methods(["GET", "POST"])
def template_save(request: HttpRequest) -> HttpResponse:
    """Save a job's configuration (`?job=<id>`) as a new template or as the next version of one."""
    job = access.get_job(request.user, _int(request.GET.get("job") or request.POST.get("job")), "view")
    access.require(request.user, "create", workspace=job.workspace)
    _show_workspace(request, job.workspace)  # the template is saved in the job's workspace: the top bar says so
    form = TemplateSaveForm(request.POST or None, initial={"name": job.display_name[:100]})
    if request.method == "POST" and form.is_valid():
        try:
            version = templates_lib.save(job.workspace, request.user, form.cleaned_data["name"],
                                         templates_lib.sections_of_job(job),
                                         description=form.cleaned_data["description"],
                                         note=form.cleaned_data["note"], source=job)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        except PermissionDenied as exc:
            form.add_error("name", str(exc))
        else:
            if version.unchanged:
                messages.info(request, templates_lib.unchanged_message(version))
            else:
                messages.success(request, f"Saved as {version}.")
            return redirect("template_detail", pk=version.template_id)
    return render(request, "portal/template_save.html", {"form": form, "job": job})


def _posted_workspace(request: HttpRequest) -> Workspace:
    """The workspace a posted wizard belongs to, from the hidden fields the wizard page carries."""
    posted = request.POST
    if posted.get("_template"):
        return access.get_template(request.user, _int(posted["_template"])).workspace
    if posted.get("_clone") or posted.get("_edit"):
        return access.get_job(request.user, _int(posted.get("_clone") or posted.get("_edit"))).workspace
    if posted.get("_workspace"):
        return access.get_workspace(request.user, _int(posted["_workspace"]))
    workspace = _current_workspace(request)
    if workspace is None:
        raise PermissionDenied("You are not a member of any workspace.")
    return workspace


@login_required
@require_POST
def template_from_wizard(request: HttpRequest) -> HttpResponse:
    """"Save as template" on the wizard page: the posted wizard's content becomes a template version."""
    from jobs.forms import wizard as glue

    workspace = _posted_workspace(request)
    access.require(request.user, "create", workspace=workspace)
    catalog = glue.Catalog()  # saving needs no instance types: skip the backend call
    wizard = glue.Wizard(request.POST, catalog=catalog, context=glue.context_for(workspace, catalog), show=set())
    form = TemplateSaveForm({"name": request.POST.get("_template_name", ""),
                             "description": request.POST.get("_template_description", "")})
    if form.is_valid():
        try:
            version = templates_lib.save(workspace, request.user, form.cleaned_data["name"], wizard.sections,
                                         description=form.cleaned_data["description"])
        except ValidationError as exc:
            form.add_error("name", " ".join(m for ms in exc.message_dict.values() for m in ms))
        except PermissionDenied as exc:
            form.add_error("name", str(exc))
        else:
            # Back to the wizard, started from what was just saved: the same data, and a reload saves nothing.
            secrets = wizard.secrets()
            typed = [label for key, label in (("registry_password", "the registry password"),
                                              ("RayRedisPassword", "RayRedisPassword")) if key in secrets]
            typed += [f"the value of {k.removeprefix(spec.SECRET_ENV_PREFIX)}" for k in secrets
                      if k.startswith(spec.SECRET_ENV_PREFIX)]
            again = f" Type {' and '.join(typed)} again: templates never keep secrets." if typed else ""
            said = templates_lib.unchanged_message(version) if version.unchanged else f"Saved as template {version}."
            (messages.info if version.unchanged else messages.success)(
                request, f"{said} You are back in the wizard, now started from it.{again}")
            return redirect(f"{reverse('job_create')}?template={version.template_id}&version={version.number}")
    # Keep the wizard's data (never its secrets) so fixing the name is one more click. glue.mask drops the
    # registry password and the value of every variable ticked Secret.
    safe = glue.mask({k: request.POST.get(k) for k in request.POST})
    carried = [(k, templates_lib.strip_advanced(v) if k == "resources-advanced" else v)
               for k, values in request.POST.lists() for v in values
               if k in safe and k not in ("csrfmiddlewaretoken", "_template_name", "_template_description")]
    _show_workspace(request, workspace)
    return render(request, "portal/template_from_wizard.html",
                  {"form": form, "carried": carried, "workspace": workspace}, status=400)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0  # no such row: the lookup answers 404


@login_required
@require_POST
def template_locks(request: HttpRequest, pk: int) -> HttpResponse:
    template = access.get_template(request.user, pk, "manage")
    form = LockForm(request.POST)
    if form.is_valid():
        templates_lib.set_locks(template, request.user, form.cleaned_data["locked"])
        messages.success(request, "Locked fields saved.")
    else:
        messages.error(request, "Unknown field: " + "; ".join(form.errors.get("locked", [])))
    return redirect("template_detail", pk=template.pk)


@login_required
@require_POST
def template_default(request: HttpRequest, pk: int) -> HttpResponse:
    template = access.get_template(request.user, pk, "manage")
    form = DefaultVersionForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError({"default_version": "Enter a version number."})
        templates_lib.set_default(template, request.user, form.cleaned_data["default_version"])
        messages.success(request, "Default version saved.")
    except ValidationError as exc:
        messages.error(request, " ".join(m for ms in exc.message_dict.values() for m in ms))
    return redirect("template_detail", pk=template.pk)


@login_required
@require_POST
def template_delete(request: HttpRequest, pk: int) -> HttpResponse:
    template = access.get_template(request.user, pk, "manage")
    jobs = templates_lib.delete(template, request.user)
    messages.success(request, templates_lib.deleted_message(template, jobs))
    return redirect("template_list")


# --- import and export --------------------------------------------------------------------------------------


def import_prefill(body: dict, workspace: Workspace, notes: list[export.ImportNote]) -> dict[str, Any]:
    """The wizard data of an imported body and every note about it, labelled as the wizard labels its fields."""
    # The password cannot travel through the session or the page; the wizard asks for it again. The console's own
    # submission tag (a GetJob of a console job) is dropped unsaid, as a clone drops it: the new job gets its own.
    clean = tags.without_reserved(spec.strip_secrets(body))
    hints = export.import_hints(clean, official_image_addresses(workspace.region))
    # The wizard's context (with its cached instance catalog): without the instance types, a GPU cap reads as
    # "GPU count unknown" for a body the wizard and the API accept.
    problems = spec.validate(clean, policies.context_for(workspace, hints=hints))
    sections, found = export.to_wizard(clean, problems, hints)
    return {"workspace": workspace.pk, "sections": sections,
            "notes": import_note_rows(notes + _elsewhere(clean, workspace) + found, sections)}


def _elsewhere(body: dict, workspace: Workspace) -> list[export.ImportNote]:
    """A file from another DLC workspace: the wizard builds every job for this workspace's own (the API refuses
    such a body instead), so the note says the job will not go where the file says."""
    given = body.get("WorkspaceId")
    if not isinstance(given, str) or not given.strip() or given == workspace.dlc_workspace_id:
        return []
    own = f"this workspace's DLC workspace '{workspace.dlc_workspace_id}'" if workspace.dlc_workspace_id \
        else "this workspace's default DLC workspace"
    return [export.ImportNote("WorkspaceId", f"The job will be created in {own} ({workspace.name}), not in "
                              f"'{given}' that the file names.", "", given[:200], "dropped")]


@login_required
@require_http_methods(["GET", "POST"])
def job_import(request: HttpRequest) -> HttpResponse:
    """Paste or upload a CreateJob JSON or a params file; a readable one opens the wizard prefilled."""
    workspace = _current_workspace(request)
    if workspace is None:
        return render(request, "jobs/no_workspace.html", status=403)
    access.require(request.user, "create", workspace=workspace)
    form = ImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data.get("file")
        read = export.read_import(form.cleaned_data["text"], form.cleaned_data["format"],
                                  form.cleaned_data["job_type"], filename=upload.name if upload else "")
        for where, problems in read.errors.items():
            for problem in problems:
                form.add_error("file" if upload else "text", f"{where}: {problem}" if where else problem)
        if not read.errors:
            prefill = import_prefill(read.body, workspace, read.notes)
            # Not audited here: reading a body into the wizard changes nothing; the job it may become is audited
            # when it is created (its "created" event says imported_from, jobs.wizard.import_details).
            key = stash_prefill(request, {**prefill, "origin": f"import ({read.fmt})", "format": read.fmt})
            return redirect(reverse("job_create") + f"?prefill={key}")
    return render(request, "portal/import.html", {"form": form, "workspace": workspace})


# Imports wait in the session ({key: prefill}, the key in the wizard's URL and form) so a reload or Back opens the
# same import: until a job is made from it, for a day, and only the newest few (each holds a whole job's wizard
# data, and the database stores the session: import_prefill keeps no secret).
PREFILL_KEEP = 5
PREFILL_MAX_AGE = 24 * 3600
PREFILL_GONE = ("This import is no longer available (a job was made from it, it expired, or newer imports took its "
                "place): import the file again (Import, in the top bar).")


def _waiting(request: HttpRequest) -> dict[str, dict[str, Any]]:
    """The session's imports not yet expired, oldest first (anything else under the key, e.g. the one import an
    older version kept there, is not one)."""
    found = request.session.get(PREFILL_SESSION_KEY)
    now = time.time()
    return {key: data for key, data in (found.items() if isinstance(found, dict) else ())
            if isinstance(data, dict) and isinstance(data.get("at"), int | float)
            and now - data["at"] < PREFILL_MAX_AGE}


def stash_prefill(request: HttpRequest, prefill: dict[str, Any]) -> str:
    """Keep an import for the wizard; its key (for `?prefill=`)."""
    key = token_urlsafe(6)
    waiting = {**_waiting(request), key: {**prefill, "at": time.time()}}
    request.session[PREFILL_SESSION_KEY] = dict(list(waiting.items())[-PREFILL_KEEP:])
    return key


def take_prefill(request: HttpRequest, key: str) -> dict[str, Any] | None:
    """The import waiting in the session under this key (it stays there for reloads: see drop_prefill); None when
    there is none (unknown, expired, used, or another session's). The caller checks the workspace's permissions."""
    return _waiting(request).get(str(key)[:50])


def drop_prefill(request: HttpRequest, key: str) -> None:
    """Forget an import once a job is made from it, so a reload of its page says so rather than offer it again."""
    waiting = _waiting(request)
    if waiting.pop(str(key)[:50], None) is not None:
        request.session[PREFILL_SESSION_KEY] = waiting


EXPORTS = {
    "json": ("application/json", "json"),
    "python": ("text/x-python; charset=utf-8", "py"),
    "params": ("text/plain; charset=utf-8", "params"),
}


@login_required
@require_GET
def job_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    """Download a job as CreateJob JSON, Python SDK code or a params file; never with a secret."""
    job = access.get_job(request.user, pk)
    if fmt not in EXPORTS:
        return HttpResponse("Unknown export format.", status=404, content_type="text/plain")
    body = spec.strip_secrets(job.body)
    if fmt == "json":
        content = json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    elif fmt == "python":
        content = export.to_python_sdk(body, region=job.workspace.region)
    else:
        content = export.to_params_file(body)
        if content is None:  # the job page offers no link then; an old or typed URL gets a page to go back from
            return render(request, "portal/export_unavailable.html",
                          {"job": job, "problem": export.params_file_problem(body)}, status=409)
    content_type, ext = EXPORTS[fmt]
    response = HttpResponse(content, content_type=content_type)
    name = slugify(job.display_name) or f"job-{job.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.{ext}"'
    return response


# --- usage --------------------------------------------------------------------------------------------------


@login_required
@require_GET
def usage_report(request: HttpRequest, ws: int) -> HttpResponse:
    """GPU-, CPU- and node-hours of a workspace's jobs over a period, per owner, per job type and per job; every
    member may see it (a team's use of its shared resources is no secret within the team). `?format=csv`: a file
    of one line per job. An HTMX request gets the "Now" section alone (jobs.now), which refreshes itself."""
    from jobs import costs, now, usage
    from jobs.forms.wizard import instance_catalog
    from jobs.views import wants_partial

    workspace = access.get_workspace(request.user, ws)
    catalog = instance_catalog(workspace)
    if wants_partial(request):
        return render(request, "portal/_usage_now.html", {
            "workspace": workspace, "now": now.snapshot(workspace, catalog.by_type()), "catalog_error": catalog.error})
    _show_workspace(request, workspace)
    days = _int(request.GET.get("days"))
    days = days if days in usage.PERIODS else usage.DEFAULT_DAYS
    result = usage.report(workspace, days, specs=catalog.by_type())
    if request.GET.get("format") == "csv":
        # The byte-order mark makes Excel read the file as UTF-8 (without it, a currency such as ¥ or € and a
        # non-ASCII owner or a name synced from DLC come out garbled); other readers (pandas, utf-8-sig) skip it.
        response = HttpResponse("\ufeff" + usage.to_csv(result), content_type="text/csv; charset=utf-8")
        stamp = localtime(result.end).strftime("%Y%m%d")  # the console's date (DLC_TIME_ZONE), as the page says
        name = slugify(workspace.name) or f"workspace-{workspace.pk}"
        response["Content-Disposition"] = f'attachment; filename="{name}-usage-{days}d-{stamp}.csv"'
        return response
    return render(request, "portal/usage.html", {
        "workspace": workspace, "report": result, "periods": usage.PERIODS, "tab": "usage",
        "now": now.snapshot(workspace, catalog.by_type(), now=result.end),
        "catalog_error": catalog.error, "is_admin": access.can(request.user, "manage", workspace=workspace),
        # Fresh, as the report below it is: a figure up to a minute old beside it could show less spent this
        # month than the report's cost of the same jobs (the fresh figure is cached for the list and guardrail).
        "budget": costs.budget(workspace, result.end, fresh=True), "budget_alerts": budget_alerts.of_month(workspace),
    })
