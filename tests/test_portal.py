"""Workspace administration pages: settings, Test connection (against a real localdlc), members, guardrail
policy, the workspace switcher and the SSO settings switch."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.portal_forms import BINDING_FIELDS, SETTINGS_FIELDS
from tests import portal_fixtures as pf
from tests.support.threads import second_while_first_saves

ROOT = Path(__file__).resolve().parents[1]


def settings_data(workspace, **changes):
    data = {"name": workspace.name, "region": workspace.region, "endpoint": workspace.endpoint,
            "dlc_workspace_id": workspace.dlc_workspace_id, "credential_profile": workspace.credential_profile,
            "role_arn": workspace.role_arn}
    data.update(changes)
    return data


# --- settings -------------------------------------------------------------------------------------------


def superuser_client(team):
    """The workspace admin made a console superuser: only they may change endpoint and credentials."""
    team.users["admin"].is_superuser = True
    team.users["admin"].save()
    return pf.client_for(team.users["admin"])


def test_workspace_admins_cannot_rebind_their_workspace_only_superusers_can(team):
    """QA: an admin set "DLC workspace ID" to another team's DLC workspace, and the sync imported that team's
    jobs (command, config, logs) for the admin's viewers to read. Region, endpoint, DLC workspace and
    credentials pick which backend data a workspace sees: all of them are a superuser's to change."""
    admin = pf.client_for(team.users["admin"])
    answer = admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(
        team.alpha, name="Alpha team", region="cn-shanghai", dlc_workspace_id="beta", credential_profile="other-team",
        endpoint="evil.example:80", role_arn="acs:ram::123456789012:role/other-team"))
    assert answer.status_code == 302
    team.alpha.refresh_from_db()
    assert team.alpha.name == "Alpha team", "what is the admin's to change is saved"
    assert (team.alpha.region, team.alpha.dlc_workspace_id, team.alpha.credential_profile, team.alpha.role_arn,
            team.alpha.endpoint) == ("cn-hangzhou", "alpha", "", "", pf.DEAD_ENDPOINT)
    page = admin.get(f"/workspaces/{team.alpha.pk}/settings")
    form = page.context["form"]
    assert [name for name in SETTINGS_FIELDS if form.fields[name].disabled] == list(BINDING_FIELDS)
    assert "Only a console superuser can change this." in page.text
    assert "only a console superuser can change them" in page.text
    assert re.search(r'<input[^>]*name="dlc_workspace_id"[^>]*value="alpha"[^>]*disabled', page.text) or \
        re.search(r'<input[^>]*disabled[^>]*name="dlc_workspace_id"', page.text), "shown, read-only"


def test_admin_edits_settings_and_the_change_is_audited(team):
    from jobs.models import AuditEvent

    admin = superuser_client(team)
    page = admin.get(f"/workspaces/{team.alpha.pk}/settings")
    assert page.status_code == 200
    assert "alibabacloud_credentials" in page.text and "ALIBABA_CLOUD_CREDENTIALS_FILE" in page.text
    assert "access_key_secret" not in [f for f in page.context["form"].fields]
    answer = admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(
        team.alpha, region="cn-shanghai", credential_profile="team-a",
        role_arn="acs:ram::123456789012:role/dlc-console"))
    assert answer.status_code == 302
    team.alpha.refresh_from_db()
    assert (team.alpha.region, team.alpha.credential_profile) == ("cn-shanghai", "team-a")
    event = AuditEvent.objects.get(action="changed", workspace=team.alpha)
    assert event.actor_name == "admin"
    assert event.details["changes"]["region"] == {"from": "cn-hangzhou", "to": "cn-shanghai"}
    # QA: the credentials profile's name read like a secret to the audit's scrubber, which dropped it: a rebinding
    # to another team's profile alone left a "settings" event with no change in it.
    assert event.details["changes"]["credential_profile"] == {"from": "", "to": "team-a"}
    admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha, credential_profile="team-b"))
    event = AuditEvent.objects.filter(action="changed", workspace=team.alpha).latest("id")
    assert event.details["changes"] == {"credential_profile": {"from": "team-a", "to": "team-b"}}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("region", "Hangzhou!", "A region id"),
    ("endpoint", "https://pai-dlc.cn-hangzhou.aliyuncs.com", "without http://"),
    ("credential_profile", "team a", "Letters, digits"),
    ("role_arn", "arn:aws:iam::1:role/x", "A role ARN looks like acs:ram::<account-id>:role/<role-name>."),
    # The job's custom role's rule (jobs.spec), not a looser one of its own: ASCII digits, at most 16 of them.
    ("role_arn", "acs:ram::\u0661\u0662\u0663:role/x", "A role ARN looks like"),
    ("role_arn", "acs:ram::" + "1" * 17 + ":role/x", "at most 16 digits"),
    ("dlc_workspace_id", "ws/1", "Letters, digits"),
])
def test_bad_settings_are_refused_at_the_field(team, field, value, message):
    admin = superuser_client(team)
    answer = admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha, **{field: value}))
    assert answer.status_code == 200
    assert message in " ".join(answer.context["form"].errors[field])
    assert f'id="field-{field}"' in answer.text
    team.alpha.refresh_from_db()
    assert getattr(team.alpha, field) != value


def test_a_workspace_name_that_differs_only_in_case_is_refused_at_name(team):
    """QA: "alpha" was taken next to "Alpha" (Workspace.name is unique as written only)."""
    from django.db import IntegrityError, transaction

    from jobs.models import Workspace

    admin = superuser_client(team)
    answer = admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha, name="BETA"))
    assert answer.status_code == 200
    assert answer.context["form"].errors["name"] == [
        "The workspace 'Beta' has this name (names may not differ only in case)."]
    created = admin.post("/workspaces/new", {**settings_data(team.beta, name="alpha"), "backend": "local"})
    assert created.status_code == 200 and "workspace 'Alpha' has" in created.context["form"].errors["name"][0]
    assert admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha)).status_code == 302
    # The database holds the rule too (migration 0040; the twins saved before it were renamed there).
    with pytest.raises(IntegrityError), transaction.atomic():
        Workspace.objects.create(name="ALPHA", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="alpha2")
    assert sorted(Workspace.objects.values_list("name", flat=True)) == ["Alpha", "Beta"]


def test_a_workspace_admin_is_refused_a_taken_name_without_being_told_whose(team):
    """QA: renaming to "Beta" (taken) gave Django's "Workspace with this Name already exists."; to "beta", "There
    is a workspace named 'Beta'", naming another team's workspace to an admin who is not a superuser."""
    admin = pf.client_for(team.users["admin"])
    for name in ("Beta", "beta", "BETA"):
        answer = admin.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha, name=name))
        assert answer.status_code == 200, name
        assert answer.context["form"].errors["name"] == [
            "Another workspace has this name (names may not differ only in case)."], name
        assert "Beta" not in answer.text.replace(f'value="{name}"', ""), name
    team.alpha.refresh_from_db()
    assert team.alpha.name == "Alpha"


def test_a_workspace_created_twice_at_once_is_created_once_and_the_second_form_says_so(transactional_db):
    """QA: a superuser's double click on Create both passed the name check before either saved, and the second's
    insert broke the one-name rule: a 500. Refused at the name instead (and at the binding the first now has). The
    first waits at its save for the second (a bounded chance, not a sleep)."""
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, Workspace

    root = get_user_model().objects.create_superuser("root", password=None)
    data = {"name": "Gamma", "backend": "dlc", "region": "cn-beijing", "endpoint": "", "dlc_workspace_id": "ws-1",
            "credential_profile": "", "role_arn": ""}

    def create(client):  # signed in before: a sign-in's write would wait for the first save, and so miss the race
        return lambda: client.post("/workspaces/new", data)

    answers = second_while_first_saves(create(pf.client_for(root)), create(pf.client_for(root)), Workspace)
    # Which one saves is the database's: SQLite queues the second behind the first, PostgreSQL lets it save first.
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    errors = refused.context["form"].errors
    assert errors["name"] == ["The workspace 'Gamma' has this name (names may not differ only in case)."]
    assert "already bound to the console workspace 'Gamma'" in errors["dlc_workspace_id"][0]
    gamma = Workspace.objects.get(name="Gamma")
    assert list(Membership.objects.filter(workspace=gamma).values_list("user__username", "role")) == [
        ("root", "admin")]


