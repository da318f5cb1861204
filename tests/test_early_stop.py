"""jobs.early_stop: the median stopping rule on hand-made series, its settings' checks (one source for the wizard
and the API), the stop through jobs.lifecycle with its reason on the trial, the sweep page, the job page and in the
audit log; then a sweep run for real on the stack whose bad trial is stopped early while the good ones succeed."""

from __future__ import annotations

import pytest

from jobs import api_sweeps, early_stop
from jobs.early_stop import AFTER_FIELD, GOAL_FIELD, METRIC_FIELD, STEP_FIELD, Settings, decide
from jobs.models import AuditEvent, Job, JobScalar, Sweep, SweepTrial
from tests import portal_fixtures as pf
from tests.support.api import Api

LOSS = Settings("loss", "min", after=3, step=0)
ACC = Settings("acc", "max", after=3, step=0)
# Three succeeded runs whose running averages at step 2 are 0.5, 0.4 and 0.3 (median 0.4); at step 4, 0.4, 0.3, 0.2.
SUCCEEDED = [[(0, 0.6), (2, 0.4), (4, 0.2)], [(0, 0.5), (2, 0.3), (4, 0.1)], [(0, 0.4), (2, 0.2), (4, 0.0)]]


# --- the rule, on hand-made series ----------------------------------------------------------------------------------


def test_a_trial_whose_best_is_worse_than_the_median_of_running_averages_is_stopped():
    found = decide([(0, 0.9), (1, 0.7), (2, 0.45)], SUCCEEDED, LOSS)
    # At its step 2 the succeeded runs averaged (0.6+0.4)/2, (0.5+0.3)/2, (0.4+0.2)/2: median 0.4; its best 0.45.
    assert found == early_stop.Decision(True, 2, 0.45, pytest.approx(0.4), 3)
    assert found.reason("loss") == ("Stopped early: best loss 0.45 at step 2, behind the median 0.4 of 3 "
                                    "succeeded trials")


def test_a_trial_at_or_better_than_the_median_keeps_running():
    assert decide([(0, 0.9), (2, 0.35)], SUCCEEDED, LOSS).stop is False
    # the best so far counts, not the last value: 0.3 at step 1 beats the median though step 2 is worse
    assert decide([(0, 0.9), (1, 0.3), (2, 0.8)], SUCCEEDED, LOSS).stop is False


def test_a_tie_with_the_median_is_not_behind_it():
    succeeded = [[(0, 0.5)], [(0, 0.4)], [(0, 0.3)]]
    assert decide([(0, 0.4)], succeeded, LOSS).stop is False
    assert decide([(0, 0.4)], succeeded, ACC).stop is False
    # an even count: the median is the mean of the middle two
    found = decide([(0, 0.45)], [*succeeded, [(0, 0.6)]], LOSS)
    assert (found.median, found.stop) == (pytest.approx(0.45), False)


def test_max_goal_stops_a_trial_below_the_median():
    succeeded = [[(0, 0.6), (5, 0.8)], [(0, 0.7), (5, 0.9)], [(0, 0.5), (5, 0.7)]]
    assert decide([(0, 0.2), (5, 0.5)], succeeded, ACC) == early_stop.Decision(True, 5, 0.5, pytest.approx(0.7), 3)
    assert decide([(0, 0.2), (5, 0.75)], succeeded, ACC).stop is False


def test_only_points_up_to_the_trials_step_count_in_the_averages():
    # At step 2 the late points (step 4) do not count: the median is 0.4, not the full runs' 0.3.
    assert decide([(2, 0.35)], SUCCEEDED, LOSS).median == pytest.approx(0.4)
    assert decide([(4, 0.35)], SUCCEEDED, LOSS).median == pytest.approx(0.3)


def test_not_enough_succeeded_trials_decides_nothing():
    assert decide([(2, 9.0)], SUCCEEDED[:2], LOSS) is None
    assert decide([(2, 9.0)], SUCCEEDED[:2], Settings("loss", "min", after=2)).stop is True
    # a succeeded trial with no point at or before the step is not one of the N
    late = [[(10, 0.1)], *SUCCEEDED[:2]]
    assert decide([(2, 9.0)], late, LOSS) is None
    assert decide([], SUCCEEDED, LOSS) is None


