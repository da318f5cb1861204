"""Guardrail policies: stored per workspace, mapped onto spec.Policy by policies.context_for, enforced at
submit by the same validation in the wizard and the JSON API, and shown as hints in the wizard."""

from __future__ import annotations

import json

import pytest

from jobs import policies, spec
from jobs.models import WorkspacePolicy
from tests import portal_fixtures as pf
from tests.support.wizard import credentials_file


@pytest.fixture
def team(db):
    return pf.make_team()


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
    assert any("maximum duration" in m for m in errors["JobMaxRunningTimeMinutes"])
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
