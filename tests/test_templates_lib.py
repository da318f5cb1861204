"""Job templates: versions, locks enforced by the server, no secrets, and starting the wizard from one."""

from __future__ import annotations

import copy
import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from jobs import spec, templates_lib
from jobs.forms import wizard as glue
from tests import portal_fixtures as pf


@pytest.fixture
def team(db):
    return pf.make_team()


def sections(**changes):
    s = spec.inverse(pf.BODY)
    for path, value in changes.items():
        section, name = path.split(".")
        s[section][name] = value
    return s


def test_secrets_never_reach_a_template(team):
    s = sections(**{"environment.image_type": "address", "environment.registry_username": "bob",
                    "environment.registry_password": "hunter2-registry",
                    "resources.advanced": "RayRedisPassword=hunter2-redis,foo=bar"})
    version = templates_lib.save(team.alpha, team.users["member"], "with-secrets", s)
    stored = str(version.sections)
    assert "hunter2" not in stored
    assert version.sections["environment"]["registry_username"] == "bob"
    assert version.sections["resources"]["advanced"] == "foo=bar"


def test_secret_env_values_never_reach_a_template(team):
    s = sections(**{"environment.envs": [{"key": "WANDB_API_KEY", "value": "wandb-tpl-secret", "secret": True},
                                         {"key": "HF_TOKEN", "value": "hf-tpl-secret"},
                                         {"key": "EPOCHS", "value": "3"}]})
    version = templates_lib.save(team.alpha, team.users["member"], "with-secret-envs", s)
    assert "tpl-secret" not in str(version.sections)
    assert version.sections["environment"]["envs"] == [
        {"key": "WANDB_API_KEY", "value": "", "secret": True}, {"key": "HF_TOKEN", "value": "", "secret": True},
        {"key": "EPOCHS", "value": "3"}]


def test_saving_under_the_same_name_adds_a_version_and_is_audited(team):
    from jobs.models import AuditEvent

    v1 = templates_lib.save(team.alpha, team.users["member"], "nightly", sections(), note="first")
    v2 = templates_lib.save(team.alpha, team.users["member"], "nightly",
                            sections(**{"environment.command": "echo two"}), note="second")
    assert (v1.number, v2.number, v1.template_id) == (1, 2, v2.template_id)
    assert templates_lib.version_of(v1.template).number == 2, "latest when no default is set"
    templates_lib.set_default(v1.template, team.users["admin"], 1)
    assert templates_lib.version_of(v1.template).number == 1
    assert templates_lib.version_of(v1.template, 2).sections["environment"]["command"] == "echo two"
    events = list(AuditEvent.objects.filter(action="template").order_by("id").values_list("details", flat=True))
    assert [e["event"] for e in events] == ["saved", "saved", "default-version"]
    assert events[1]["version"] == 2


def test_viewers_cannot_save_and_members_cannot_lock(team):
    with pytest.raises(PermissionDenied):
        templates_lib.save(team.alpha, team.users["viewer"], "x", sections())
    with pytest.raises(PermissionDenied):
        templates_lib.set_locks(team.template, team.users["member"], ["environment.image"])
    with pytest.raises(ValidationError):
        templates_lib.set_locks(team.template, team.users["admin"], ["environment.nonsense"])
    with pytest.raises(ValidationError):
        templates_lib.save(team.alpha, team.users["member"], "   ", sections())


def test_only_admins_add_versions_to_a_template_with_locks(team):
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.image"])
    with pytest.raises(PermissionDenied):
        templates_lib.save(team.alpha, team.users["member"], "base", sections(**{"environment.image": "evil/img"}))
    assert templates_lib.save(team.alpha, team.users["admin"], "base", sections()).number == 2