def test_two_workspaces_created_at_once_with_names_differing_only_in_case_are_one_and_a_name_error(
        transactional_db):
    """QA: Create posts of `Gamma` and `gamma` at once both passed the name check (it ignores case) and both saved:
    the database held names unique as written only. It refuses the second now (migration 0040), and the form says
    what its check says, not a 500. The first waits at its save for the second (a bounded chance, not a sleep)."""
    from django.contrib.auth import get_user_model

    from jobs.models import Workspace

    root = get_user_model().objects.create_superuser("root", password=None)

    def create(client, name, bound):  # signed in before: a sign-in's write would wait for the first save
        return lambda: client.post("/workspaces/new", {
            "name": name, "backend": "dlc", "region": "cn-beijing", "endpoint": "", "dlc_workspace_id": bound,
            "credential_profile": "", "role_arn": ""})

    answers = second_while_first_saves(create(pf.client_for(root), "Gamma", "ws-1"),
                                       create(pf.client_for(root), "gamma", "ws-2"), Workspace)
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    [name] = Workspace.objects.values_list("name", flat=True)
    assert refused.context["form"].errors == {
        "name": [f"The workspace '{name}' has this name (names may not differ only in case)."]}


def test_the_migration_renames_case_twins_saved_before_so_names_are_unique_ignoring_case(transactional_db):
    """Migration 0040 adds the rule to the database; twins saved before it (by a race, or before the checks) would
    make that fail, so the later ones are renamed first: `Team (2)` (a schedule `team-2`, its name starts job names),
    the oldest keeping its name, per workspace for templates, schedules and webhooks."""
    from django.db import IntegrityError, connection, transaction
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("jobs", "0038_jobtag_created_at")], [("jobs", "0040_names_unique_ignoring_case")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        workspaces = old.get_model("jobs", "Workspace").objects
        alpha, *_ = [workspaces.create(name=name, dlc_workspace_id=name) for name in ("Team", "team", "TEAM (2)")]
        beta = workspaces.create(name="beta")
        long = "L" * 100
        for model, names in (("JobTemplate", ("base", "Base", long, long.lower())),
                             ("Schedule", ("team", "Team", "team-2")), ("Webhook", ("ops", "OPS", "Ops"))):
            rows = old.get_model("jobs", model).objects
            extra = {"Schedule": {"body": {}, "kind": "daily"}, "Webhook": {"sealed_url": "x"}}.get(model, {})
            for workspace in (alpha, beta):
                for name in names if workspace is alpha else names[:1]:
                    rows.create(workspace=workspace, name=name, **extra)
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps

        def names(model, workspace=None):
            rows = new.get_model("jobs", model).objects.order_by("pk")
            return list((rows.filter(workspace_id=workspace.pk) if workspace else rows).values_list("name", flat=True))

        assert names("Workspace") == ["Team", "team (3)", "TEAM (2)", "beta"]
        assert names("JobTemplate", alpha) == ["base", "Base (2)", long, long.lower()[:96] + " (2)"]
        assert names("Schedule", alpha) == ["team", "Team-3", "team-2"]
        assert names("Webhook", alpha) == ["ops", "OPS (2)", "Ops (3)"]
        assert [names(model, beta) for model in ("JobTemplate", "Schedule", "Webhook")] == [
            ["base"], ["team"], ["ops"]], "another workspace's names are its own"
        with pytest.raises(IntegrityError), transaction.atomic():
            new.get_model("jobs", "Webhook").objects.create(workspace_id=beta.pk, name="OPS", sealed_url="x")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def test_two_workspaces_renamed_to_one_name_at_once_keep_their_names_and_the_second_form_says_so(
        transactional_db):
    """QA: two admins renaming their workspaces to one name at once both passed the name check before either saved,
    and the second's update broke the one-name rule: a 500. Refused at the name instead; the other settings typed
    with it are shown again, the refused workspace keeps its name. The first waits at its save for the second."""
    from jobs.models import AuditEvent, Workspace

    team = pf.make_team()

    def rename(user, workspace):  # signed in before: a sign-in's write would wait for the first save
        client = pf.client_for(user)
        return lambda: client.post(f"/workspaces/{workspace.pk}/settings", settings_data(workspace, name="Shared"))

    answers = second_while_first_saves(rename(team.users["admin"], team.alpha),
                                       rename(team.users["other"], team.beta), Workspace)
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    assert refused.context["form"].errors["name"] == [
        "Another workspace has this name (names may not differ only in case)."]
    assert 'value="Shared"' in refused.text, "what was typed is kept for fixing"
    kept = Workspace.objects.get(pk=refused.context["workspace"].pk)
    assert kept.name in ("Alpha", "Beta")
    assert sorted(Workspace.objects.values_list("name", flat=True)) == sorted(["Shared", kept.name])
    assert not AuditEvent.objects.filter(workspace=kept, details__event="settings").exists()


def test_a_quota_name_is_at_most_128_characters_and_one_saved_longer_still_shows_and_keeps_saving(team):
    """QA: a 5,000-character quota name was accepted and written into the audit log. DLC's API never takes a quota's
    name and the reference gives no limit: the console bounds it at 128, as Alibaba Cloud bounds its resources'
    names. Refused at the field, by line and length, nothing saved; a name saved longer before the limit still
    shows, in the settings and the wizard, and the other settings still save beside it."""
    from jobs.models import AuditEvent, Workspace

    admin = pf.client_for(team.users["admin"])
    url, long = f"/workspaces/{team.alpha.pk}/settings", "N" * 5000
    answer = admin.post(url, settings_data(team.alpha, name="Alpha team",
                                           quotas=f"q1, general, ok\nq2, lingjun, {long}"))
    assert answer.status_code == 200
    assert answer.context["form"].errors["quotas"] == [
        "Line 2: the quota name is 5,000 characters long; at most 128 are allowed."]
    assert 'id="field-quotas"' in answer.text and "at most 128 characters" in answer.text
    team.alpha.refresh_from_db()
    assert (team.alpha.name, team.alpha.quotas) == ("Alpha", [])
    assert not AuditEvent.objects.filter(workspace=team.alpha).exists()
    assert admin.post(url, settings_data(team.alpha, quotas=f"q1, general, {'N' * 128}")).status_code == 302

    # Saved before the limit (or through the Django admin's JSON): shown whole, and kept as it is.
    Workspace.objects.filter(pk=team.alpha.pk).update(quotas=[
        {"id": "q2", "name": long, "resource_type": "lingjun", "general_computing_2_0": False}])
    assert long in admin.get(url).text and long in admin.get(f"/jobs/new?_workspace={team.alpha.pk}").text
    assert admin.post(url, settings_data(team.alpha, name="Alpha team", quotas=f"q2, lingjun, {long}")
                      ).status_code == 302
    team.alpha.refresh_from_db()
    assert team.alpha.name == "Alpha team" and team.alpha.quotas[0]["name"] == long
    for quotas in (f"q2, lingjun, {long}x", f"q2, lingjun, {long}\nq3, general, {long}"):  # changed, or another's
        refused = admin.post(url, settings_data(team.alpha, quotas=quotas))
        assert "at most 128 are allowed" in refused.context["form"].errors["quotas"][0], quotas


def test_settings_page_is_for_admins_only(team):
    assert pf.client_for(team.users["member"]).get(f"/workspaces/{team.alpha.pk}/settings").status_code == 403
    assert pf.client_for(team.users["other"]).get(f"/workspaces/{team.alpha.pk}/settings").status_code == 404


def test_the_administration_tabs_say_which_page_is_open_beyond_colour(team):
    """A11y QA: the open tab was marked by a class (its look) only: a screen reader heard eight like links, in a
    navigation landmark with no name beside the top bar's."""
    admin = pf.client_for(team.users["admin"])
    for path, tab in (("settings", "Settings"), ("members", "Members"), ("audit", "Audit log")):
        html = admin.get(f"/workspaces/{team.alpha.pk}/{path}").content.decode()
        nav = re.search(r'<nav class="subtabs" aria-label="Workspace administration">(.*?)</nav>', html, re.S)[1]
        assert re.findall(r'aria-current="page" class="current">([^<]+)</a>', nav) == [tab]
        assert nav.count("aria-current") == 1


# --- the binding: which DLC workspace on which backend -------------------------------------------------------


def create_data(**values):
    return {"name": "Gamma", "backend": "localdlc", "region": "cn-hangzhou", "endpoint": pf.DEAD_ENDPOINT,
            "dlc_workspace_id": "gamma", "credential_profile": "", "role_arn": "", **values}


def test_a_dlc_workspace_bound_to_another_console_workspace_is_refused_at_the_field(team):
    """QA: nothing stopped two console workspaces binding one DLC workspace; each then imports and shows the
    other's jobs. The same DLC workspace id on another backend (endpoint, or region on PAI-DLC) is another one."""
    from jobs.models import AuditEvent, Workspace

    root = superuser_client(team)
    answer = root.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha, dlc_workspace_id="beta"))
    assert answer.status_code == 200 and 'id="field-dlc_workspace_id"' in answer.text
    assert answer.context["form"].errors["dlc_workspace_id"] == [
        "DLC workspace 'beta' on this backend is already bound to the console workspace 'Beta': two console "
        "workspaces on one DLC workspace would each import and show the other's jobs."]
    created = root.post("/workspaces/new", create_data(dlc_workspace_id="alpha"))
    assert created.status_code == 200 and "already bound to the console workspace 'Alpha'" in \
        created.context["form"].errors["dlc_workspace_id"][0]
    assert not Workspace.objects.filter(name="Gamma").exists()
    # Blank is the default workspace of the credentials: bound once per backend and credentials.
    assert root.post("/workspaces/new", create_data(dlc_workspace_id="")).status_code == 302
    twin = root.post("/workspaces/new", create_data(name="Delta", dlc_workspace_id=""))
    assert "The default DLC workspace (no ID) of these credentials" in \
        twin.context["form"].errors["dlc_workspace_id"][0]
    assert root.post("/workspaces/new", create_data(name="Delta", dlc_workspace_id="",
                                                    credential_profile="delta")).status_code == 302
    # PAI-DLC: one region's endpoints (public, VPC) reach the same workspaces; another region has other ones.
    assert root.post("/workspaces/new", create_data(name="Hz", backend="dlc", endpoint="",
                                                    dlc_workspace_id="12345")).status_code == 302
    vpc = root.post("/workspaces/new", create_data(name="Hz VPC", backend="dlc", dlc_workspace_id="12345",
                                                   endpoint="pai-dlc-vpc.cn-hangzhou.aliyuncs.com"))
    assert "already bound to the console workspace 'Hz'" in vpc.context["form"].errors["dlc_workspace_id"][0]
    assert root.post("/workspaces/new", create_data(name="Sh", backend="dlc", endpoint="", region="cn-shanghai",
                                                    dlc_workspace_id="12345")).status_code == 302
    # Another localdlc (endpoint) has its own "beta"; the move is audited with the binding's old and new values.
    moved = root.post(f"/workspaces/{team.alpha.pk}/settings",
                      settings_data(team.alpha, dlc_workspace_id="beta", endpoint="127.0.0.1:10"))
    assert moved.status_code == 302
    event = AuditEvent.objects.filter(workspace=team.alpha, details__event="settings").get()
    assert event.details["changes"]["dlc_workspace_id"] == {"from": "alpha", "to": "beta"}
    assert event.details["changes"]["endpoint"] == {"from": pf.DEAD_ENDPOINT, "to": "127.0.0.1:10"}