def test_a_step_below_the_first_step_looked_at_decides_nothing():
    assert decide([(0, 9.0), (2, 9.0)], SUCCEEDED, Settings("loss", "min", after=3, step=3)) is None
    assert decide([(0, 9.0), (3, 9.0)], SUCCEEDED, Settings("loss", "min", after=3, step=3)).stop is True


# --- the settings ---------------------------------------------------------------------------------------------------


def test_a_blank_metric_is_no_early_stopping():
    assert early_stop.parse({METRIC_FIELD: " ", AFTER_FIELD: " ", STEP_FIELD: "", GOAL_FIELD: "max"}) == (None, {})


@pytest.mark.parametrize("given", [{AFTER_FIELD: "5", STEP_FIELD: "7"}, {AFTER_FIELD: "x"}, {STEP_FIELD: 7}])
def test_numbers_without_a_metric_are_an_error_at_the_metric(given):
    # QA: the wizard's Metric empty with After N 5 and Not before step 7 made a sweep without early stopping.
    found, errors = early_stop.parse({METRIC_FIELD: "", **given})
    assert found is None and list(errors) == [METRIC_FIELD]
    assert errors[METRIC_FIELD][0].startswith("Name the metric, or clear these")


def test_an_after_n_the_sweep_can_never_reach_is_an_error_known_at_launch():
    # QA: a 2-trial sweep with AfterSucceeded 10 was accepted; N succeeded and one still running need N + 1 trials.
    found, errors = early_stop.parse({METRIC_FIELD: "loss", AFTER_FIELD: "10"}, trials=2)
    assert found is None and "the sweep has 2 trials" in errors[AFTER_FIELD][0]
    assert "Use at most 1." in errors[AFTER_FIELD][0]
    assert early_stop.parse({METRIC_FIELD: "loss", AFTER_FIELD: "2"}, trials=2)[1][AFTER_FIELD]
    assert early_stop.parse({METRIC_FIELD: "loss", AFTER_FIELD: "1"}, trials=2) == (Settings("loss", "min", 1, 0), {})
    assert early_stop.parse({METRIC_FIELD: "loss", AFTER_FIELD: "10"})[1] == {}, "the trials unknown: not judged"


def test_a_blank_after_n_on_a_sweep_too_small_for_the_default_is_the_most_that_can_fire():
    """Noted in earlier stops: a blank After N was 3 even on a sweep of 2-3 trials, where it can never fire."""
    assert early_stop.parse({METRIC_FIELD: "loss"}, trials=2)[0].after == 1
    assert early_stop.parse({METRIC_FIELD: "loss"}, trials=3)[0].after == 2
    assert early_stop.parse({METRIC_FIELD: "loss"}, trials=4)[0].after == early_stop.DEFAULT_AFTER
    assert early_stop.parse({METRIC_FIELD: "loss"}, trials=1)[0].after == early_stop.DEFAULT_AFTER  # can never fire
    assert early_stop.parse({METRIC_FIELD: "loss"})[0].after == early_stop.DEFAULT_AFTER  # the trials unknown


def test_defaults_and_the_goal_by_the_metrics_name():
    assert early_stop.parse({METRIC_FIELD: "val/loss"}) == (Settings("val/loss", "min", 3, 0), {})
    assert early_stop.parse({METRIC_FIELD: "acc", AFTER_FIELD: "1", STEP_FIELD: "300"}) == (
        Settings("acc", "max", 1, 300), {})
    assert early_stop.parse({METRIC_FIELD: "acc", GOAL_FIELD: "min"})[0].goal == "min"


