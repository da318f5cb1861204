"""Guardrail policies: stored per workspace, mapped onto spec.Policy by policies.context_for, enforced at
submit by the same validation in the wizard and the JSON API, and shown as hints in the wizard."""

from __future__ import annotations

import json

import pytest

from jobs import policies, spec
from jobs.models import Job, Workspace, WorkspacePolicy
from tests import portal_fixtures as pf
from tests.support.wizard import credentials_file


def set_policy(workspace, **values):
    WorkspacePolicy.objects.update_or_create(workspace=workspace, defaults=values)


def test_no_policy_means_no_limits(team):
    assert policies.policy_for(team.alpha) == spec.Policy()
    ctx = policies.context_for(team.alpha, with_specs=False)
    assert ctx.region == team.alpha.region and ctx.reserved_tags == 1 and ctx.specs is None


def test_stored_policy_maps_onto_spec_policy(team):
    set_policy(team.alpha, allowed_sources=["quota"], max_nodes=2, max_gpus=4, max_duration_minutes=600,
               allowed_image_prefixes=["registry.example/"], required_tag_keys=["cost-centre"],
               default_tags={"team": "alpha"})
    policy = policies.context_for(team.alpha, with_specs=False).policy
    assert policy == spec.Policy(allowed_sources=frozenset({"quota"}), max_nodes=2, max_gpus=4,
                                 max_duration_minutes=600, allowed_image_prefixes=("registry.example/",),
                                 required_tag_keys=("cost-centre",), default_tags={"team": "alpha"})
    assert policies.policy_for(team.beta) == spec.Policy(), "policies are per workspace"


def test_each_guardrail_reports_at_its_field(team):
    set_policy(team.alpha, allowed_sources=["quota"], max_nodes=1, max_duration_minutes=60,
               allowed_image_prefixes=["dsw-registry"], required_tag_keys=["cost-centre"])
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": 2}]}
    errors = spec.validate(body, policies.context_for(team.alpha, with_specs=False))
    assert errors["JobSpecs[0].EcsSpec"] == ["The workspace policy only allows these sources: Resource Quota."]
    assert any("at most 1 nodes" in m for m in errors["JobSpecs"])
    assert errors["JobMaxRunningTimeMinutes"] == [
        "Required by this workspace's guardrails (at most 1 hour = 60 minutes)."]
    assert any("images starting with: dsw-registry" in m for m in errors["JobSpecs[0].Image"])
    assert any("requires the tag 'cost-centre'" in m for m in errors["Settings.Tags"])
    assert spec.validate(body, policies.context_for(team.beta, with_specs=False)) == {}


def test_hints_describe_the_guardrails_by_field(team):
    set_policy(team.alpha, max_gpus=4, max_duration_minutes=2880, default_tags={"team": "alpha"},
               required_tag_keys=["cost-centre"])
    hints = policies.hints_for(team.alpha)
    assert hints["resources.roles"] == ["At most 4 GPUs per job."]
    assert hints["resources.max_duration"] == ["Maximum duration is required and at most 2 days."]
    assert hints["basic.tags"] == ["Required tags: cost-centre.", "Default tags: team=alpha."]


def test_hints_tell_a_job_owner_of_the_idle_policy_that_may_stop_their_job(team):
    def hints(**values):
        set_policy(team.alpha, **values)
        return policies.hints_for(Workspace.objects.get(pk=team.alpha.pk))  # not the instance's cached policy

    assert hints(idle_after_minutes=30, idle_threshold_percent=5)["resources.max_duration"] == [
        "A job using under 5% of its GPUs (or CPU cores) is flagged idle after 30 minutes."]
    assert hints(idle_after_minutes=30, idle_stop_after_minutes=120)["resources.max_duration"] == [
        "A job using under 5% of its GPUs (or CPU cores) is flagged idle after 30 minutes and stopped after 2 hours."]
    assert "resources.max_duration" not in hints(idle_after_minutes=None, idle_stop_after_minutes=None)


def test_wizard_shows_hints_prefills_default_tags_and_refuses_at_the_field(team):
    from jobs.forms import wizard as glue
    from jobs.models import Job

    set_policy(team.alpha, max_nodes=1, required_tag_keys=["cost-centre"], default_tags={"team": "alpha"})
    client = pf.client_for(team.users["member"])
    page = client.get("/jobs/new")
    assert 'id="policy-hints"' in page.text and "At most 1 nodes per job." in page.text
    assert 'value="team"' in page.text and 'value="alpha"' in page.text, "default tags are prefilled"

    s = spec.inverse(pf.BODY)
    s["basic"]["name"] = "too-big"
    s["resources"]["roles"][0]["count"] = 3
    answer = client.post("/jobs/new", {**glue.sections_to_data(s), "_workspace": team.alpha.pk})
    assert answer.status_code == 200
    assert "The workspace policy allows at most 1 nodes per job (this job has 3)." in answer.text
    assert "The workspace policy requires the tag &#x27;cost-centre&#x27;." in answer.text
    assert not Job.objects.filter(display_name="too-big").exists()

    s["resources"]["roles"][0]["count"] = 1
    s["basic"]["tags"] = [{"key": "cost-centre", "value": "cc-42"}]
    answer = client.post("/jobs/new", {**glue.sections_to_data(s), "_workspace": team.alpha.pk})
    assert answer.status_code == 302
    assert Job.objects.get(display_name="too-big").body["Settings"]["Tags"] == {"cost-centre": "cc-42"}