def test_the_binding_error_names_the_other_workspace_to_superusers_only(team):
    from jobs.models import Workspace
    from jobs.portal_forms import binding_problem

    candidate = Workspace(name="Mine", backend=Workspace.BACKEND_LOCAL, endpoint=pf.DEAD_ENDPOINT,
                          dlc_workspace_id="beta")
    hidden = binding_problem(candidate, reveal=False)
    assert hidden == ("DLC workspace 'beta' on this backend is already bound to another console workspace: two "
                      "console workspaces on one DLC workspace would each import and show the other's jobs.")
    assert "'Beta'" in binding_problem(candidate, reveal=True)
    candidate.dlc_workspace_id = "gamma"
    assert binding_problem(candidate, reveal=True) is None


def test_a_binding_shared_before_the_check_does_not_block_other_settings(team):
    """Existing data may bind one DLC workspace twice: its admins still save their own settings; only a new
    binding is checked (as a kept name stays valid)."""
    from jobs.models import Workspace

    Workspace.objects.create(name="Alpha copy", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="alpha",
                             endpoint=pf.DEAD_ENDPOINT)
    admin = pf.client_for(team.users["admin"])
    assert admin.post(f"/workspaces/{team.alpha.pk}/settings",
                      settings_data(team.alpha, name="Alpha 2")).status_code == 302
    team.alpha.refresh_from_db()
    assert team.alpha.name == "Alpha 2"
    root = superuser_client(team)
    assert root.post(f"/workspaces/{team.alpha.pk}/settings", settings_data(team.alpha)).status_code == 302


def test_the_django_admin_refuses_a_bound_dlc_workspace_and_audits_a_rebinding(team):
    from django.contrib.auth import get_user_model

    from jobs.models import AuditEvent

    root = pf.client_for(get_user_model().objects.create_superuser("root", password=None))
    data = {"name": "Alpha", "backend": "localdlc", "region": "cn-hangzhou", "endpoint": pf.DEAD_ENDPOINT,
            "dlc_workspace_id": "beta", "credential_profile": "", "role_arn": "", "quotas": "[]",
            "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0", "memberships-MIN_NUM_FORMS": "0",
            "memberships-MAX_NUM_FORMS": "1000"}
    url = f"/admin/jobs/workspace/{team.alpha.pk}/change/"
    refused = root.post(url, data)
    assert refused.status_code == 200
    assert "already bound to the console workspace &#x27;Beta&#x27;" in refused.text
    assert root.post(url, {**data, "dlc_workspace_id": "alpha-2"}).status_code == 302
    team.alpha.refresh_from_db()
    assert team.alpha.dlc_workspace_id == "alpha-2"
    event = AuditEvent.objects.get(workspace=team.alpha, details__event="settings")
    assert event.actor_name == "root" and event.details["via"] == "admin"
    assert event.details["changes"] == {"dlc_workspace_id": {"from": "alpha", "to": "alpha-2"}}


def test_bootstrap_does_not_bind_localdlcs_local_workspace_twice(db):
    """`make run` bootstraps a "Local" workspace bound to localdlc's "local": renamed, it is not made again."""
    from django.core.management import call_command

    from jobs.models import Workspace

    call_command("bootstrap", stdout=open(os.devnull, "w"))
    Workspace.objects.filter(name="Local").update(name="Dev")
    call_command("bootstrap", stdout=open(os.devnull, "w"))
    assert list(Workspace.objects.values_list("name", "dlc_workspace_id")) == [("Dev", "local")]
    # Nor made beside another workspace named so but for case (the database refuses it: it was an IntegrityError).
    Workspace.objects.filter(name="Dev").update(name="LOCAL", dlc_workspace_id="other")
    said = io.StringIO()
    call_command("bootstrap", stdout=said)
    assert "workspace 'LOCAL' has the name 'Local' but for case" in said.getvalue()
    assert list(Workspace.objects.values_list("name", "dlc_workspace_id")) == [("LOCAL", "other")]


@pytest.fixture
def localdlc_credentials(localdlc, local_creds):
    """The test localdlc, its AccessKey pair in the console's credentials file (tests.support.pages)."""
    return localdlc