@pytest.mark.parametrize(("given", "field", "fragment"), [
    ({METRIC_FIELD: "val loss"}, METRIC_FIELD, "'val loss' is not a metric name as METRIC lines print it"),
    ({METRIC_FIELD: "1loss"}, METRIC_FIELD, "starting with a letter or _"),
    ({METRIC_FIELD: "x" * 65}, METRIC_FIELD, "at most 64 characters"),
    ({METRIC_FIELD: "step"}, METRIC_FIELD, "not step"),
    ({METRIC_FIELD: "loss", GOAL_FIELD: "down"}, GOAL_FIELD, "min (lower is better) or max"),
    ({METRIC_FIELD: "loss", AFTER_FIELD: "0"}, AFTER_FIELD, "from 1 to 50; 0 is out of range"),
    ({METRIC_FIELD: "loss", AFTER_FIELD: "51"}, AFTER_FIELD, "from 1 to 50"),
    ({METRIC_FIELD: "loss", AFTER_FIELD: "2.5"}, AFTER_FIELD, "whole number"),
    ({METRIC_FIELD: "loss", STEP_FIELD: "-1"}, STEP_FIELD, "whole number from 0"),
    ({METRIC_FIELD: "loss", STEP_FIELD: "9" * 30}, STEP_FIELD, "whole number"),
    ({METRIC_FIELD: "loss", STEP_FIELD: "²"}, STEP_FIELD, "whole number"),  # a digit to isdigit(), not to int()
])
def test_each_bad_setting_is_an_error_at_its_field(given, field, fragment):
    found, errors = early_stop.parse(given)
    assert found is None and fragment in " ".join(errors[field]), errors


def test_the_api_takes_the_same_rules_at_its_keys():
    assert api_sweeps.early_stopping({"Metric": "acc", "AfterSucceeded": 2, "NotBeforeStep": 10}) == (
        Settings("acc", "max", 2, 10), {})
    found, errors = api_sweeps.early_stopping({"Metric": "loss", "AfterSucceeded": 0, "Goal": 1, "Patience": 3})
    assert found is None and set(errors) == {"EarlyStopping.AfterSucceeded", "EarlyStopping.Goal",
                                             "EarlyStopping.Patience"}
    assert errors["EarlyStopping.Patience"] == [
        "Unknown field; the fields are: Metric, Goal, AfterSucceeded, NotBeforeStep."]
    assert errors["EarlyStopping.AfterSucceeded"] == early_stop.parse(
        {METRIC_FIELD: "loss", AFTER_FIELD: "0"})[1][AFTER_FIELD], "one source of truth"
    assert "whole number" in api_sweeps.early_stopping({"Metric": "loss", "AfterSucceeded": True})[1][
        "EarlyStopping.AfterSucceeded"][0]
    assert "Required" in api_sweeps.early_stopping({"Goal": "min"})[1]["EarlyStopping.Metric"][0]
    assert "Must be an object" in api_sweeps.early_stopping("loss")[1]["EarlyStopping"][0]


@pytest.mark.parametrize(("key", "value"), [("AfterSucceeded", "2"), ("AfterSucceeded", ""), ("NotBeforeStep", " +5 ")])
def test_the_api_takes_json_integers_only_as_its_document_says(key, value):
    # The wizard's text fields take "2"; in JSON a string would hide a client's type error (as run_after's, QA).
    found, errors = api_sweeps.early_stopping({"Metric": "loss", key: value})
    assert found is None and errors == {f"EarlyStopping.{key}": [
        f"{'After N succeeded trials' if key == 'AfterSucceeded' else 'Not before step'} must be a JSON integer "
        f"from {'1 to 50' if key == 'AfterSucceeded' else '0 to 9,007,199,254,740,991'}, not the string {value!r}."]}
    assert api_sweeps.early_stopping({"Metric": "loss", "AfterSucceeded": 2, "NotBeforeStep": 5}) == (
        Settings("loss", "min", 2, 5), {})
    assert early_stop.parse({METRIC_FIELD: "loss", AFTER_FIELD: "2", STEP_FIELD: " +5 "}) == (
        Settings("loss", "min", 2, 5), {}), "the form's text is still read"


# --- the API, the stop, the pages (database, no DLC) ---------------------------------------------------------------


