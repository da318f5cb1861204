"""The audit log: one writer (jobs.audit.record), hooked into create, clone, stop, import and changes;
append-only in the model, the admin and the UI; filtered by admins on the audit page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from jobs import audit, lifecycle
from jobs.models import AuditEvent, Job
from tests import portal_fixtures as pf


def test_record_keeps_who_what_and_drops_secret_looking_details(team):
    event = audit.record(team.users["member"], "created", workspace=team.alpha, job=team.job,
                         registry_password="hunter2", api_token="dlcc_x", nested={"AccessKeySecret": "s3", "ok": 1},
                         name="train-a")
    event.refresh_from_db()
    assert (event.actor_name, event.action, event.job_name) == ("member", "created", "train-a")
    assert event.details == {"nested": {"ok": 1}, "name": "train-a"}
    system = audit.record(None, "imported", workspace=team.alpha)
    assert system.actor_name == "system" and system.actor is None


def test_events_cannot_be_changed_or_deleted(team):
    event = audit.record(team.users["admin"], "changed", workspace=team.alpha, event="settings")
    event.details = {"event": "forged"}
    with pytest.raises(ValidationError):
        event.save()
    with pytest.raises(ValidationError):
        event.delete()
    with pytest.raises(ValidationError):
        AuditEvent.objects.filter(pk=event.pk).update(action="created")
    with pytest.raises(ValidationError):
        AuditEvent.objects.filter(pk=event.pk).delete()
    event.refresh_from_db()
    assert event.details == {"event": "settings"}


def test_deleting_a_job_keeps_its_events_and_name(team):
    event = audit.record(team.users["member"], "created", workspace=team.alpha, job=team.job)
    team.job.delete()
    event.refresh_from_db()
    assert event.job is None and event.job_name == "train-a"


def test_admin_site_is_read_only_for_the_audit_log(team):
    from django.contrib.auth import get_user_model

    event = audit.record(team.users["admin"], "changed", workspace=team.alpha, event="settings")
    root = get_user_model().objects.create_superuser("root", password=None)
    client = pf.client_for(root)
    page = client.get(f"/admin/jobs/auditevent/{event.pk}/change/")
    assert page.status_code == 200 and 'name="_save"' not in page.text
    assert client.post(f"/admin/jobs/auditevent/{event.pk}/change/", {"action": "created"}).status_code == 403
    assert client.post(f"/admin/jobs/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/jobs/auditevent/add/").status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).action == "changed"


# --- hooks --------------------------------------------------------------------------------------------------


def test_create_and_clone_are_recorded_with_the_source(team):
    from jobs.views import save_and_enqueue

    job = save_and_enqueue(workspace=team.alpha, owner=team.users["member"], body={**pf.BODY, "DisplayName": "n"})
    copy = save_and_enqueue(workspace=team.alpha, owner=team.users["member"],
                            body={**pf.BODY, "DisplayName": "n-copy"}, cloned_from=job)
    created = AuditEvent.objects.get(job=job)
    cloned = AuditEvent.objects.get(job=copy)
    assert (created.action, created.actor_name, created.source) == ("created", "member", None)
    assert (cloned.action, cloned.source) == ("cloned", job)


def test_wizard_submit_is_recorded(team):
    from jobs import spec
    from jobs.forms import wizard as glue

    s = spec.inverse(pf.BODY)
    s["basic"]["name"] = "via-wizard"
    answer = pf.client_for(team.users["member"]).post("/jobs/new", {**glue.sections_to_data(s),
                                                                    "_workspace": team.alpha.pk})
    assert answer.status_code == 302
    job = Job.objects.get(display_name="via-wizard")
    assert AuditEvent.objects.get(job=job).action == "created"


def test_stop_is_recorded_once_per_request(team):
    answer = pf.client_for(team.users["member"]).post(f"/jobs/{team.job.pk}/stop")
    assert answer.status_code == 302
    event = AuditEvent.objects.get(action="stopped")
    assert (event.job, event.actor_name, event.details["dlc_job_id"]) == (team.job, "member", "dlc-train-a")
    # A viewer's refused stop leaves no trace but a 403.
    assert pf.client_for(team.users["viewer"]).post(f"/jobs/{team.admin_job.pk}/stop").status_code == 403
    assert AuditEvent.objects.filter(action="stopped").count() == 1


def test_sync_import_of_a_job_created_elsewhere_is_recorded(team):
    item = {"JobId": "dlc-from-cli", "DisplayName": "made-with-dlc-cli", "JobType": "PyTorchJob",
            "Status": "Running", "GmtCreateTime": timezone.now().isoformat(),
            "JobSpecs": [{"Type": "Worker", "Image": "img", "PodCount": 1, "EcsSpec": "ecs.g6.large"}]}
    job = lifecycle.import_or_adopt(team.alpha, item)
    event = AuditEvent.objects.get(action="imported", job=job)
    assert event.actor_name == "system" and event.details["dlc_job_id"] == "dlc-from-cli"


# --- audit page ---------------------------------------------------------------------------------------------


def test_audit_page_filters_by_user_action_job_and_time(team):
    audit.record(team.users["member"], "created", workspace=team.alpha, job=team.job)
    audit.record(team.users["admin"], "stopped", workspace=team.alpha, job=team.admin_job)
    audit.record(team.users["other"], "created", workspace=team.beta, job=team.other_job)
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/audit"

    def names(**query):
        page = client.get(url, query)
        assert page.status_code == 200
        return [(e.actor_name, e.action) for e in page.context["rows"]]

    assert names() == [("admin", "stopped"), ("member", "created")], "beta's events stay in beta"
    assert names(user="member") == [("member", "created")]
    assert names(action="stopped") == [("admin", "stopped")]
    assert names(job="admin-job") == [("admin", "stopped")]
    assert names(job=str(team.job.pk)) == [("member", "created")]
    assert names(until=(timezone.now() - timedelta(days=1)).strftime("%Y-%m-%d %H:%M")) == []
    assert names(since=(timezone.now() - timedelta(days=1)).strftime("%Y-%m-%d %H:%M")) != []
    bad = client.get(url, {"since": "yesterday-ish"})
    assert "Enter a date" in bad.text
    # QA: with one filter refused, the others were dropped too, listing every event under "user: member".
    mixed = client.get(url, {"user": "member", "since": "bad", "until": "worse"})
    assert [(e.actor_name, e.action) for e in mixed.context["rows"]] == [("member", "created")]
    assert set(mixed.context["form"].errors) == {"since", "until"} and 'value="member"' in mixed.text


def test_a_long_job_name_is_cut_in_the_audit_log_as_in_the_job_list(team):
    """QA: a 200-character name widened the table to 2088 px and left Details one character wide. The name cell takes
    the job list's classes (td.name: wraps anywhere; cut at two lines, the whole name its title)."""
    long = "n" * 200
    team.job.display_name = long
    team.job.save()
    audit.record(team.users["member"], "created", workspace=team.alpha, job=team.job)
    # A deleted job's event keeps its name, without a link.
    AuditEvent.objects.create(workspace=team.alpha, actor_name="member", action="created", job_name=long[:150])
    html = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/audit").text
    assert f'<td class="name"><a href="/jobs/{team.job.pk}" title="{long}">{long}</a>' in html
    assert f'<td class="name"><span class="clamp" title="{long[:150]}">' in html
    with open("static/css/console.css") as css:
        assert "table.audit td.name a," in css.read()