def test_test_connection_lists_instance_types_from_the_real_backend(team, localdlc_credentials):
    team.alpha.endpoint = localdlc_credentials.endpoint
    team.alpha.save()
    admin = pf.client_for(team.users["admin"])
    answer = admin.post(f"/workspaces/{team.alpha.pk}/test-connection", settings_data(team.alpha),
                        HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    assert 'data-ok="true"' in answer.text and "Connected." in answer.text
    assert "ecs." in answer.text
    assert "<html" not in answer.text, "an HTMX request gets the fragment only"


def test_test_connection_shows_the_backend_error(team, localdlc_credentials, tmp_path, settings):
    # Same backend, wrong secret: localdlc refuses the signature and the page says so.
    bad = tmp_path / "wrong.ini"
    bad.write_text(f"[localdlc]\ntype = access_key\naccess_key_id = {localdlc_credentials.access_key_id}\n"
                   "access_key_secret = not-the-secret\n")
    settings.LOCALDLC_CREDENTIALS_FILE = str(bad)
    admin = superuser_client(team)
    answer = admin.post(f"/workspaces/{team.alpha.pk}/test-connection",
                        settings_data(team.alpha, endpoint=localdlc_credentials.endpoint), HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    assert 'data-ok="false"' in answer.text and "Connection failed." in answer.text
    assert "Signature" in answer.text or "signature" in answer.text
    assert "not-the-secret" not in answer.text


def test_test_connection_redacts_a_credentials_failure_raised_before_the_sdk_call(team, monkeypatch):
    """A credentials failure outside an SDK call (building the client) is shown redacted, with its reason.

    A fake, because no real failure reaches this path with a secret in its text: the credentials library reads
    profiles and asks STS only when a call signs its request, inside jobs.dlc's own handling. What is faked is
    the SDK's client constructor (not our code) raising the library's own error for an STS answer that lacks a
    field, which quotes the answer, a temporary AccessKeySecret and SecurityToken included."""
    from alibabacloud_credentials.exceptions import CredentialException
    from alibabacloud_pai_dlc20201203.client import Client

    answer = ('{"RequestId": "R1", "Credentials": {"AccessKeyId": "STS.NUgYrLnoC", "AccessKeySecret": "s3cr3t+/Key=", '
              '"SecurityToken": "CAIS-t0ken-value", "Expiration": "2026-12-01T00:00:00Z"}}')

    def failing(self, config):
        raise CredentialException(f"error retrieving credentials from ram_role_arn result: {answer}")

    monkeypatch.setattr(Client, "__init__", failing)
    admin = pf.client_for(team.users["admin"])
    for headers in ({"HTTP_HX_REQUEST": "true"}, {}):
        page = admin.post(f"/workspaces/{team.alpha.pk}/test-connection", settings_data(team.alpha), **headers)
        assert page.status_code == 200 and 'data-ok="false"' in page.text
        assert "s3cr3t" not in page.text and "CAIS-t0ken" not in page.text
        assert "DLC credentials are not working for this workspace (Console.Credentials)" in page.text
        assert "error retrieving credentials" in page.text and "STS.NUgYrLnoC" in page.text, "still says what failed"


def test_test_connection_uses_unsaved_form_values_and_saves_nothing(team, localdlc_credentials):
    admin = superuser_client(team)
    answer = admin.post(f"/workspaces/{team.alpha.pk}/test-connection",
                        settings_data(team.alpha, endpoint=localdlc_credentials.endpoint), HTTP_HX_REQUEST="true")
    assert 'data-ok="true"' in answer.text
    team.alpha.refresh_from_db()
    assert team.alpha.endpoint == pf.DEAD_ENDPOINT
    refused = admin.post(f"/workspaces/{team.alpha.pk}/test-connection", HTTP_HX_REQUEST="true")
    assert 'data-ok="false"' in refused.text, "without form values the saved (dead) endpoint is tested"
    invalid = admin.post(f"/workspaces/{team.alpha.pk}/test-connection",
                         settings_data(team.alpha, endpoint="http://x"), HTTP_HX_REQUEST="true")
    assert "Fix the form first" in invalid.text


# --- members ----------------------------------------------------------------------------------------------


def test_admin_adds_changes_and_removes_members(team):
    from django.contrib.auth import get_user_model

    from jobs.models import AuditEvent, Membership

    newcomer = get_user_model().objects.create_user("newcomer", password=None)
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/members"
    assert admin.post(url, {"username": "newcomer", "role": "viewer"}).status_code == 302
    membership = Membership.objects.get(user=newcomer, workspace=team.alpha)
    assert membership.role == "viewer"
    admin.post(f"{url}/{membership.pk}", {"role": "member"})
    membership.refresh_from_db()
    assert membership.role == "member"
    admin.post(f"{url}/{membership.pk}", {"remove": "1"})
    assert not Membership.objects.filter(pk=membership.pk).exists()
    events = [e.details["event"] for e in AuditEvent.objects.filter(workspace=team.alpha).order_by("id")]
    assert events == ["member-added", "member-role", "member-removed"]


def test_adding_an_unknown_or_existing_user_is_an_error_at_the_field(team):
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/members"
    unknown = admin.post(url, {"username": "nobody", "role": "member"})
    assert unknown.status_code == 200
    assert "There is no active user named 'nobody'." in unknown.context["form"].errors["username"]
    existing = admin.post(url, {"username": "viewer", "role": "member"})
    assert "already a member" in existing.context["form"].errors["username"][0]


def test_a_member_added_twice_at_once_is_added_once_and_the_second_form_says_so(transactional_db):
    """QA: two posts of the Add form at once (a double click, two admins) both passed the "already a member" check
    before either saved, and the second's insert broke the one-membership rule: a 500. The first waits at its save
    for the second (a bounded chance, not a sleep)."""
    from jobs.models import Membership

    team = pf.make_team()
    newcomer = type(team.users["admin"]).objects.create_user("newcomer")
    admin, other = pf.client_for(team.users["admin"]), pf.client_for(team.users["admin"])

    def add(client):
        return lambda: client.post(f"/workspaces/{team.alpha.pk}/members", {"username": "newcomer", "role": "member"})

    answers = second_while_first_saves(add(admin), add(other), Membership)
    # Which one saves is the database's: SQLite queues the second behind the first, PostgreSQL lets it save first.
    saved, refused = sorted(answers, key=lambda answer: answer.status_code, reverse=True)
    assert (saved.status_code, refused.status_code) == (302, 200)
    assert refused.context["form"].errors["username"] == ["'newcomer' is already a member of this workspace."]
    assert Membership.objects.filter(user=newcomer, workspace=team.alpha).count() == 1


def test_change_role_with_the_role_unchanged_says_nothing_changed(team):
    """QA: Change role with the member's own role reloaded the page without a word (every other admin form says
    "Nothing changed."), nor audited anything."""
    from jobs.models import AuditEvent

    admin = pf.client_for(team.users["admin"])
    member = team.memberships["member"]
    answer = admin.post(f"/workspaces/{team.alpha.pk}/members/{member.pk}", {"role": member.role}, follow=True)
    assert "Nothing changed: member is member already." in answer.text
    assert not AuditEvent.objects.filter(workspace=team.alpha, details__event="member-role").exists()


def test_the_last_admin_cannot_be_removed_or_demoted(team):
    from jobs.models import Membership

    admin = pf.client_for(team.users["admin"])
    mine = team.memberships["admin"]
    url = f"/workspaces/{team.alpha.pk}/members/{mine.pk}"
    answer = admin.post(url, {"remove": "1"}, follow=True)
    assert "last admin" in answer.text
    admin.post(url, {"role": "member"})
    mine.refresh_from_db()
    assert mine.role == "admin" and Membership.objects.filter(pk=mine.pk).exists()
    # With a second admin, the first may step down (confirming it).
    Membership.objects.filter(pk=team.memberships["member"].pk).update(role="admin")
    admin.post(url, {"role": "member", "confirm": "1"})
    mine.refresh_from_db()
    assert mine.role == "member"


def test_two_admins_demoting_each_other_at_once_leave_the_workspace_one_admin(transactional_db):
    """QA: each admin's request locked only the membership it changed and counted the admins before the other's
    change was committed, so both saw two admins and both demotions went through: a workspace with no admin left (on
    PostgreSQL; SQLite's write transactions already queue). The first request waits at its save for the second (a
    bounded chance, not a sleep); with the workspace's membership changes in turn, the second finds the first done and
    keeps its sender, then the last admin."""
    from jobs.models import Membership

    team = pf.make_team()
    Membership.objects.filter(pk=team.memberships["member"].pk).update(role="admin")
    admin, other = pf.client_for(team.users["admin"]), pf.client_for(team.users["member"])

    def demote(client, membership):
        return lambda: client.post(f"/workspaces/{team.alpha.pk}/members/{membership.pk}", {"role": "member"})

    second_while_first_saves(demote(admin, team.memberships["member"]), demote(other, team.memberships["admin"]),
                             Membership)
    admins = Membership.objects.filter(workspace=team.alpha, role="admin")
    assert list(admins.values_list("user__username", flat=True)) == ["admin"]


def test_an_admin_confirms_stepping_down_and_lands_on_a_page_they_may_see(team):
    from jobs.models import Membership

    Membership.objects.filter(pk=team.memberships["member"].pk).update(role="admin")  # not the last admin
    admin = pf.client_for(team.users["admin"])
    mine = team.memberships["admin"]
    url = f"/workspaces/{team.alpha.pk}/members/{mine.pk}"
    # First the question, as a page (no JS needed): nothing changed yet.
    asked = admin.post(url, {"role": "viewer"})
    assert asked.status_code == 200 and "Make yourself viewer in" in asked.text
    assert 'name="confirm" value="1"' in asked.text and 'name="role" value="viewer"' in asked.text
    mine.refresh_from_db()
    assert mine.role == "admin"
    done = admin.post(url, {"role": "viewer", "confirm": "1"}, follow=True)
    assert done.status_code == 200 and done.redirect_chain[-1][0] == "/"
    assert "admin is now viewer." in done.text
    mine.refresh_from_db()
    assert mine.role == "viewer"
    # Removing oneself: asked, then done, landing on the workspace list with the message.
    Membership.objects.filter(pk=mine.pk).update(role="admin")
    asked = admin.post(url, {"remove": "1"})
    assert asked.status_code == 200 and "Remove yourself from" in asked.text
    assert Membership.objects.filter(pk=mine.pk).exists()
    done = admin.post(url, {"remove": "1", "confirm": "1"}, follow=True)
    assert done.status_code == 200 and done.redirect_chain[-1][0] == "/workspaces"
    assert "admin removed." in done.text and not Membership.objects.filter(pk=mine.pk).exists()
    # Someone else's role changes at once, as before.
    other = team.memberships["viewer"]
    assert pf.client_for(team.users["member"]).post(
        f"/workspaces/{team.alpha.pk}/members/{other.pk}", {"role": "member"}).status_code == 302


def owned_schedule(team, owner, name, workspace=None, **fields):
    from datetime import UTC, datetime, time, timedelta

    from jobs.models import Schedule

    values = {"kind": "daily", "at": time(2, 0), "next_run_at": datetime.now(UTC) + timedelta(hours=1), **fields}
    return Schedule.objects.create(workspace=workspace or team.alpha, owner=owner, name=name,
                                   body={**pf.BODY, "DisplayName": name}, **values)


def test_demoting_or_removing_a_member_says_which_of_their_schedules_can_no_longer_run(team):
    from jobs.models import Membership

    member = team.users["member"]
    owned_schedule(team, member, "bob-daily")
    owned_schedule(team, member, "bob-weekly")
    owned_schedule(team, member, "bob-old", enabled=False, next_run_at=None)  # disabled: nothing to skip
    owned_schedule(team, member, "bob-beta", workspace=team.beta)  # another workspace's: runs on
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/members/{team.memberships['member'].pk}"
    schedules_url = f"/workspaces/{team.alpha.pk}/schedules"
    # Before: the members page says what a demotion or removal would do to them.
    page = " ".join(admin.get(f"/workspaces/{team.alpha.pk}/members").text.split())  # the template wraps its lines
    assert "owns 2 enabled schedules (skipped if made viewer or removed)" in page
    assert "The runs of their 2 enabled schedules will be skipped." in page
    done = admin.post(url, {"role": "viewer"}, follow=True).text
    assert ("member is now viewer. Their 2 schedules (bob-daily, bob-weekly) can no longer run: their runs are "
            "skipped until an admin takes them over, or member or an admin disables or deletes them, or member may "
            "create jobs here again.") in done
    assert f'<a href="{schedules_url}">Schedules</a>' in done
    page = " ".join(admin.get(f"/workspaces/{team.alpha.pk}/members").text.split())
    assert "owns 2 enabled schedules (skipped: a viewer may not create jobs)" in page
    # Back to member: their runs may start again, so nothing to say.
    assert "member is now member." in admin.post(url, {"role": "member"}, follow=True).text
    assert "can no longer run" not in admin.post(url, {"role": "admin"}, follow=True).text
    Membership.objects.filter(pk=team.memberships["member"].pk).update(role="member")
    done = admin.post(url, {"remove": "1"}, follow=True).text
    assert "member removed. Their 2 schedules (bob-daily, bob-weekly) can no longer run" in done
    # One who owns none is told as before.
    viewer = team.memberships["viewer"]
    done = admin.post(f"/workspaces/{team.alpha.pk}/members/{viewer.pk}", {"remove": "1"}, follow=True).text
    assert "viewer removed." in done and "can no longer run" not in done


def test_an_admin_stepping_down_is_warned_of_their_schedules_before_confirming(team):
    from jobs.models import Membership

    Membership.objects.filter(pk=team.memberships["member"].pk).update(role="admin")  # not the last admin
    owned_schedule(team, team.users["admin"], "nightly")
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/members/{team.memberships['admin'].pk}"
    asked = " ".join(admin.post(url, {"role": "viewer"}).text.split())  # the template wraps its lines
    # A viewer still may stop their own schedules (schedules.can_stop): a removed member no longer.
    assert ("Your enabled schedule here (nightly) can then no longer run: its runs are skipped until an admin takes it "
            "over, or you or an admin disable or delete it: as viewer you may still do so on the") in asked
    assert f'href="/workspaces/{team.alpha.pk}/schedules"' in asked
    assert "Your enabled" not in admin.post(url, {"role": "member"}).text  # a member's runs still start
    asked = " ".join(admin.post(url, {"remove": "1"}).text.split())
    assert ("Your enabled schedule here (nightly) can then no longer run: its runs are skipped until an admin takes "
            "it over, disables or deletes it. To stop it yourself, disable or delete it first on the") in asked
    done = admin.post(url, {"remove": "1", "confirm": "1"}, follow=True).text
    # Removed, they can no longer open the Schedules page: the message names the schedule without the link.
    assert "admin removed. Their schedule nightly can no longer run: its runs are skipped" in done
    assert f'href="/workspaces/{team.alpha.pk}/schedules"' not in done


def test_members_of_another_workspace_cannot_be_touched(team):
    admin = pf.client_for(team.users["admin"])
    foreign = team.memberships["other"]
    answer = admin.post(f"/workspaces/{team.alpha.pk}/members/{foreign.pk}", {"remove": "1"})
    assert answer.status_code == 404
    foreign.refresh_from_db()
    assert foreign.role == "admin"


# --- policy -----------------------------------------------------------------------------------------------


def test_admin_saves_guardrails_and_they_read_back(team):
    from jobs import policies

    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/policy"
    answer = admin.post(url, {
        "allowed_sources": ["public", "quota"], "max_nodes": "4", "max_gpus": "8", "max_duration": "2",
        "max_duration_unit": "days", "allowed_image_prefixes": "registry.example/\ndsw-registry",
        "required_tag_keys": "cost-centre", "default_tags": "team=alpha",
    })
    assert answer.status_code == 302
    policy = policies.policy_for(team.alpha)
    assert policy.allowed_sources == frozenset({"public", "quota"})
    assert (policy.max_nodes, policy.max_gpus, policy.max_duration_minutes) == (4, 8, 2880)
    assert policy.allowed_image_prefixes == ("registry.example/", "dsw-registry")
    assert policy.required_tag_keys == ("cost-centre",) and policy.default_tags == {"team": "alpha"}
    page = admin.get(url)
    assert "At most 4 nodes per job." in page.text and "Required tags: cost-centre." in page.text
    assert page.context["form"].initial["max_duration"] == 2


@pytest.mark.parametrize(("data", "field"), [
    ({"allowed_sources": []}, "allowed_sources"),
    ({"max_nodes": "0"}, "max_nodes"),
    ({"max_gpus": "many"}, "max_gpus"),
    ({"default_tags": "no-equals-sign"}, "default_tags"),
    ({"default_tags": "a=1\na=2"}, "default_tags"),
    ({"required_tag_keys": "bad key!"}, "required_tag_keys"),
    ({"allowed_image_prefixes": "has space/"}, "allowed_image_prefixes"),
    ({"allowed_image_prefixes": "*"}, "allowed_image_prefixes"),
    ({"allowed_image_prefixes": "registry.example/team/*"}, "allowed_image_prefixes"),
    ({"allowed_image_prefixes": "../../"}, "allowed_image_prefixes"),
    ({"allowed_image_prefixes": "<script>"}, "allowed_image_prefixes"),
    ({"max_duration": "10000000", "max_duration_unit": "days"}, "max_duration"),
    ({"max_duration": "3651", "max_duration_unit": "days"}, "max_duration"),
    ({"max_duration": str(3650 * 24 + 1), "max_duration_unit": "hours"}, "max_duration"),
])
def test_bad_guardrails_are_refused_at_the_field(team, data, field):
    from jobs.models import WorkspacePolicy

    base = {"allowed_sources": ["public"], "max_duration_unit": "days"}
    answer = pf.client_for(team.users["admin"]).post(f"/workspaces/{team.alpha.pk}/policy", {**base, **data})
    assert answer.status_code == 200
    assert field in answer.context["form"].errors
    assert not WorkspacePolicy.objects.filter(workspace=team.alpha).exists()


def test_guardrails_hold_no_more_tags_than_a_job_may_carry_beside_the_consoles_own(team):
    """QA: 20 required tag keys were saved, while a job may carry 19 of its own (the console adds its submission tag):
    every job of the workspace was then refused, by the wizard and the API alike. Said at the field, in the job's own
    words; 19 are saved."""
    from jobs import policies

    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/policy"
    base = {"allowed_sources": ["public"], "max_duration_unit": "days"}
    keys = [f"k{i}" for i in range(20)]
    errors = admin.post(url, {**base, "required_tag_keys": "\n".join(keys)}).context["form"].errors
    assert errors["required_tag_keys"] == ["At most 19 tags are allowed."]
    errors = admin.post(url, {**base, "default_tags": "\n".join(f"{k}=v" for k in keys)}).context["form"].errors
    assert errors["default_tags"] == ["At most 19 tags are allowed."]
    assert admin.post(url, {**base, "required_tag_keys": "\n".join(keys[:19])}).status_code == 302
    assert policies.policy_for(team.alpha).required_tag_keys == tuple(keys[:19])


def test_guardrail_messages_say_how_prefixes_and_the_duration_cap_work(team):
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/policy"
    base = {"allowed_sources": ["public"], "max_duration_unit": "days"}
    errors = admin.post(url, {**base, "allowed_image_prefixes": "*"}).context["form"].errors
    assert "no wildcards; a prefix matches images from their start" in errors["allowed_image_prefixes"][0]
    errors = admin.post(url, {**base, "max_duration": "10000000"}).context["form"].errors
    assert errors["max_duration"][0].startswith("At most 3650 days")
    answer = admin.post(url, {**base, "max_duration": "3650", "allowed_image_prefixes": "localhost:5000/team/"})
    assert answer.status_code == 302


# --- switcher and navigation -----------------------------------------------------------------------------


def test_workspace_switcher_lists_only_my_workspaces_and_switches(team):
    from jobs.models import Membership

    member = team.users["member"]
    Membership.objects.create(user=member, workspace=team.beta, role="viewer")
    client = pf.client_for(member)
    page = client.get("/")
    assert 'id="workspace-switcher"' in page.text
    assert ">Alpha</option>" in page.text and ">Beta</option>" in page.text
    client.post("/workspace", {"workspace": team.beta.pk})
    assert client.get("/").context["nav_workspace"] == team.beta
    # Someone else's workspace cannot be switched to.
    outsider = pf.client_for(team.users["viewer"])
    assert outsider.post("/workspace", {"workspace": team.beta.pk}).status_code == 404
    assert ">Beta</option>" not in outsider.get("/").text


def top_nav(html: str) -> str:
    import re

    return re.search(r"<nav>(.*?)</nav>", html, re.S).group(1)


@pytest.mark.parametrize(("role", "offered"), [("viewer", False), ("member", True), ("admin", True)])
def test_nav_offers_create_job_and_import_only_to_who_may_create(team, role, offered):
    client = pf.client_for(team.users[role])
    nav = top_nav(client.get("/templates").text)
    assert ('href="/jobs/new">Create job</a>' in nav) is offered
    assert ('href="/jobs/import">Import</a>' in nav) is offered
    assert 'href="/templates">Templates</a>' in nav and 'href="/account/api">API</a>' in nav
    # What the nav offers is what the pages allow.
    assert (client.get("/jobs/import").status_code == 200) is offered


def test_a_job_page_shows_the_jobs_workspace_and_leaves_the_choice_alone(team):
    import re

    from jobs.models import Membership

    member, alpha, beta = team.users["member"], team.alpha, team.beta  # a member of Alpha...
    Membership.objects.create(user=member, workspace=beta, role="viewer")  # ... and a viewer of Beta
    client = pf.client_for(member)
    client.post("/workspace", {"workspace": beta.pk})

    page = client.get(f"/jobs/{team.job.pk}")  # a job of Alpha
    assert page.status_code == 200 and page.context["nav_workspace"] == alpha
    assert re.search(rf'<option value="{alpha.pk}" selected>Alpha</option>', page.text)
    assert re.search(rf'<option value="{beta.pk}">Beta</option>', page.text), "Beta is not selected"
    nav = top_nav(page.text)
    # Create job acts in the workspace shown (the member may create in Alpha)...
    assert f'href="/jobs/new?_workspace={alpha.pk}">Create job</a>' in nav
    assert client.get(f"/jobs/new?_workspace={alpha.pk}").context["workspace"] == alpha
    # ... Import in the chosen one, where this user is a viewer.
    assert "Import" not in nav
    assert client.session["workspace_id"] == beta.pk, "looking at a job chose nothing"

    listing = client.get("/")
    assert listing.context["nav_workspace"] == beta
    assert re.search(rf'<option value="{beta.pk}" selected>Beta</option>', listing.text)
    assert "Create job" not in listing.text

    # The other way round: a viewer of Alpha choosing Beta, where they are a member.
    viewer = team.users["viewer"]
    Membership.objects.create(user=viewer, workspace=beta, role="member")
    client = pf.client_for(viewer)
    client.post("/workspace", {"workspace": beta.pk})
    nav = top_nav(client.get(f"/jobs/{team.job.pk}").text)
    assert "Create job" not in nav and 'href="/jobs/import">Import</a>' in nav
    assert 'href="/jobs/new">Create job</a>' in top_nav(client.get("/").text)


def test_pages_about_one_job_or_template_show_its_workspace_in_the_top_bar(team):
    """The wizard started from a job (clone, edit and resubmit) or a template, "Save as template" and a template's
    page are about something in Alpha: the switcher shows Alpha although Beta is chosen, and chooses nothing."""
    import re

    from jobs.models import Membership

    member, alpha, beta = team.users["member"], team.alpha, team.beta
    Membership.objects.create(user=member, workspace=beta, role="viewer")
    failed = pf.make_job(alpha, member, "failed", status="SubmitFailed", dlc_job_id="", pods=[])
    client = pf.client_for(member)
    client.post("/workspace", {"workspace": beta.pk})

    pages = {
        "clone": client.get(f"/jobs/new?clone={team.job.pk}"),
        "edit and resubmit": client.get(f"/jobs/new?edit={failed.pk}"),
        "wizard from a template": client.get(f"/jobs/new?template={team.template.pk}"),
        "save as template": client.get(f"/templates/save?job={team.job.pk}"),
        "template page": client.get(f"/templates/{team.template.pk}"),
        # The wizard's "Save as template" with no name: the page that asks for one.
        "save from the wizard": client.post("/templates/from-wizard", {"_clone": team.job.pk}),
    }
    for name, page in pages.items():
        assert page.status_code in (200, 400), name
        assert re.search(rf'<option value="{alpha.pk}" selected>Alpha</option>', page.text), name
        assert re.search(rf'<option value="{beta.pk}">Beta</option>', page.text), f"{name}: Beta is selected"
    assert pages["save from the wizard"].status_code == 400
    assert client.session["workspace_id"] == beta.pk, "looking chose nothing"
    assert client.get("/").context["nav_workspace"] == beta


def test_admin_link_only_for_admins(team):
    assert "Workspace settings" in pf.client_for(team.users["admin"]).get("/").text
    assert "Workspace settings" not in pf.client_for(team.users["member"]).get("/").text


def test_superuser_creates_a_workspace_and_becomes_its_admin(team):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, Workspace

    root = get_user_model().objects.create_superuser("root", password=None)
    answer = pf.client_for(root).post("/workspaces/new", {
        "name": "Gamma", "backend": "dlc", "region": "cn-beijing", "endpoint": "", "dlc_workspace_id": "ws-1",
        "credential_profile": "", "role_arn": ""})
    assert answer.status_code == 302
    gamma = Workspace.objects.get(name="Gamma")
    assert Membership.objects.get(workspace=gamma, user=root).role == "admin"
    assert pf.client_for(team.users["admin"]).get("/workspaces/new").status_code == 403


# --- SSO ----------------------------------------------------------------------------------------------------


def test_remote_user_switch_turns_on_the_proxy_header_middleware():
    env = {**os.environ, "DLC_REMOTE_USER": "1", "DLC_REMOTE_USER_HEADER": "X-Auth-User"}
    code = ("from django.conf import settings; print(settings.MIDDLEWARE); print(settings.AUTHENTICATION_BACKENDS)")
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    assert "jobs.sso.ProxyRemoteUserMiddleware" in out and "RemoteUserBackend" in out
    plain = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT,
                           env={k: v for k, v in os.environ.items() if k != "DLC_REMOTE_USER"},
                           capture_output=True, text=True, check=True).stdout
    assert "ProxyRemoteUserMiddleware" not in plain


@pytest.fixture(name="sso")
def fixture_sso(settings):
    """The settings DLC_REMOTE_USER=1 makes, with the user name in X-Auth-User."""
    settings.DLC_REMOTE_USER_HEADER = "X-Auth-User"
    settings.MIDDLEWARE = [*settings.MIDDLEWARE[:settings.MIDDLEWARE.index(
        "django.contrib.auth.middleware.AuthenticationMiddleware") + 1], "jobs.sso.ProxyRemoteUserMiddleware",
        *settings.MIDDLEWARE[settings.MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1:]]
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.RemoteUserBackend",
                                        "django.contrib.auth.backends.ModelBackend"]