def _sweep(team, early: dict | None = None):
    payload = {"Job": {**pf.BODY, "DisplayName": "es", "UserCommand": "train --q $Q"},
               "Parameters": {"Q": ["a", "b", "c"]}} | ({"EarlyStopping": early} if early is not None else {})
    return Api(team.users["member"]).post(f"/api/v1/sweeps?workspace={team.alpha.pk}", payload)


def test_the_api_creates_a_sweep_with_early_stopping_and_shows_it(team):
    answer = _sweep(team, {"Metric": "loss", "NotBeforeStep": 100})
    assert answer.status_code == 201, answer.json()
    # A blank AfterSucceeded on this 3-trial grid is 2, the most that can fire (3 is the default on larger sweeps).
    assert answer.json()["early_stopping"] == {"Metric": "loss", "Goal": "min", "AfterSucceeded": 2,
                                               "NotBeforeStep": 100}
    sweep = Sweep.objects.get()
    assert (sweep.early_stop_metric, sweep.early_stop_goal, sweep.early_stop_after, sweep.early_stop_step) == (
        "loss", "min", 2, 100)
    bad = _sweep(team, {"Metric": "my loss", "AfterSucceeded": -2})
    assert bad.status_code == 400 and set(bad.json()["errors"]) == {"EarlyStopping.Metric",
                                                                   "EarlyStopping.AfterSucceeded"}
    assert Sweep.objects.count() == 1, "nothing saved"
    assert _sweep(team).json()["early_stopping"] is None
    never = _sweep(team, {"Metric": "loss", "AfterSucceeded": 10})
    assert never.status_code == 400 and "the sweep has 3 trials" in never.json()["errors"][
        "EarlyStopping.AfterSucceeded"][0], "the grid's size, known at launch"


def test_the_wizard_says_numbers_without_a_metric_and_an_unreachable_n_at_their_fields(team):
    from jobs import spec
    from jobs.forms import wizard as glue

    s = spec.inverse({**pf.BODY, "UserCommand": "train --q $Q"})
    s["basic"]["name"] = "es-wizard"
    client = pf.client_for(team.users["member"])

    def post(**early):
        return client.post("/jobs/new", {**glue.sections_to_data(s), "_workspace": team.alpha.pk,
                                         "sweep": "Q = a, b", **early})

    html = post(**{METRIC_FIELD: "", AFTER_FIELD: "5", STEP_FIELD: "7"}).content.decode()
    assert 'id="err-sweep_stop_metric"' in html and "Name the metric, or clear these" in html
    # The messages name the fields by their labels (QA: the label said "After N trials have succeeded").
    assert "After N succeeded trials and Not before step are ignored" in html
    assert '<label for="id_sweep_stop_after">After N succeeded trials</label>' in html
    assert '<label for="id_sweep_stop_step">Not before step</label>' in html
    html = post(**{METRIC_FIELD: "loss", AFTER_FIELD: "10"}).content.decode()
    assert "the sweep has 2 trials" in html and "Use at most 1." in html
    assert not Sweep.objects.exists(), "nothing launched"
    assert post(**{METRIC_FIELD: "loss", AFTER_FIELD: "1"}).status_code == 302
    assert Sweep.objects.get().early_stop_after == 1


@pytest.mark.parametrize("typed", [{METRIC_FIELD: "loss"}, {AFTER_FIELD: "2"}, {GOAL_FIELD: "max"},
                                   {"sweep_trials": "5"}, {"sweep_seed": "7"}])