def test_locked_errors_report_each_changed_locked_field(team):
    templates_lib.set_locks(team.template, team.users["admin"],
                            ["environment.image", "environment.command", "resources.roles", "resources.max_duration"])
    template = team.template
    base = sections(**{"resources.max_duration": 2, "resources.max_duration_unit": "days"})
    version = templates_lib.save(team.alpha, team.users["admin"], "base", base)
    assert templates_lib.locked_errors(template, version, copy.deepcopy(base)) == {}
    # 48 hours is 2 days: the same value spelled differently is not a change.
    same = sections(**{"resources.max_duration": 48, "resources.max_duration_unit": "hours"})
    assert templates_lib.locked_errors(template, version, same) == {}
    changed = copy.deepcopy(base)
    changed["environment"]["command"] = "rm -rf /"
    changed["resources"]["roles"][0]["count"] = 8
    changed["basic"]["description"] = "free to change"
    errors = templates_lib.locked_errors(template, version, changed)
    assert set(errors) == {"environment.command", "resources.roles"}
    assert "locked by the template 'base'" in errors["environment.command"][0]


@pytest.mark.parametrize(("lock", "number", "unit"), [("resources.max_duration", "max_duration", "max_duration_unit"),
                                                      ("resources.retention", "retention", "retention_unit")])
def test_a_locked_duration_locks_its_unit_too(team, lock, number, unit):
    templates_lib.set_locks(team.template, team.users["admin"], [lock])
    base = sections(**{f"resources.{number}": 2, f"resources.{unit}": "days"})
    version = templates_lib.save(team.alpha, team.users["admin"], "base", base)
    assert templates_lib.lock_paths(team.template) == [f"resources.{number}", f"resources.{unit}"]
    # The unit alone changes the duration: refused, at the number the wizard shows the error beside.
    errors = templates_lib.locked_errors(team.template, version, sections(**{f"resources.{number}": 2,
                                                                             f"resources.{unit}": "hours"}))
    assert list(errors) == [f"resources.{number}"] and "is locked by the template 'base'" in errors[lock][0]
    # The same length spelled with another unit is no change.
    assert templates_lib.locked_errors(team.template, version, sections(**{f"resources.{number}": 48,
                                                                           f"resources.{unit}": "hours"})) == {}

    # The wizard shows the unit read-only beside its number, each pointing at a "Locked by the template" note.
    page = pf.client_for(team.users["member"]).get(f"/jobs/new?template={team.template.pk}").text
    for name in (number, unit):
        assert re.search(rf'<(?:select|input)[^>]* name="resources-{name}"[^>]*data-locked="true"', page), name
        assert re.search(rf'name="resources-{name}"[^>]*aria-describedby="lock-resources-{name}"', page), name


def test_the_wizard_refuses_a_changed_unit_of_a_locked_duration(team):
    from jobs.models import Job

    templates_lib.set_locks(team.template, team.users["admin"], ["resources.max_duration"])
    base = sections(**{"resources.max_duration": 2, "resources.max_duration_unit": "days"})
    base["basic"]["name"] = "unit-changed"
    version = templates_lib.save(team.alpha, team.users["admin"], "base", base)
    hidden = {"_template": team.template.pk, "_template_version": version.number, "_workspace": team.alpha.pk}
    changed = copy.deepcopy(base)
    changed["resources"]["max_duration_unit"] = "hours"
    answer = wizard_post(pf.client_for(team.users["member"]), changed, **hidden)
    assert answer.status_code == 200 and "Maximum duration is locked by the template" in answer.text
    assert not Job.objects.filter(display_name="unit-changed").exists()


# --- through the wizard ------------------------------------------------------------------------------------


def wizard_post(client, s, **hidden):
    from jobs.forms import wizard as glue

    return client.post("/jobs/new", {**glue.sections_to_data(s), **hidden})


def test_wizard_starts_from_a_template_version_with_locked_fields_read_only(team):
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    templates_lib.save(team.alpha, team.users["admin"], "base", sections(**{"environment.command": "echo v2"}))
    client = pf.client_for(team.users["member"])
    page = client.get(f"/jobs/new?template={team.template.pk}&version=1")
    assert page.status_code == 200
    assert "echo hello" in page.text and "echo v2" not in page.text
    assert 'data-locked="true"' in page.text and "Startup command" in page.text
    # A visible note at the field, which the field points to for screen readers.
    assert '<span class="badge warning" id="lock-environment-command">Locked by the template</span>' in page.text
    assert re.search(r'<textarea name="environment-command"[^>]*aria-describedby="lock-environment-command"',
                     page.text)
    assert 'id="lock-environment-image"' not in page.text, "only locked fields say so"
    assert 'name="_template_version" value="1"' in page.text
    latest = client.get(f"/jobs/new?template={team.template.pk}")
    assert "echo v2" in latest.text


