"""Job templates: versions, locks enforced by the server, no secrets, and starting the wizard from one."""

from __future__ import annotations

import copy
import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from jobs import spec, templates_lib
from jobs.forms import wizard as glue
from tests import portal_fixtures as pf


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


def test_a_description_typed_with_a_new_version_is_the_templates_and_audited(team):
    """QA: saving a version of an existing template with a new description (the save page and the wizard offer the
    box) kept the old description without a word. Left empty, the template keeps its own."""
    from jobs.models import AuditEvent

    member = team.users["member"]
    templates_lib.save(team.alpha, member, "nightly", sections(), description="first try")
    v2 = templates_lib.save(team.alpha, member, "nightly", sections(**{"environment.command": "echo two"}),
                            description="nightly evaluation, 8 GPUs")
    v2.template.refresh_from_db()
    assert v2.template.description == "nightly evaluation, 8 GPUs"
    saved = AuditEvent.objects.filter(action="template").latest("id").details
    assert saved["description"] == {"from": "first try", "to": "nightly evaluation, 8 GPUs"}
    templates_lib.save(team.alpha, member, "nightly", sections(**{"environment.command": "echo three"}))
    v2.template.refresh_from_db()
    assert v2.template.description == "nightly evaluation, 8 GPUs", "an empty box keeps it"
    same = templates_lib.save(team.alpha, member, "nightly", sections(**{"environment.command": "echo three"}),
                              description="only the words change")
    v2.template.refresh_from_db()
    assert (same.unchanged, v2.template.description) == (True, "only the words change")
    assert templates_lib.unchanged_message(same).endswith("no new version was saved. Its description is saved.")
    assert AuditEvent.objects.filter(action="template").latest("id").details["event"] == "described"


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
    changed = sections(**{"environment.command": "python train.py --epochs 3"})
    assert templates_lib.save(team.alpha, team.users["admin"], "base", changed).number == 2


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


def test_saving_what_the_latest_version_has_makes_no_version_and_says_so(team):
    """QA: four "Save as template" posts at once made four identical versions."""
    from jobs.models import AuditEvent

    member = team.users["member"]
    first = templates_lib.save(team.alpha, member, "same", sections(), note="first")
    assert first.number == 1 and first.unchanged is False
    plain = sections(**{"environment.registry_username": "bob"})
    secret = sections(**{"environment.registry_username": "bob", "environment.registry_password": "other-secret"})
    assert templates_lib.save(team.alpha, member, "same", plain).number == 2
    again = templates_lib.save(team.alpha, member, "same", secret, note="a note is no change")
    assert (again.number, again.unchanged) == (2, True), "secrets are never kept, so they are no change either"
    assert templates_lib.save(team.alpha, member, "same", sections()).number == 3, "only the latest counts"
    assert list(AuditEvent.objects.filter(details__template="same").values_list("details__version", flat=True)
                .order_by("id")) == [1, 2, 3]
    client = pf.client_for(member)
    client.post(f"/templates/save?job={team.job.pk}", {"name": "from-page"})
    answer = client.post(f"/templates/save?job={team.job.pk}", {"name": "from-page"}, follow=True)
    assert "No change since version 1 of the template &#x27;from-page&#x27;: no new version was saved." \
        in answer.text
    assert templates_lib.templates_in(team.alpha).get(name="from-page").latest == 1