def test_early_stopping_trials_or_seed_typed_without_a_sweep_are_errors_not_ignored(team, typed):
    """QA: with the Sweep box empty the wizard submits one job, and early stopping (or Trials, Seed) typed beside it
    was dropped without a word. Each is an error at its field, in the summary and the API panel's count; nothing
    is made. Cleared, the one job is submitted."""
    from jobs import spec, wizard
    from jobs.forms import wizard as glue

    s = spec.inverse(dict(pf.BODY))
    s["basic"]["name"] = "one-job"
    client = pf.client_for(team.users["member"])
    data = {**glue.sections_to_data(s), "_workspace": team.alpha.pk, "sweep": ""}
    answer = client.post("/jobs/new", {**data, **typed})
    assert answer.status_code == 200
    [(field, _)] = typed.items()
    html = answer.content.decode()
    assert f'id="err-{field}"' in html and wizard.NO_SWEEP in html
    assert not Job.objects.filter(display_name="one-job").exists(), "nothing made"
    panel = client.post("/jobs/new/preview", {**data, **typed}, HTTP_HX_REQUEST="true").content.decode()
    assert "1 problem left" in panel, "the API panel counts it as the summary does"
    assert client.post("/jobs/new", data).status_code == 302
    assert Job.objects.filter(display_name="one-job").count() == 1