def test_the_server_refuses_a_change_to_a_locked_field(team):
    from jobs.models import Job

    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    client = pf.client_for(team.users["member"])
    hidden = {"_template": team.template.pk, "_template_version": 1, "_workspace": team.alpha.pk}
    changed = sections(**{"environment.command": "echo changed"})
    changed["basic"]["name"] = "from-template"
    before = Job.objects.count()
    answer = wizard_post(client, changed, **hidden)
    assert answer.status_code == 200
    assert "locked by the template" in answer.text
    assert Job.objects.count() == before
    unchanged = sections()
    unchanged["basic"]["name"] = "from-template"
    answer = wizard_post(client, unchanged, **hidden)
    assert answer.status_code == 302, answer.text[:3000]
    assert Job.objects.get(display_name="from-template").body["UserCommand"] == "echo hello"


# One row for every list a template can lock (None: the template's own Worker row).
LIST_ROWS = {
    "basic.tags": {"key": "team", "value": "vision"},
    "environment.datasets": {"id": "d-1", "mount_path": "/mnt/data"},
    "environment.storages": {"uri": "oss://bucket/dir/", "mount_path": "/mnt/oss"},
    "environment.envs": {"key": "MODE", "value": "offline"},
    "resources.roles": None,
}


def test_every_wizard_list_is_lockable_and_covered_below():
    lists = {f"{section}.{name}" for name, section in glue.LISTS.items()}
    assert lists == set(LIST_ROWS) and lists <= set(templates_lib.LOCKABLE)


def started_with_locked_list(team, path):
    """A new template version with one row in the list at `path`, that list locked; the member's client and
    the data the page posts."""
    section, name = path.split(".")
    s = sections()
    if LIST_ROWS[path]:
        s[section][name] = [{**spec.ROW_FIELDS[name], **LIST_ROWS[path]}]
    version = templates_lib.save(team.alpha, team.users["admin"], "base", s)
    templates_lib.set_locks(team.template, team.users["admin"], [path])
    hidden = {"_template": team.template.pk, "_template_version": version.number, "_workspace": team.alpha.pk}
    return pf.client_for(team.users["member"]), {**glue.sections_to_data(s), **hidden, f"_checked-{section}": "1"}


@pytest.mark.parametrize("path", sorted(LIST_ROWS))
def test_rows_of_a_locked_list_are_neither_added_nor_removed(team, path):
    from jobs.models import Job

    section, name = path.split(".")
    client, data = started_with_locked_list(team, path)
    page = client.get(f"/jobs/new?template={team.template.pk}").text
    assert re.findall(rf'id="row-{name}-(\d+)"', page) == ["0"]
    assert f'<span class="badge warning" id="lock-list-{name}">Locked by the template</span>' in page
    assert f'value="{name}-0"' not in page and f'id="add-{name}"' not in page, "no Remove, no Add"
    assert re.search(rf'name="{section}-{name}-0-\w+"[^>]*aria-describedby="lock-list-{name}"', page)

    # A stale page or a hand-made POST asks anyway: nothing changes, and the list says why.
    url = f"/jobs/new/section/{section}"
    for action in ({"_add": name}, {"_remove": f"{name}-0"}):
        answer = client.post(url, {**data, **action}, HTTP_HX_REQUEST="true")
        assert answer.status_code == 200
        assert re.findall(rf'id="row-{name}-(\d+)"', answer.text) == ["0"], action
        assert f'<div class="note warn" role="status">{glue.LOCKED_LIST}</div>' in answer.text
        assert "cannot be changed" not in answer.text, "the locked rows are what the template says"
    # Without JavaScript the buttons post the whole page: the same answer, and no job.
    answer = client.post("/jobs/new", {**data, "_remove": f"{name}-0"})
    assert answer.status_code == 200 and glue.LOCKED_LIST in answer.text
    assert re.findall(rf'id="row-{name}-(\d+)"', answer.text) == ["0"]
    assert Job.objects.filter(display_name="train-a", workspace=team.alpha).count() == 1  # the fixture's only

    # Only the locked list is frozen: another list of the same page still takes rows.
    other = "envs" if name == "tags" else "tags"
    answer = client.post(f"/jobs/new/section/{glue.LISTS[other]}", {**data, "_add": other}, HTTP_HX_REQUEST="true")
    assert f'id="row-{other}-0"' in answer.text and glue.LOCKED_LIST not in answer.text