def test_audit_page_pages_by_keyset_and_offers_no_way_to_edit(team):
    for i in range(55):
        audit.record(team.users["admin"], "changed", workspace=team.alpha, event=f"e{i}")
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/audit"
    first = client.get(url)
    assert len(first.context["rows"]) == 50 and first.context["next_query"]
    second = client.get(f"{url}?{first.context['next_query']}")
    assert [e.details["event"] for e in second.context["rows"]] == [f"e{i}" for i in range(4, -1, -1)]
    assert client.post(url, {"action": "created"}).status_code == 405
    assert "<form method=\"post\"" not in first.text.split("<main id=\"main\">")[1].split("</main>")[0].replace(
        'action="/accounts/logout/"', "")


def test_audit_page_is_for_admins_only(team):
    assert pf.client_for(team.users["member"]).get(f"/workspaces/{team.alpha.pk}/audit").status_code == 403
    assert pf.client_for(team.users["other"]).get(f"/workspaces/{team.alpha.pk}/audit").status_code == 404


def test_an_event_made_with_an_api_token_names_the_token_never_its_secret(team):
    from jobs import apitokens

    token, raw = apitokens.create_token(team.users["admin"], "ci-bot", workspace=team.alpha)
    caller = apitokens.user_for_token(raw)  # the user a token-authenticated request acts as
    event = audit.record(caller, "stopped", workspace=team.alpha, job=team.admin_job, dlc_job_id="dlc-admin-job")
    event.refresh_from_db()
    assert event.details == {"dlc_job_id": "dlc-admin-job", "api_token": {"name": "ci-bot", "prefix": token.prefix}}
    assert raw not in str(event.details) and raw.startswith(token.prefix)
    # A signed-in user's event says nothing of tokens, and no caller can write a token of its own.
    plain = audit.record(team.users["admin"], "changed", workspace=team.alpha, event="settings",
                         api_token={"name": "forged", "prefix": "dlcc_forged"})
    assert plain.details == {"event": "settings"}

    page = pf.client_for(team.users["admin"]).get(f"/workspaces/{team.alpha.pk}/audit").text
    assert page.count("via API token") == 1
    assert f'<div class="muted via">via API token ci-bot ({token.prefix}…)</div>' in page
    assert "forged" not in page and raw not in page
    assert "api_token:" not in page, "the token is said once, under Who, not again among the details"


def test_scrub_shares_the_secret_name_test_of_the_wizard_and_keeps_look_alikes():
    details = {"WANDB_API_KEY": "w", "HF_TOKEN": "h", "RayRedisPassword": "r", "sealed_secrets": "s",
               "TOKENIZERS_PARALLELISM": "false", "PWD": "/work", "envs": {"DB_PASSWD": "p", "EPOCHS": "3"}}
    assert audit.scrub(details) == {"TOKENIZERS_PARALLELISM": "false", "PWD": "/work", "envs": {"EPOCHS": "3"}}