def test_a_stop_goes_through_lifecycle_with_its_reason_on_the_trial_the_pages_and_the_audit_log(team):
    _sweep(team, {"Metric": "loss"})
    trial = SweepTrial.objects.select_related("job", "sweep").get(number=2)
    Job.objects.filter(pk=trial.job_id).update(status="Running", dlc_job_id="dlc-es-2")
    trial.job.refresh_from_db()
    reason = "Stopped early: best loss 0.9 at step 3, behind the median 0.4 of 3 succeeded trials"
    assert early_stop.stop_trial(trial, reason) is True
    assert early_stop.stop_trial(trial, reason) is False, "once"
    trial.refresh_from_db()
    assert trial.stop_reason == reason and trial.stopped_early_at is not None
    job = Job.objects.get(pk=trial.job_id)
    assert job.status == "Stopping" and job.stop_requested_at is not None
    event = AuditEvent.objects.get(job=job, action="stopped")
    assert (event.actor_name, event.details["reason"]) == ("system", reason)
    client = pf.client_for(team.users["viewer"])
    assert reason in client.get(trial.sweep.get_absolute_url()).content.decode()
    page = client.get(job.get_absolute_url()).content.decode()
    assert f'<strong id="stopped-early">{reason}.</strong>' in page
    # QA: once synced, DLC's "stopped by the user" was the status reason under the banner's "Stopped early".
    Job.objects.filter(pk=job.pk).update(status="Stopped", reason_code="JobStoppedByUser",
                                         reason_message="The job was stopped by the user.")
    live = client.get(job.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert f'<div class="muted" id="status-reason">{reason}</div>' in live and "JobStoppedByUser" not in live
    assert Job.objects.get(pk=job.pk).reason_code == "JobStoppedByUser", "DLC's fields as the sync wrote them"
    got = Api(team.users["viewer"]).get(f"/api/v1/sweeps/{trial.sweep_id}").json()
    assert [t["stopped_early"] for t in got["trials"]] == [None, reason, None]


def test_a_trial_that_ended_meanwhile_is_not_stopped_early(team):
    _sweep(team, {"Metric": "loss"})
    trial = SweepTrial.objects.select_related("job").get(number=1)
    Job.objects.filter(pk=trial.job_id).update(status="Succeeded")
    trial.job.refresh_from_db()
    assert early_stop.stop_trial(trial, "Stopped early: ...") is False
    trial.refresh_from_db()
    assert (trial.stop_reason, trial.stopped_early_at) == ("", None)


@pytest.mark.parametrize("end", ["Succeeded", "Failed"])
def test_a_trial_that_ended_on_its_own_after_the_stop_was_asked_never_says_it_was_stopped_early(team, end):
    """QA: trial rs-01 was marked and its stop asked, but DLC said Succeeded (it ended before the StopJob reached
    it): the sweep page, the job page and the API said "Stopped early" beside Succeeded. The mark says so only
    while the job is Stopping or Stopped (early_stop.reason_of), as the mail's and the webhook's reason do."""
    from jobs import notify, notify_email
    from jobs.api_jobs import job_detail_json

    _sweep(team, {"Metric": "loss"})
    trial = SweepTrial.objects.select_related("job", "sweep").get(number=2)
    Job.objects.filter(pk=trial.job_id).update(status="Running", dlc_job_id="dlc-es-2")
    trial.job.refresh_from_db()
    reason = "Stopped early: best loss 0.9 at step 12, behind the median 0.4 of 3 succeeded trials"
    assert early_stop.stop_trial(trial, reason) is True
    client = pf.client_for(team.users["viewer"])
    api = Api(team.users["viewer"])

    def said() -> list[str]:
        job = Job.objects.get(pk=trial.job_id)
        places = {"sweep page": client.get(trial.sweep.get_absolute_url()).content.decode(),
                  "job page": client.get(job.get_absolute_url()).content.decode(),
                  "sweep API": str(api.get(f"/api/v1/sweeps/{trial.sweep_id}").json()["trials"]),
                  # The webhook's end given as Stopped: a Failed end's diagnosis would read DLC.
                  "job API": str(job_detail_json(job)), "webhook": str(notify.payload(job, status="Stopped")),
                  "mail": notify_email._reason(job, job.status)}
        return [where for where, text in places.items() if "Stopped early" in text]

    assert said() == ["sweep page", "job page", "sweep API", "job API", "webhook"], "while Stopping"
    Job.objects.filter(pk=trial.job_id).update(status=end, reason_code="", reason_message="")
    assert said() == []
    trial.refresh_from_db()
    assert trial.stop_reason == reason, "the mark stays, the record of what the console asked"
    Job.objects.filter(pk=trial.job_id).update(status="Stopped", reason_code="JobStoppedByUser")
    assert said() == ["sweep page", "job page", "sweep API", "job API", "webhook", "mail"]


def test_no_dlc_read_while_too_few_trials_have_succeeded(team):
    """The workspace's endpoint is dead: a read would be an error logged, never a stop; the trial is not even read
    (its early_checked_at stays empty) while the rule could not stop it."""
    _sweep(team, {"Metric": "loss", "AfterSucceeded": 2})
    one, two, _three = SweepTrial.objects.select_related("job").order_by("number")
    Job.objects.filter(pk=one.job_id).update(status="Succeeded")
    JobScalar.objects.create(job=one.job, pod_id="p", name="loss", points=[[0, 0.1]], last=0.1, min=0.1, max=0.1,
                             count=1, last_step=0)
    Job.objects.filter(pk=two.job_id).update(status="Running", dlc_job_id="dlc-es-2")
    assert early_stop.check() == []
    two.refresh_from_db()
    assert two.early_checked_at is None
    assert [t.job_id for t in early_stop.candidates()] == [two.job_id]


# --- the race with DLC's end, through the real localdlc -------------------------------------------------------------


def _trial_on_localdlc(ws, name: str, command: str) -> SweepTrial:
    """A sweep of three trials with early stopping on loss after 2: trials 1 and 3 succeeded (their stored loss
    0.5 then 0.2 at step 3: running averages 0.35), trial 2 a job created on localdlc running `command`."""
    from jobs import dlc

    body = {"DisplayName": f"{name}-02", "JobType": "PyTorchJob", "UserCommand": command,
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}]}
    sweep = Sweep.objects.create(workspace=ws, name=name, parameters=[["Q", ["a", "b", "c"]]],
                                 early_stop_metric="loss", early_stop_goal="min", early_stop_after=2)
    for number in (1, 3):
        good = Job.objects.create(workspace=ws, display_name=f"{name}-0{number}", status="Succeeded",
                                  dlc_job_id=f"dlc-{name}-{number}")
        JobScalar.objects.create(job=good, pod_id="p", name="loss", points=[[0, 0.5], [3, 0.2]], last=0.2, min=0.2,
                                 max=0.5, count=2, last_step=3)
        SweepTrial.objects.create(sweep=sweep, job=good, number=number, values={"Q": "a"})
    job = Job.objects.create(workspace=ws, display_name=f"{name}-02", status="Creating", job_type="PyTorchJob",
                             body=body, dlc_job_id=dlc.create_job(ws, body))
    return SweepTrial.objects.create(sweep=sweep, job=job, number=2, values={"Q": "b"})