def test_locked_roles_stay_when_the_framework_changes(team):
    client, data = started_with_locked_list(team, "resources.roles")
    answer = client.post("/jobs/new/section/resources", {**data, "resources-framework": "TensorFlow"},
                         HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-framework")
    assert answer.status_code == 200
    assert re.findall(r'id="row-roles-(\d+)"', answer.text) == ["0"]
    assert re.search(r'<option value="Worker" selected>', answer.text)
    assert "the roles are kept for the new framework" in answer.text
    assert "Nodes and instance types is locked" not in answer.text


def test_templates_of_other_workspaces_cannot_be_started(team):
    client = pf.client_for(team.users["member"])
    assert client.get(f"/jobs/new?template={team.other_template.pk}").status_code == 404
    assert client.get(f"/jobs/new?template={team.template.pk}&version=9").status_code == 404
    assert pf.client_for(team.users["viewer"]).get(f"/jobs/new?template={team.template.pk}").status_code == 403


def test_save_a_job_as_a_template_from_its_page(team):
    client = pf.client_for(team.users["member"])
    assert client.get(f"/templates/save?job={team.job.pk}").status_code == 200
    answer = client.post(f"/templates/save?job={team.job.pk}", {"name": "from-job", "note": "v1"})
    assert answer.status_code == 302
    from jobs.models import JobTemplate

    template = JobTemplate.objects.get(name="from-job", workspace=team.alpha)
    assert templates_lib.version_of(template).sections["environment"]["command"] == "echo hello"
    assert client.post(f"/templates/save?job={team.other_job.pk}", {"name": "steal"}).status_code == 404


def test_save_the_wizard_content_as_a_template(team):
    from jobs.forms import wizard as glue
    from jobs.models import Job, JobTemplate
    from tests.support.wizard import page_form_data

    s = sections(**{"environment.command": "echo from wizard", "environment.image_type": "address",
                    "environment.registry_password": "hunter2-registry"})
    data = {**glue.sections_to_data(s), "environment-registry_password": "hunter2-registry",
            "_workspace": team.alpha.pk}
    client = pf.client_for(team.users["member"])
    missing = client.post("/templates/from-wizard", data)
    assert missing.status_code == 400 and "hunter2" not in missing.text
    # The page that asks for the name also leads back to the wizard with the same data, submitting nothing.
    assert re.search(r'<button type="submit" formaction="/jobs/new" name="_refresh" value="1"[^>]*>Back to the '
                     r"wizard</button>", missing.text)
    back = client.post("/jobs/new", {**page_form_data(missing.text, "template-form"), "_refresh": "1"})
    assert back.status_code == 200 and "echo from wizard" in back.text
    assert page_form_data(back.text)["environment-command"] == "echo from wizard"
    assert Job.objects.count() == 3, "the fixture's jobs only"

    answer = client.post("/templates/from-wizard", {**data, "_template_name": "wizard-made"})
    template = JobTemplate.objects.get(name="wizard-made")
    version = templates_lib.version_of(template)
    assert version.sections["environment"]["command"] == "echo from wizard"
    assert "hunter2" not in str(version.sections)
    # Saved, the user is back in the wizard, started from what they saved: the same data, minus the secret.
    assert answer.status_code == 302
    assert answer["Location"] == f"/jobs/new?template={template.pk}&version={version.number}"
    wizard = client.get(answer["Location"])
    assert wizard.status_code == 200 and "hunter2" not in wizard.text
    assert page_form_data(wizard.text)["environment-command"] == "echo from wizard"
    assert "Saved as template wizard-made v1. You are back in the wizard, now started from it. Type the registry " \
           "password again: templates never keep secrets." in wizard.text
    assert f'name="_template" value="{template.pk}"' in wizard.text


def test_template_pages_lock_and_default_by_admins_only(team):
    admin, member = pf.client_for(team.users["admin"]), pf.client_for(team.users["member"])
    assert member.post(f"/templates/{team.template.pk}/locks", {"locked": ["environment.image"]}).status_code == 403
    assert admin.post(f"/templates/{team.template.pk}/locks", {"locked": ["environment.image"]}).status_code == 302
    team.template.refresh_from_db()
    assert team.template.locked == ["environment.image"]
    page = member.get(f"/templates/{team.template.pk}")
    assert "Locked: <strong>Image</strong>" in page.text
    assert "Save locks" not in page.text
    assert member.get("/templates").status_code == 200
    assert admin.post(f"/templates/{team.template.pk}/delete").status_code == 302


def test_a_secret_env_of_a_locked_list_is_typed_per_job_and_sealed(team):
    from jobs import secretbox
    from jobs.models import Job

    s = sections(**{"environment.envs": [{"key": "WANDB_API_KEY", "value": "tpl-secret", "secret": True}]})
    version = templates_lib.save(team.alpha, team.users["admin"], "base", s)
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.envs"])
    client = pf.client_for(team.users["member"])
    page = client.get(f"/jobs/new?template={team.template.pk}").text
    value = re.search(r'<input type="password" name="environment-envs-0-value"[^>]*>', page).group(0)
    assert "readonly" not in value and "tpl-secret" not in page
    data = {**glue.sections_to_data(version.sections), "_template": team.template.pk,
            "_template_version": version.number, "_workspace": team.alpha.pk,
            "basic-name": "from-template", "environment-envs-0-value": "typed-for-this-job"}
    refused = client.post("/jobs/new", {**data, "environment-envs-0-value": ""}).text
    assert "Type the value of WANDB_API_KEY again" in refused
    answer = client.post("/jobs/new", data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    job = Job.objects.get(display_name="from-template")
    assert job.body["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER}
    assert secretbox.unseal(job.sealed_secrets) == {"env:WANDB_API_KEY": "typed-for-this-job"}


def test_a_secret_env_value_is_not_carried_into_the_template_name_page(team):
    s = sections(**{"environment.envs": [{"key": "WANDB_API_KEY", "value": "", "secret": True},
                                         {"key": "EPOCHS", "value": "3"}]})
    data = {**glue.sections_to_data(s), "environment-envs-0-value": "wandb-carried-secret", "_workspace": team.alpha.pk}
    missing = pf.client_for(team.users["member"]).post("/templates/from-wizard", data)
    assert missing.status_code == 400
    assert "wandb-carried-secret" not in missing.text
    assert 'name="environment-envs-0-secret"' in missing.text and 'value="3"' in missing.text
    saved = pf.client_for(team.users["member"]).post("/templates/from-wizard", {**data, "_template_name": "t-env"},
                                                     follow=True)
    assert "Type the value of WANDB_API_KEY again: templates never keep secrets." in saved.text
    assert "wandb-carried-secret" not in saved.text


def test_templates_are_listed_by_name_with_their_latest_version(team):
    # Saved out of name order: a query with an aggregate drops Meta.ordering, so only an explicit order sorts them.
    for name in ("zeta", "alpha", "mid"):
        templates_lib.save(team.alpha, team.users["member"], name, sections())
    templates_lib.save(team.alpha, team.users["member"], "alpha", sections(), note="second")
    rows = [(t.name, t.latest) for t in templates_lib.templates_in(team.alpha)]
    assert rows == [("alpha", 2), ("base", 1), ("mid", 1), ("zeta", 1)]