def test_api_enforces_the_same_guardrails_with_wire_paths(team):
    set_policy(team.alpha, allowed_image_prefixes=["dsw-registry"])
    client = pf.client_for(team.users["member"])
    answer = client.post(f"/api/v1/jobs?workspace={team.alpha.pk}", json.dumps(pf.BODY),
                         content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["errors"] == {
        "JobSpecs[0].Image": ["The workspace policy only allows images starting with: dsw-registry."]}
    dry_run = client.post(f"/api/v1/jobs/validate?workspace={team.alpha.pk}", json.dumps(pf.BODY),
                          content_type="application/json")
    assert dry_run.status_code == 400 and dry_run.json()["errors"] == answer.json()["errors"]


def test_a_required_tag_needs_a_value_and_dot_dot_does_not_pass_the_prefix(team):
    set_policy(team.alpha, required_tag_keys=["cost"], allowed_image_prefixes=["registry.example.com/team/"])
    client = pf.client_for(team.users["member"])
    url, before = f"/api/v1/jobs?workspace={team.alpha.pk}", Job.objects.count()
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "Image": "registry.example.com/team/../evil/x:1"}],
            "Settings": {**pf.BODY.get("Settings", {}), "Tags": {"cost": ""}}}
    answer = client.post(url, json.dumps(body), content_type="application/json")
    assert answer.status_code == 400, answer.content
    errors = answer.json()["errors"]
    assert errors["Settings.Tags"] == ["The workspace policy requires a value for the tag 'cost'."]
    assert "'..' are not path segments" in errors["JobSpecs[0].Image"][0]
    assert Job.objects.count() == before


@pytest.fixture
def real_backend(team, localdlc, tmp_path, settings):
    """Alpha bound to a real localdlc (its AccessKey pair in an INI file), so instance types are known."""
    from django.core.cache import cache

    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(localdlc, tmp_path))
    team.alpha.endpoint = localdlc.endpoint
    team.alpha.save()
    cache.clear()
    yield team
    cache.clear()


def test_gpu_cap_uses_the_backends_instance_types(real_backend):
    team = real_backend
    set_policy(team.alpha, max_gpus=1)
    ctx = policies.context_for(team.alpha)
    assert ctx.specs and ctx.specs["ecs.gn6i-c4g1.xlarge"]["Gpu"] == 1
    one = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "EcsSpec": "ecs.gn6i-c4g1.xlarge"}]}
    assert spec.validate(one, ctx) == {}
    two = {**one, "JobSpecs": [{**one["JobSpecs"][0], "PodCount": 2}]}
    errors = spec.validate(two, ctx)
    assert errors == {"JobSpecs": ["The workspace policy allows at most 1 GPUs per job (this job asks for 2)."]}


# ---- QA Q2.1: an empty maximum duration in a capped workspace ------------------------------------------------


def test_the_caps_default_duration_fills_a_new_job_and_a_clone_in_the_wizard(team):
    from jobs import clone
    from jobs.forms import wizard as glue

    set_policy(team.alpha, max_duration_minutes=120)
    assert "JobMaxRunningTimeMinutes" not in team.job.body, "an older job: no maximum duration"
    client = pf.client_for(team.users["member"])
    new = client.get(f"/jobs/new?workspace={team.alpha.pk}")
    assert 'name="resources-max_duration" value="2"' in new.text.replace("\n", "")

    prefill = clone.prefill(team.job, workspace_id="alpha", context=policies.context_for(team.alpha))
    assert (prefill.sections["resources"]["max_duration"], prefill.sections["resources"]["max_duration_unit"]) == (
        2, "hours")
    assert ("Maximum duration", "empty (no limit)", "2 hours: set to the workspace's cap") in prefill.resets
    page = client.get(f"/jobs/new?clone={team.job.pk}")
    assert "set to the workspace&#x27;s cap" in page.text
    posted = client.post("/jobs/new", {**page_data(page.text), **glue.sections_to_data(prefill.sections),
                                       "_clone": team.job.pk, "_workspace": team.alpha.pk})
    assert posted.status_code == 302, posted.text[-3000:]
    assert Job.objects.get(display_name="train-a-copy").body["JobMaxRunningTimeMinutes"] == 120


def test_a_cap_above_the_console_default_keeps_the_default_and_no_cap_leaves_it_empty(team):
    from jobs import clone

    ctx = policies.context_for(team.alpha, with_specs=False)
    assert clone.prefill(team.job, context=ctx).sections["resources"]["max_duration"] is None, "no cap, no limit"
    set_policy(team.alpha, max_duration_minutes=90 * 1440)
    prefill = clone.prefill(team.job, context=policies.context_for(team.alpha, with_specs=False))
    assert (prefill.sections["resources"]["max_duration"], prefill.sections["resources"]["max_duration_unit"]) == (
        30, "days")
    assert prefill.resets[-1][2] == "30 days: the console's default, within the workspace's cap"


def test_the_api_refuses_an_absent_duration_plainly_and_its_clone_fills_it(team):
    set_policy(team.alpha, max_duration_minutes=120)
    client = pf.client_for(team.users["member"])
    answer = client.post(f"/api/v1/jobs?workspace={team.alpha.pk}", json.dumps(pf.BODY),
                         content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["errors"] == {
        "JobMaxRunningTimeMinutes": ["Required by this workspace's guardrails (at most 2 hours = 120 minutes)."]}
    cloned = client.post(f"/api/v1/jobs/{team.job.pk}/clone", "{}", content_type="application/json")
    assert cloned.status_code == 201, cloned.json()
    assert cloned.json()["body"]["JobMaxRunningTimeMinutes"] == 120


def page_data(html: str) -> dict[str, str]:
    """The hidden inputs of a wizard page (its token among them), as the browser posts them."""
    import re

    return {name: value for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)}