def _wait_on_dlc(ws, job, done) -> dict:
    """DLC's job once `done(item)` holds, asked every 0.1 s (30 s at most)."""
    import time

    from jobs import dlc

    deadline = time.monotonic() + 30
    while not done(item := dlc.get_job(ws, job.dlc_job_id)):
        assert time.monotonic() < deadline, item["Status"]
        time.sleep(0.1)
    return item


def _settled_last_line(ws, job) -> list[str]:
    """The last line of the job's pod that a read of the check would reach (podlogs.settled: it reads no line
    DLC may not hold yet), as a list: [] while none."""
    from jobs import dlc, podlogs

    return dlc.get_pod_logs(ws, job.dlc_job_id, job.pods[0]["PodId"], max_lines=1,
                            end_time=dlc.api_time(podlogs.settled()))


@pytest.mark.integration
def test_a_trial_dlc_already_ended_is_not_stopped_on_the_rows_stale_running(db, localdlc, tmp_path, settings):
    """QA's repro: the rule reads a bad trial's log while DLC already says Succeeded and the row (a sync behind)
    still says Running. No stop: no mark, no audit event, no StopJob; the sync then writes Succeeded."""
    from jobs import lifecycle, scalars
    from tests.support.waiting import wait_for
    from tests.support.wizard import local_workspace

    ws = local_workspace(localdlc, tmp_path, settings, name="Early")
    trial = _trial_on_localdlc(ws, "race", 'for s in 0 1 2 3; do echo "METRIC step=$s loss=5"; done; sleep 1')
    job, sweep = trial.job, trial.sweep
    lifecycle.apply_remote(job, _wait_on_dlc(ws, job, lambda item: item["Status"] == "Running" and item.get("Pods")))
    _wait_on_dlc(ws, job, lambda item: item["Status"] == "Succeeded")  # not synced: the row still says Running
    wait_for(lambda: _settled_last_line(ws, job) == ["METRIC step=3 loss=5"], timeout=30)
    assert Job.objects.get(pk=job.pk).status == "Running"
    _pod, metrics, _cut = scalars.live(job)
    assert decide(metrics["loss"], early_stop.succeeded_points(sweep.pk, "loss"), early_stop.settings_of(sweep)).stop
    before = localdlc.stats()["calls"]
    assert early_stop.check() == []
    trial.refresh_from_db()
    assert (trial.stop_reason, trial.stopped_early_at) == ("", None)
    assert not AuditEvent.objects.filter(job=job).exists()
    calls = localdlc.stats()["calls"]
    assert calls.get("GetJob", 0) == before.get("GetJob", 0) + 1, "asked DLC once before stopping"
    assert calls.get("StopJob", 0) == before.get("StopJob", 0)
    assert Job.objects.get(pk=job.pk).stop_requested_at is None


@pytest.mark.integration
def test_a_trial_whose_metric_lines_are_followed_by_more_than_a_window_of_other_lines_is_judged_on_them(
        db, localdlc, tmp_path, settings):
    """QA: the check read a running trial's newest LIVE_LINES lines only, so a trial that printed its METRIC lines
    and then more than that of anything else was judged without them: never stopped, however bad. It is read
    forward from where the last cycle stopped (the whole log, a bounded part a cycle), so it is stopped."""
    from jobs import dlc, lifecycle, scalars
    from tests.support.waiting import wait_for
    from tests.support.wizard import local_workspace

    noise = scalars.LIVE_LINES + 1000
    ws = local_workspace(localdlc, tmp_path, settings, name="Early")
    trial = _trial_on_localdlc(ws, "noisy", f'for s in 0 1 2 3; do echo "METRIC step=$s loss=5"; done; '
                                            f'seq 1 {noise}; sleep 60')
    job = trial.job
    try:
        lifecycle.apply_remote(job, _wait_on_dlc(ws, job, lambda item: item["Status"] == "Running"
                                                 and item.get("Pods")))
        wait_for(lambda: _settled_last_line(ws, job) == [str(noise)], timeout=30)
        assert scalars.live(job) == ("", {}, False), "the newest lines hold no METRIC line: the case of the QA walk"
        before = localdlc.stats()["calls"].get("GetPodLogs", 0)
        assert early_stop.check() == [job.pk]
        reads = localdlc.stats()["calls"].get("GetPodLogs", 0) - before
        trial.refresh_from_db()
        assert trial.stop_reason == ("Stopped early: best loss 5 at step 3, behind the median 0.35 of 2 succeeded "
                                     "trials"), trial.stop_reason
        assert Job.objects.get(pk=job.pk).status == "Stopping"
        # Bounded by the read, not by the log: halvings of the pod's range (a minute and more) down to the
        # instant the lines were printed in (logarchive.SHORTEST_RANGE), a call or two each, and the pages read.
        assert reads <= 60, f"{reads} GetPodLogs calls for {noise} lines"
    finally:
        dlc.stop_job(ws, job.dlc_job_id)