def test_proxy_header_signs_the_user_in(team, sso):
    client = pf.client_for()
    assert client.get("/").status_code == 302
    page = client.get("/", HTTP_X_AUTH_USER="member")
    assert page.status_code == 200 and page.context["user"].username == "member"
    assert "Alpha" in page.text


def signed_in_as(client, name: str) -> str | None:
    """Who a request with the proxy's header `name` is signed in as (None: nobody, the sign-in page)."""
    page = client.get("/", HTTP_X_AUTH_USER=name)
    return page.context["user"].username if page.status_code == 200 else None


def test_proxy_user_names_are_matched_ignoring_case_and_a_new_user_keeps_the_first_spelling(team, sso):
    """QA: with SSO, a proxy passing `Member` (typed so at the identity provider, which ignores case) made a second
    user beside `member`, with no workspace, jobs or tokens; `Carol` then `carol`, two new users. One user each now,
    matched ignoring case, made with the first spelling seen."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    count = users.count()
    client = pf.client_for()
    page = client.get("/", HTTP_X_AUTH_USER="Member")
    assert page.status_code == 200 and page.context["user"].pk == team.users["member"].pk
    assert "Alpha" in page.text
    assert signed_in_as(client, "MEMBER") == "member", "the same session goes on"
    assert signed_in_as(pf.client_for(), "Carol") == "Carol"
    assert signed_in_as(pf.client_for(), "carol") == "Carol"
    assert users.count() == count + 1
    # An admin adding them by name is not told there is no such user either.
    admin = pf.client_for(team.users["admin"])
    added = admin.post(f"/workspaces/{team.alpha.pk}/members", {"username": "CAROL", "role": "viewer"})
    assert added.status_code == 302
    assert team.alpha.memberships.filter(user__username="Carol", role="viewer").exists()


def test_users_made_twice_before_case_matching_keep_signing_in_and_a_deactivated_one_is_not_made_anew(team, sso):
    """Users made twice before names were matched ignoring case each keep signing in under their own spelling; a third
    spelling signs in as the older active one. A deactivated user's sign-in under another spelling is refused, not
    answered with a new, active user."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    older, newer = users.create_user("Dave"), users.create_user("dave")
    assert [signed_in_as(pf.client_for(), name) for name in ("Dave", "dave", "DAVE")] == ["Dave", "dave", "Dave"]
    admin, add = pf.client_for(team.users["admin"]), {"username": "DAVE", "role": "member"}
    assert admin.post(f"/workspaces/{team.alpha.pk}/members", add).context["form"].errors["username"] == [
        "Several users are named 'DAVE' but for case: type the name exactly."]
    users.filter(pk=older.pk).update(is_active=False)
    assert signed_in_as(pf.client_for(), "DAVE") == "dave"
    assert admin.post(f"/workspaces/{team.alpha.pk}/members", add).status_code == 302
    assert team.alpha.memberships.filter(user=newer).exists()
    users.filter(pk=team.users["viewer"].pk).update(is_active=False)
    count = users.count()
    assert signed_in_as(pf.client_for(), "Viewer") is None
    assert users.count() == count


