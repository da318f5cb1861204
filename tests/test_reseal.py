"""Migration 0034 (jobs.reseal): rows saved before spec.looks_like_secret widened lose their plain secret-named
values; what a row still needs is sealed as the code seals it today."""

from __future__ import annotations

import importlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps

from jobs import logmask, secretbox, spec
from tests import portal_fixtures as pf

MIGRATION = importlib.import_module("jobs.migrations.0034_reseal_secret_named_values")
HF = "hf_oldPlainToken123"
DB = "db-pass-in-plain"


def migrate() -> None:
    MIGRATION.reseal(apps, None)


def old_body(name: str) -> dict:
    # Saved under the older rule: HFTOKEN and DB_PASS-like names were not sealed, WANDB_API_KEY was.
    return {**pf.BODY, "DisplayName": name,
            "Envs": {"HFTOKEN": HF, "SSH_KEY": DB, "WANDB_API_KEY": spec.SECRET_PLACEHOLDER, "EPOCHS": "3"}}


def plain_anywhere(*rows) -> bool:
    return any(HF in json.dumps(row, default=str) or DB in json.dumps(row, default=str) for row in rows)


@pytest.mark.django_db
def test_old_rows_lose_their_plain_secret_named_values_and_keep_what_they_need():
    from jobs import lifecycle, schedules
    from jobs.models import Job, JobTemplateVersion, Schedule

    team = pf.make_team()
    member = team.users["member"]
    waiting = Job.objects.create(workspace=team.alpha, owner=member, display_name="w", body=old_body("w"),
                                 status="Submitting", sealed_secrets=secretbox.seal({"env:WANDB_API_KEY": "w-key"}))
    ended = Job.objects.create(workspace=team.alpha, owner=member, display_name="ended", body=old_body("ended"),
                               status="Succeeded", dlc_job_id="dlc-ended")
    schedule = Schedule.objects.create(workspace=team.alpha, owner=member, name="nightly", body=old_body("nightly"),
                                       sealed_secrets=secretbox.seal({"env:WANDB_API_KEY": "w-key"}), kind="daily",
                                       next_run_at=datetime.now(UTC) - timedelta(minutes=1))
    sections = spec.inverse(old_body("t"))
    version = JobTemplateVersion.objects.create(template=team.template, number=2, sections=sections)
    assert plain_anywhere(waiting.body, ended.body, schedule.body, version.sections)  # the old shape

    migrate()
    for row in (waiting, ended, schedule, version):
        row.refresh_from_db()
    assert not plain_anywhere(waiting.body, ended.body, schedule.body, version.sections)

    # The job still to be sent: placeholder in the body, the value sealed next to the one already there, and
    # what submit sends carries the real values.
    assert waiting.body["Envs"] == {"HFTOKEN": spec.SECRET_PLACEHOLDER, "SSH_KEY": spec.SECRET_PLACEHOLDER,
                                    "WANDB_API_KEY": spec.SECRET_PLACEHOLDER, "EPOCHS": "3"}
    assert secretbox.unseal(waiting.sealed_secrets) == {"env:HFTOKEN": HF, "env:SSH_KEY": DB,
                                                        "env:WANDB_API_KEY": "w-key"}
    sent = lifecycle.wire_body(waiting, secretbox.unseal(waiting.sealed_secrets))
    assert sent["Envs"] == {"HFTOKEN": HF, "SSH_KEY": DB, "WANDB_API_KEY": "w-key", "EPOCHS": "3"}

    # The ended job: placeholder, nothing sealed, and its logs still masked.
    assert ended.body["Envs"]["HFTOKEN"] == spec.SECRET_PLACEHOLDER and not ended.sealed_secrets
    assert logmask.mask([f"token={HF}", f"ssh {DB}"], ended.secret_marks) == \
        [f"token={logmask.MASK}", f"ssh {logmask.MASK}"]

    # The schedule: sealed for its future runs, and a run makes a job with the value sealed, not in its body.
    assert schedule.body["Envs"]["HFTOKEN"] == spec.SECRET_PLACEHOLDER
    assert secretbox.unseal(schedule.sealed_secrets) == {"env:HFTOKEN": HF, "env:SSH_KEY": DB,
                                                          "env:WANDB_API_KEY": "w-key"}
    made = {}
    job, why = schedules._start(schedule, datetime.now(UTC), lambda **kwargs: made.update(kwargs) or "job")
    assert (job, why) == ("job", "")
    assert made["body"]["Envs"]["HFTOKEN"] == spec.SECRET_PLACEHOLDER
    assert secretbox.unseal(made["sealed_secrets"])["env:HFTOKEN"] == HF

    # The template version: the value emptied and ticked Secret, so a job from it asks for the value.
    rows = {row["key"]: row for row in version.sections["environment"]["envs"]}
    assert rows["HFTOKEN"]["value"] == "" and rows["HFTOKEN"]["secret"] is True
    assert rows["EPOCHS"]["value"] == "3" and rows["EPOCHS"]["secret"] is False

    # Idempotent: a second run writes nothing.
    before = [(r.body, r.sealed_secrets) for r in Job.objects.order_by("pk")]
    sealed, sections_after = schedule.sealed_secrets, version.sections
    migrate()
    schedule.refresh_from_db()
    version.refresh_from_db()
    assert [(r.body, r.sealed_secrets) for r in Job.objects.order_by("pk")] == before
    assert schedule.sealed_secrets == sealed and version.sections == sections_after


@pytest.mark.django_db
def test_a_sealed_value_that_does_not_open_stops_the_migration_before_writing_the_row(settings):
    from jobs import reseal
    from jobs.models import Job

    team = pf.make_team()
    job = Job.objects.create(workspace=team.alpha, owner=team.users["member"], display_name="w", body=old_body("w"),
                             status="Waiting", sealed_secrets=secretbox.seal({"env:WANDB_API_KEY": "w-key"}))
    settings.DLC_SECRET_BOX_KEY = "not-the-key-it-was-sealed-with"
    with pytest.raises(reseal.KeyMismatch, match=f"job {job.pk}"):
        migrate()
    job.refresh_from_db()
    assert job.body["Envs"]["HFTOKEN"] == HF  # left as it was, to be resealed with the right key


@pytest.mark.django_db
def test_a_sweep_over_a_secret_named_parameter_keeps_its_name_and_placeholders():
    from jobs.models import Job, Sweep, SweepTrial

    team = pf.make_team()
    sweep = Sweep.objects.create(workspace=team.alpha, name="s", parameters=[["HFTOKEN", [HF, DB]], ["LR", ["0.1"]]],
                                 specs=[["HFTOKEN", f"{HF}, {DB}"], ["LR", "0.1"]])
    job = Job.objects.create(workspace=team.alpha, display_name="s-1", body=old_body("s-1"), status="Failed",
                             dlc_job_id="dlc-s-1")
    trial = SweepTrial.objects.create(sweep=sweep, job=job, number=1, values={"HFTOKEN": HF, "LR": "0.1"})

    migrate()
    migrate()  # a second run leaves the placeholders as they are
    sweep.refresh_from_db()
    trial.refresh_from_db()
    job.refresh_from_db()
    assert not plain_anywhere(sweep.parameters, sweep.specs, trial.values, job.body)
    hidden = spec.SECRET_PLACEHOLDER
    assert sweep.parameters == [["HFTOKEN", [hidden, hidden]], ["LR", ["0.1"]]]
    assert sweep.specs == [["HFTOKEN", hidden], ["LR", "0.1"]]
    assert trial.values == {"HFTOKEN": hidden, "LR": "0.1"}