def test_four_saves_of_one_content_at_once_make_one_version(transactional_db):
    import threading

    from django.db import connection

    from jobs.models import JobTemplateVersion

    team = pf.make_team()
    start = threading.Barrier(4)
    saved: list[JobTemplateVersion] = []
    failures: list[BaseException] = []

    def save(name: str) -> None:
        try:
            start.wait()
            saved.append(templates_lib.save(team.alpha, team.users["member"], name,
                                            sections(**{"environment.command": "echo raced"})))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)
        finally:
            connection.close()

    # A template with another version, which the four add one to, and one the four create together.
    for name, versions in (("base", 2), ("brand-new", 1)):
        threads = [threading.Thread(target=save, args=(name,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not failures, failures
        assert JobTemplateVersion.objects.filter(template__name=name).count() == versions, name
    assert sorted(v.unchanged for v in saved) == [False, False] + [True] * 6, "one new version per template"


def test_two_new_names_differing_only_in_case_saved_at_once_make_one_template_and_a_name_error(transactional_db):
    """QA: saves as `Train` and `train` at once both passed the name check (it ignores case) and both made a
    template: the database held names unique as written only. It refuses the second now (migration 0040), and the
    loser hears what the check says (not "being saved by someone else; try again", which a retry could not cure).
    The first waits at its insert for the second (a bounded chance, not a sleep)."""
    from jobs.models import JobTemplate
    from tests.support.threads import second_while_first_saves

    team = pf.make_team()

    def save(name: str):
        def run() -> str:
            try:
                return templates_lib.save(team.alpha, team.users["member"], name, sections()).template.name
            except ValidationError as refused:
                return refused.message_dict["name"][0]
        return run

    answers = second_while_first_saves(save("Train"), save("train"), JobTemplate)
    [saved] = JobTemplate.objects.filter(workspace=team.alpha, name__in=["Train", "train"]).values_list("name",
                                                                                                       flat=True)
    assert sorted(answers, key=len) == [saved, f"This workspace has a template named '{saved}': names may not differ "
                                               f"only in case. Save as '{saved}' to add a version of it, or choose "
                                               "another name."]


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
    templates_lib.save(team.alpha, team.users["member"], "alpha", sections(**{"environment.command": "echo 2"}),
                       note="second")
    rows = [(t.name, t.latest) for t in templates_lib.templates_in(team.alpha)]
    assert rows == [("alpha", 2), ("base", 1), ("mid", 1), ("zeta", 1)]


def test_templates_are_listed_by_name_whatever_its_case_in_the_list_and_the_picker(team):
    """QA: the picker listed "TMPL-A" before "race-tmpl" (uppercase first, as the database compares bytes)."""
    for name in ("TMPL-A", "race-tmpl", "Zulu", "alpha"):
        templates_lib.save(team.alpha, team.users["member"], name, sections())
    assert [t.name for t in templates_lib.templates_in(team.alpha)] == ["alpha", "base", "race-tmpl", "TMPL-A",
                                                                         "Zulu"]
    html = pf.client_for(team.users["member"]).get(f"/jobs/new?workspace={team.alpha.pk}").text
    picker = re.findall(r'<option value="\d+">([^<]+)</option>', html.split('id="template-picker"', 1)[-1])
    assert picker[:5] == ["alpha", "base", "race-tmpl", "TMPL-A", "Zulu"], picker[:5]


def test_a_name_that_differs_only_in_case_from_another_template_is_refused_at_name(team):
    """QA: saving as "BASE" next to "base" made a second template instead of saying so."""
    from django.db import IntegrityError, transaction

    from jobs.models import JobTemplate

    with pytest.raises(ValidationError) as refused:
        templates_lib.save(team.alpha, team.users["member"], "BASE", sections())
    assert "template named 'base': names may not differ only in case" in refused.value.message_dict["name"][0]
    page = pf.client_for(team.users["member"]).post(f"/templates/save?job={team.job.pk}", {"name": "Base"})
    assert page.status_code == 200 and "names may not differ only in case" in page.text
    assert templates_lib.save(team.alpha, team.users["member"], "base", sections(
        **{"environment.command": "echo 2"})).number == 2, "the same name still adds a version"
    assert templates_lib.save(team.beta, team.users["other"], "BASE", sections()).number == 1, "per workspace"
    # The database holds the rule too (migration 0040; the twins saved before it were renamed there).
    with pytest.raises(IntegrityError), transaction.atomic():
        JobTemplate.objects.create(workspace=team.alpha, name="Base", created_by=team.users["admin"])
    assert JobTemplate.objects.filter(workspace=team.alpha, name__in=["base", "Base", "BASE"]).count() == 1


def test_a_template_description_is_limited_at_its_field(team):
    """QA: a 20,000-character description was taken and widened the template page to 177,758 px."""
    too_long = "d" * (templates_lib.DESCRIPTION_MAX + 1)
    with pytest.raises(ValidationError) as raised:
        templates_lib.save(team.alpha, team.users["member"], "long", sections(), description=too_long)
    assert "description" in raised.value.message_dict
    client = pf.client_for(team.users["member"])
    answer = client.post(f"/templates/save?job={team.job.pk}", {"name": "long", "description": too_long})
    assert answer.status_code == 200
    assert answer.context["form"].errors["description"] == [
        f"Ensure this value has at most {templates_lib.DESCRIPTION_MAX} characters (it has {len(too_long)})."]
    wizard = client.post("/templates/from-wizard", {**glue.sections_to_data(sections()), "_workspace": team.alpha.pk,
                                                    "_template_name": "long", "_template_description": too_long})
    assert wizard.status_code == 400 and 'id="field-description"' in wizard.text
    assert "at most 2000 characters" in wizard.text
    from jobs.models import JobTemplate

    assert not JobTemplate.objects.filter(name="long").exists()
    ok = client.post(f"/templates/save?job={team.job.pk}", {"name": "long", "description": "d" * 2000})
    assert ok.status_code == 302
    page = client.get(ok["Location"]).text
    assert 'class="long-text" id="template-description"' in page, "wraps anywhere: see static/css/console.css"
    assert '<td class="row-actions"' not in page, "a flex cell leaves the row grid: the flex box is inside the cell"


# --- locks beyond the first job: clones (wizard and API) of a job started from a template -----------------------


def api_for(user):
    from tests.support.api import Api

    return Api(user)


def started_from_template(team, locks=("environment.command",), name="from-template"):
    """A job the member started in the wizard from the template (version 1), with `locks` set by an admin."""
    from jobs.models import Job

    templates_lib.set_locks(team.template, team.users["admin"], list(locks))
    s = sections()
    s["basic"]["name"] = name
    answer = wizard_post(pf.client_for(team.users["member"]), s, _template=team.template.pk, _template_version=1,
                         _workspace=team.alpha.pk)
    assert answer.status_code == 302, answer.text[:3000]
    return Job.objects.get(display_name=name)


def test_a_job_remembers_the_template_and_version_it_started_from(team):
    job = started_from_template(team)
    assert templates_lib.linked(job) == (team.template, team.template.versions.get(number=1))
    assert job.hints[templates_lib.LINK] == {"id": team.template.pk, "version": 1, "name": "base"}
    # Through the API as well.
    answer = api_for(team.users["member"]).post(
        f"/api/v1/jobs?workspace={team.alpha.pk}&template={team.template.pk}&version=1",
        {**pf.BODY, "DisplayName": "api-from-template"})
    assert answer.status_code == 201, answer.json()
    from jobs.models import Job

    assert templates_lib.linked(Job.objects.get(pk=answer.json()["id"]))[0] == team.template
    assert templates_lib.linked(team.job) is None, "a job from no template is bound by none"


def test_an_api_clone_of_a_job_from_a_locked_template_keeps_the_locks(team):
    from jobs.models import Job

    job = started_from_template(team)
    api = api_for(team.users["member"])
    refused = api.post(f"/api/v1/jobs/{job.pk}/clone", {"changes": {"UserCommand": "echo escaped"}})
    assert refused.status_code == 400
    assert refused.json()["errors"]["UserCommand"] == [
        "Startup command is locked by the template 'base' and cannot be changed."]
    # An unlocked field still changes, and the clone stays bound: a clone of the clone is refused the same way.
    answer = api.post(f"/api/v1/jobs/{job.pk}/clone", {"changes": {"Description": "unlocked: free"}})
    assert answer.status_code == 201, answer.json()
    copy_ = Job.objects.get(pk=answer.json()["id"])
    assert copy_.body["Description"] == "unlocked: free" and templates_lib.linked(copy_)[0] == team.template
    again = api.post(f"/api/v1/jobs/{copy_.pk}/clone", {"changes": {"UserCommand": "echo escaped"}})
    assert again.status_code == 400 and "UserCommand" in again.json()["errors"]
    # Admins are bound too: the lock is the workspace's rule (they change it by editing the locks).
    admin = api_for(team.users["admin"]).post(f"/api/v1/jobs/{job.pk}/clone",
                                              {"changes": {"UserCommand": "echo escaped"}})
    assert admin.status_code == 400


def test_a_wizard_clone_of_a_job_from_a_locked_template_keeps_the_locks(team):
    from tests.support.wizard import page_form_data

    job = started_from_template(team)
    client = pf.client_for(team.users["member"])
    page = client.get(f"/jobs/new?clone={job.pk}")
    assert page.status_code == 200
    assert '<span class="badge warning" id="lock-environment-command">Locked by the template</span>' in page.text
    assert "The source job started from the template" in page.text
    data = page_form_data(page.text)
    refused = client.post("/jobs/new", {**data, "environment-command": "echo escaped"})
    assert refused.status_code == 200
    assert "Startup command is locked by the template &#x27;base&#x27; and cannot be changed." in refused.text
    answer = client.post("/jobs/new", {**data, "basic-description": "unlocked: free"})
    assert answer.status_code == 302, answer.text[:3000]
    from jobs.models import Job

    made = Job.objects.get(cloned_from=job)
    assert made.body["UserCommand"] == "echo hello" and made.body["Description"] == "unlocked: free"
    assert templates_lib.linked(made)[0] == team.template


def test_a_clone_of_a_job_from_before_the_lock_takes_the_templates_value(team):
    from jobs import clone

    job = started_from_template(team, locks=())
    job.body = {**job.body, "UserCommand": "echo before the lock"}
    job.save(update_fields=["body"])
    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    prefill = clone.prefill(job)
    assert prefill.sections["environment"]["command"] == "echo hello"
    assert ("Startup command", "echo before the lock",
            "the template's value: locked by the template 'base'") in prefill.resets
    page = pf.client_for(team.users["member"]).get(f"/jobs/new?clone={job.pk}").text
    assert "echo before the lock" in page and "the template&#x27;s value: locked by the template" in page
    answer = api_for(team.users["member"]).post(f"/api/v1/jobs/{job.pk}/clone")
    assert answer.status_code == 201 and answer.json()["body"]["UserCommand"] == "echo hello"


def test_a_clone_of_a_job_from_a_template_without_locks_changes_anything(team):
    job = started_from_template(team, locks=())
    answer = api_for(team.users["member"]).post(f"/api/v1/jobs/{job.pk}/clone",
                                                {"changes": {"UserCommand": "echo free"}})
    assert answer.status_code == 201 and answer.json()["body"]["UserCommand"] == "echo free"


def test_a_member_cannot_add_a_version_that_would_escape_the_locks_and_admins_still_edit_them(team):
    from jobs.models import Job

    templates_lib.set_locks(team.template, team.users["admin"], ["environment.command"])
    job = pf.make_job(team.alpha, team.users["member"], "other-command")
    job.body = {**job.body, "UserCommand": "echo x"}
    job.save(update_fields=["body"])
    answer = pf.client_for(team.users["member"]).post(f"/templates/save?job={job.pk}", {"name": "base"})
    assert answer.status_code == 200, "refused at the name field, not a 403 page"
    assert "has locked fields; only a workspace admin can add versions" in answer.text
    team.template.refresh_from_db()
    assert team.template.versions.count() == 1 and team.template.locked == ["environment.command"]
    # The admin edits the locks; the member then starts from the template with the command free.
    templates_lib.set_locks(team.template, team.users["admin"], [])
    s = sections(**{"environment.command": "echo now free"})
    s["basic"]["name"] = "freed"
    answer = wizard_post(pf.client_for(team.users["member"]), s, _template=team.template.pk, _template_version=1,
                         _workspace=team.alpha.pk)
    assert answer.status_code == 302 and Job.objects.get(display_name="freed").body["UserCommand"] == "echo now free"


@pytest.mark.parametrize("template,version,expected", [
    ("4", "2", (4, 2)), (" 4 ", "", (4, None)), ("", "", (None, None)), (None, None, (None, None)),
    ("abc", "", {"template": [templates_lib.TEMPLATE_NOT_AN_ID]}),
    ("0", "", {"template": [templates_lib.TEMPLATE_NOT_AN_ID]}),
    ("-1", "1", {"template": [templates_lib.TEMPLATE_NOT_AN_ID]}),
    ("\u0664", "", {"template": [templates_lib.TEMPLATE_NOT_AN_ID]}),  # an Arabic-Indic 4: a digit, not ASCII
    ("4", "abc", {"version": [templates_lib.VERSION_NOT_A_NUMBER]}),
    ("", "2", {"version": [templates_lib.VERSION_WITHOUT_TEMPLATE]}),
])
def test_parse_start_takes_whole_numbers_and_says_which_parameter_is_wrong(template, version, expected):
    # QA: template=abc was a 404 (taken as "no such template") while version=abc was a 400 saying why.
    if isinstance(expected, tuple):
        assert templates_lib.parse_start(template, version) == expected
    else:
        with pytest.raises(ValidationError) as caught:
            templates_lib.parse_start(template, version)
        assert caught.value.message_dict == expected


def test_deleting_a_template_says_its_jobs_lines_lose_its_locks_then_lifts_them(team):
    """A deleted template's locks go with it (the decision: nobody could see, explain or lift a lock whose template
    is gone; workspace guardrails are for rules that outlive a template): the admin is told before and after, with
    how many jobs started from it, and the audit event keeps that count."""
    from jobs.models import AuditEvent, Job

    job = started_from_template(team)
    admin = pf.client_for(team.users["admin"])
    page = admin.get(f"/templates/{team.template.pk}").text
    said = re.search(r'<p class="muted" id="delete-effect">(.*?)</p>', page, re.S).group(1)
    assert "1 job started from it keeps running" in said
    assert "its clones and edits will no longer be held to the locked fields (Startup command)" in said
    confirm = re.search(r"onsubmit=\"return confirm\('(.*?)'\)\"", page).group(1)
    assert "1 job started from it" in confirm and "no longer be held to its locked fields" in confirm
    assert templates_lib.jobs_started_from(team.template) == 1
    answer = admin.post(f"/templates/{team.template.pk}/delete", follow=True)
    assert "Template base deleted. 1 job started from it keeps running; its clones and edits are no longer held " \
           "to its locked fields." in answer.text
    event = AuditEvent.objects.filter(action=AuditEvent.TEMPLATE).order_by("-pk").first()
    assert event.details["event"] == "deleted" and event.details["jobs"] == 1
    clone = api_for(team.users["member"]).post(f"/api/v1/jobs/{job.pk}/clone",
                                               {"changes": {"UserCommand": "echo unlocked now"}})
    assert clone.status_code == 201
    assert Job.objects.get(pk=clone.json()["id"]).body["UserCommand"] == "echo unlocked now"


def test_deleting_a_template_no_job_started_from_says_only_what_goes(team):
    page = pf.client_for(team.users["other"]).get(f"/templates/{team.other_template.pk}").text
    assert "No job was started from it." in re.search(r'id="delete-effect">(.*?)</p>', page, re.S).group(1)