def test_two_first_sign_ins_differing_only_in_case_at_once_make_one_user(transactional_db, sso):
    """QA: first sign-ins as `Erin` and `erin` at once (two tabs, two devices) both found no user and made one each:
    auth_user's names are unique as written only, and a rule on lower(username) would need a custom user model (and
    refuse the twins made before, which keep signing in). The look-up and the making hold one lock now (jobs.sso):
    the second waits for the first, then finds its user. The first waits at its insert for the second (a bounded
    chance, not a sleep: without the lock the second makes its own user meanwhile)."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects

    def sign_in(name: str):
        def run() -> str:
            client = pf.client_for()
            assert client.get("/", HTTP_X_AUTH_USER=name).status_code == 200
            return users.get(pk=client.session["_auth_user_id"]).username  # not page.context: shared across threads
        return run

    answers = second_while_first_saves(sign_in("Erin"), sign_in("erin"), get_user_model(),
                                       when=lambda user: user.pk is None)
    assert list(users.filter(username__iexact="erin").values_list("username", flat=True)) == ["Erin"]
    assert answers == ("Erin", "Erin")


# --- time zone ---------------------------------------------------------------------------------------------


def settings_time_zone(monkeypatch, **env: str) -> str:
    """TIME_ZONE as consoleapp/settings.py works it out from this environment (the module run afresh)."""
    import runpy

    for name in ("DLC_TIME_ZONE", "TIME_ZONE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "consoleapp" / "settings.py"))["TIME_ZONE"]


def test_the_time_zone_comes_from_dlc_time_zone_and_a_bad_one_is_refused_by_name(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    assert settings_time_zone(monkeypatch) == "UTC"
    assert settings_time_zone(monkeypatch, DLC_TIME_ZONE="Asia/Shanghai") == "Asia/Shanghai"
    with pytest.raises(ImproperlyConfigured, match=r"DLC_TIME_ZONE='Mars/Base' is not a time zone name"):
        settings_time_zone(monkeypatch, DLC_TIME_ZONE="Mars/Base")


def test_pages_name_the_time_zone_their_times_are_in(team, settings):
    import re
    from datetime import UTC, datetime

    from jobs import audit
    from jobs.models import Job

    created = datetime(2026, 11, 30, 14, 2, 11, tzinfo=UTC)
    Job.objects.filter(pk=team.job.pk).update(created_at=created)
    audit.record(team.users["admin"], "stopped", workspace=team.alpha, job=team.admin_job)
    admin = pf.client_for(team.users["admin"])

    def shown() -> tuple[str, str, str, str, str]:
        listing = admin.get("/").text
        row = re.search(rf'<tr id="job-{team.job.pk}".*?<time datetime="([^"]+)">([^<]+)</time>', listing, re.S)
        job_page = admin.get(f"/jobs/{team.job.pk}").text
        audit_page = admin.get(f"/workspaces/{team.alpha.pk}/audit").text
        return (re.search(r'<th id="created-header">([^<]+)</th>', listing).group(1), row.group(2),
                re.search(r'<span class="muted" id="time-zone">([^<]+)</span>', job_page).group(1),
                re.search(r'<th id="when-header">([^<]+)</th>', audit_page).group(1), row.group(1))

    header, when, job_note, audit_header, iso = shown()
    assert (header, when, job_note, audit_header) == ("Created (UTC)", "2026-11-30 14:02:11", "Times in UTC",
                                                      "When (UTC)")
    settings.TIME_ZONE = "Asia/Shanghai"
    header, when, job_note, audit_header, iso_there = shown()
    assert (header, when, job_note, audit_header) == ("Created (Asia/Shanghai)", "2026-11-30 22:02:11",
                                                      "Times in Asia/Shanghai", "When (Asia/Shanghai)")
    # The machine-readable value names the same instant, with its offset.
    assert datetime.fromisoformat(iso) == datetime.fromisoformat(iso_there) == created


def test_the_api_tokens_and_template_pages_name_the_time_zone_their_times_are_in(team, settings):
    import re
    from datetime import UTC, datetime, timedelta

    from jobs import apitokens
    from jobs.models import ApiToken, JobTemplateVersion

    at = datetime(2026, 11, 30, 14, 2, tzinfo=UTC)
    admin = team.users["admin"]
    used, _ = apitokens.create_token(admin, "ci")
    revoked, _ = apitokens.create_token(admin, "old")
    ApiToken.objects.filter(pk=used.pk).update(created_at=at, last_used_at=at, expires_at=at + timedelta(days=400))
    ApiToken.objects.filter(pk=revoked.pk).update(created_at=at, revoked_at=at)
    JobTemplateVersion.objects.filter(template=team.template).update(created_at=at)
    client = pf.client_for(admin)

    def shown() -> tuple[list[str], list[str], str, str, str]:
        tokens = client.get("/account/api").text
        headers = [re.search(rf'<th id="{name}-header">([^<]+)</th>', tokens).group(1)
                   for name in ("created", "expires", "last-used")]
        row = re.search(rf'<tr id="token-{used.pk}">(.*?)</tr>', tokens, re.S).group(1)
        cells = [cell.strip() for cell in re.findall(r"<td[^>]*>([^<]*)</td>", row)[3:6]]
        status = re.search(rf'<tr id="token-{revoked.pk}">.*?(revoked [^<]*)</td>', tokens, re.S).group(1)
        template = client.get(f"/templates/{team.template.pk}").text
        saved = re.search(r'<th id="saved-header">([^<]+)</th>', template).group(1)
        saved_at = re.search(r'<tr id="version-1">.*?<td>(\d{4}-[^<]+)</td>', template, re.S).group(1)
        return headers, cells, status.strip(), saved, saved_at

    assert shown() == (["Created (UTC)", "Expires (UTC)", "Last used (UTC)"],
                       ["2026-11-30 14:02", "2028-01-04 14:02", "2026-11-30 14:02"],
                       "revoked 2026-11-30 14:02 (UTC)", "Saved (UTC)", "2026-11-30 14:02")
    settings.TIME_ZONE = "Asia/Shanghai"
    assert shown() == (["Created (Asia/Shanghai)", "Expires (Asia/Shanghai)", "Last used (Asia/Shanghai)"],
                       ["2026-11-30 22:02", "2028-01-04 22:02", "2026-11-30 22:02"],
                       "revoked 2026-11-30 22:02 (Asia/Shanghai)", "Saved (Asia/Shanghai)", "2026-11-30 22:02")


# --- notifications ----------------------------------------------------------------------------------------


def test_the_add_webhook_form_starts_with_every_job_end_ticked(team):
    import re

    from jobs.notify_models import EVENTS

    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    boxes = re.findall(r'<input type="checkbox" name="events"[^>]*>', page)
    assert len(boxes) == len(EVENTS), boxes
    # Budget alerts are not a job end: asked for, not ticked by default.
    assert all((" checked" in box) == ('value="Budget"' not in box) for box in boxes), boxes


def test_edit_lands_on_the_webhook_form_with_its_name_focused_and_the_plain_page_stays_at_the_top(team):
    from jobs.models import Webhook

    webhook = Webhook(workspace=team.alpha, name="relay", events=["Failed"])
    webhook.set_url("http://10.1.2.3/hook")
    webhook.save()
    client = pf.client_for(team.users["admin"])
    page = client.get(f"/workspaces/{team.alpha.pk}/notifications").content.decode()
    edit_url = f"/workspaces/{team.alpha.pk}/notifications/{webhook.pk}"
    assert f'href="{edit_url}#id_name"' in page, "the link lands on (and focuses) the form's first field"
    assert "autofocus" not in page, "the list itself opens at its top"
    page = client.get(edit_url).content.decode()
    assert re.search(r'<input type="text" name="name" value="relay"[^>]* autofocus[ >]', page), page
    page = client.post(edit_url, {"name": "", "url": "", "events": ["Failed"]}).content.decode()
    assert re.search(r'<input type="text" name="name"[^>]* autofocus[ >]', page), "an error shows focused too"


def test_a_get_of_the_sign_out_address_shows_a_sign_out_button_not_a_blank_405(team):
    """QA: GET /accounts/logout/ answered an empty 405, which Chromium shows as a blank error page."""
    client = pf.client_for(team.users["member"])
    page = client.get("/accounts/logout/")
    assert page.status_code == 200 and 'id="sign-out-form"' in page.text and 'method="post"' in page.text
    assert client.get("/").status_code == 200, "a GET signs no one out"
    assert client.post("/accounts/logout/").status_code == 302
    gone = client.get("/accounts/logout/")
    assert gone.status_code == 302 and gone["Location"] == "/accounts/login/"


# --- the workspace a new session starts in --------------------------------------------------------------------


def sign_in(client, user) -> None:
    answer = client.post("/accounts/login/", {"username": user.username, "password": "pw-land-1"})
    assert answer.status_code == 302, "signed in"


def test_signing_in_again_lands_in_the_workspace_last_used_not_the_first_by_name(team):
    from jobs import audit
    from jobs.models import Membership, Workspace

    member, viewer = team.users["member"], team.users["viewer"]
    for user in (member, viewer):
        user.set_password("pw-land-1")
        user.save()
    Membership.objects.create(user=member, workspace=team.beta, role="viewer")
    # A workspace added since, first by name: what the new session fell back to.
    newest = Workspace.objects.create(name="Aaa new", backend=Workspace.BACKEND_LOCAL)
    Membership.objects.create(user=member, workspace=newest, role="member")
    Membership.objects.create(user=viewer, workspace=newest, role="viewer")

    browser = pf.client_for()
    sign_in(browser, member)
    assert browser.get("/").context["nav_workspace"] == newest, "nothing used yet: the first by name"
    browser.post("/workspace", {"workspace": team.beta.pk})
    browser.post("/accounts/logout/")
    sign_in(browser, member)
    assert browser.get("/").context["nav_workspace"] == team.beta, "this browser's last choice"

    # Another browser has no choice to remember: the workspace of the member's latest action.
    audit.record(member, "stopped", workspace=team.alpha, job=team.job)
    elsewhere = pf.client_for()
    sign_in(elsewhere, member)
    assert elsewhere.get("/").context["nav_workspace"] == team.alpha

    # The choice is the member's: another user signing in on the same browser starts as before.
    browser.post("/accounts/logout/")
    sign_in(browser, viewer)
    assert browser.get("/").context["nav_workspace"] == newest
    # A workspace the member has left is not chosen for them.
    browser.post("/accounts/logout/")
    Membership.objects.filter(user=member, workspace=team.beta).delete()
    sign_in(browser, member)
    assert browser.get("/").context["nav_workspace"] == team.alpha