# --- the whole way, on the stack ------------------------------------------------------------------------------------

# Good trials print a falling loss and end; the bad one prints a high loss and would run on for a minute.
COMMAND = ('if [ "$Q" = bad ]; then for s in 0 1 2 3; do echo "METRIC step=$s loss=5"; done; sleep 60; '
           'else for s in 0 1 2 3; do echo "METRIC step=$s loss=0.$((5 - s))"; done; fi')


@pytest.mark.integration
def test_a_bad_trial_is_stopped_early_while_the_good_ones_succeed(stack, member, settings):
    """The wizard's POST with early stopping, the worker's CreateJob per trial, localdlc pods printing METRIC lines,
    the sync and the log archive storing the good trials' metrics; the check reads the bad trial's log through the
    real SDK and stops it through the console's stop."""
    from jobs import status as st
    from tests.support.waiting import wait_for
    from tests.support.wizard import form_data
    from tests.test_lifecycle import use_broker
    from tests.test_skeleton_flow import csrf, signed_in_session

    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)  # this process reads the logs too
    web = signed_in_session(stack.url, member.username)
    create_url = f"{stack.url}/jobs/new"
    data = form_data(basic__name="es-e2e", environment__image="registry.example/pytorch:2.3",
                     resources__roles__0__instance_type="ecs.g6.large", environment__command=COMMAND)
    answer = web.post(create_url, data={**data, "sweep": "Q = good1, bad, good2", METRIC_FIELD: "loss",
                                        AFTER_FIELD: "2", "csrfmiddlewaretoken": csrf(web, create_url)},
                      headers={"Referer": create_url})
    sweep = Sweep.objects.get(name="es-e2e")
    assert answer.status_code == 200 and (sweep.early_stop_metric, sweep.early_stop_after) == ("loss", 2)
    good = [t.job for t in sweep.trials.select_related("job").filter(number__in=(1, 3))]
    bad = sweep.trials.select_related("job", "sweep").get(number=2)

    def stopped() -> bool:
        early_stop.check()  # the beat's task runs it every minute; the test does not wait for the beat
        bad.refresh_from_db()
        return bad.stopped_early_at is not None

    with use_broker(stack.redis_url):  # the stop's StopJob task goes to the stack's worker
        wait_for(stopped, timeout=60, interval=0.5)
    assert bad.stop_reason == ("Stopped early: best loss 5 at step 3, behind the median 0.35 of 2 succeeded "
                               "trials"), bad.stop_reason
    wait_for(lambda: Job.objects.get(pk=bad.job_id).status == "Stopped", timeout=30)
    assert [Job.objects.get(pk=j.pk).status for j in good] == ["Succeeded", "Succeeded"]
    assert all(st.is_terminal(s) for s in sweep.trials.values_list("job__status", flat=True))
    page = web.get(f"{stack.url}{sweep.get_absolute_url()}").text
    assert bad.stop_reason in page and "2 Succeeded" in page and "1 Stopped" in page
