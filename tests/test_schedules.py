"""Scheduled jobs (jobs.schedules): next runs across DST and weekday sets, the run task's exactly-once slots,
skips with their reasons, the pages, and (integration) a due schedule's job run by the real beat and worker."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from jobs import schedules
from jobs.schedules import Recurrence, next_run
from tests import portal_fixtures as pf
from tests.support.threads import second_while_first_saves

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# --- next_run -------------------------------------------------------------------------------------------------


def test_every_n_hours_counts_elapsed_time_from_the_anchor_across_a_dst_change():
    every = Recurrence("hourly", every_hours=6, anchor=utc(2026, 3, 28, 22, 0))
    assert next_run(every, utc(2026, 3, 28, 21, 0), BERLIN) == utc(2026, 3, 28, 22, 0)  # the anchor itself
    assert next_run(every, utc(2026, 3, 28, 22, 0), BERLIN) == utc(2026, 3, 29, 4, 0)  # strictly after
    # Berlin skips 02:00-03:00 on 29 March: six hours stay six hours (local 06:00 CEST, not 05:00).
    assert next_run(every, utc(2026, 3, 29, 4, 0, 1), BERLIN) == utc(2026, 3, 29, 10, 0)
    assert next_run(Recurrence("hourly", every_hours=168, anchor=utc(2026, 1, 1)), utc(2026, 1, 20), BERLIN) == \
        utc(2026, 1, 22)


def test_daily_keeps_the_wall_clock_time_across_spring_and_autumn_changes():
    daily = Recurrence("daily", at=time(3, 0))
    assert next_run(daily, utc(2026, 3, 28, 2, 0), BERLIN) == utc(2026, 3, 29, 1, 0)  # 03:00 CEST, 23 h later
    assert next_run(daily, utc(2026, 10, 24, 1, 0), BERLIN) == utc(2026, 10, 25, 2, 0)  # 03:00 CET, 25 h later
    assert next_run(daily, utc(2026, 3, 7, 12, 0), NEW_YORK) == utc(2026, 3, 8, 7, 0)  # 03:00 EDT


def test_a_time_the_clocks_skip_runs_once_an_hour_later_and_a_time_that_repeats_runs_once():
    skipped = Recurrence("daily", at=time(2, 30))
    # 02:30 does not exist in Berlin on 29 March 2026: it runs at 03:30 CEST (01:30 UTC), and once.
    first = next_run(skipped, utc(2026, 3, 28, 12, 0), BERLIN)
    assert first == utc(2026, 3, 29, 1, 30)
    assert next_run(skipped, first, BERLIN) == utc(2026, 3, 30, 0, 30)
    # 02:30 happens twice on 25 October 2026: the first (CEST, 00:30 UTC) runs, the second does not.
    twice = next_run(skipped, utc(2026, 10, 24, 12, 0), BERLIN)
    assert twice == utc(2026, 10, 25, 0, 30)
    assert next_run(skipped, twice, BERLIN) == utc(2026, 10, 26, 1, 30)


def test_weekly_runs_on_the_chosen_weekdays_only():
    mon_thu = Recurrence("weekly", at=time(9, 0), weekdays=(0, 3))
    thursday_10 = datetime(2026, 12, 3, 10, 0, tzinfo=BERLIN)  # a Thursday, after 09:00
    assert next_run(mon_thu, thursday_10, BERLIN) == datetime(2026, 12, 7, 9, 0, tzinfo=BERLIN)
    thursday_8 = datetime(2026, 12, 3, 8, 0, tzinfo=BERLIN)
    assert next_run(mon_thu, thursday_8, BERLIN) == datetime(2026, 12, 3, 9, 0, tzinfo=BERLIN)
    sunday = Recurrence("weekly", at=time(23, 59), weekdays=(6,))
    assert next_run(sunday, datetime(2026, 12, 6, 23, 59, tzinfo=BERLIN), BERLIN) == \
        datetime(2026, 12, 13, 23, 59, tzinfo=BERLIN)
    # Weekdays are the zone's: Monday 00:30 in Berlin is still Sunday in UTC.
    monday = Recurrence("weekly", at=time(0, 30), weekdays=(0,))
    assert next_run(monday, utc(2026, 12, 6, 12, 0), BERLIN) == utc(2026, 12, 6, 23, 30)


def test_recurrences_in_words(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    assert schedules.describe(Recurrence("hourly", every_hours=1)) == "Every hour"
    assert schedules.describe(Recurrence("hourly", every_hours=6)) == "Every 6 hours"
    # Every N hours counts from its anchor: the words say from when, with the UTC offset, not a zone's name.
    winter = Recurrence("hourly", every_hours=6, anchor=utc(2026, 12, 1, 21, 40))
    assert schedules.describe(winter) == "Every 6 hours (from 2026-12-01 22:40 UTC+01:00)"
    assert schedules.describe(Recurrence("hourly", every_hours=1, anchor=utc(2026, 7, 1, 21, 40))) == \
        "Every hour (from 2026-07-01 23:40 UTC+02:00)"
    settings.TIME_ZONE = "UTC"
    assert schedules.describe(winter) == "Every 6 hours (from 2026-12-01 21:40 UTC)"
    settings.TIME_ZONE = "Asia/Kolkata"
    assert schedules.describe(winter) == "Every 6 hours (from 2026-12-02 03:10 UTC+05:30)"
    assert schedules.describe(Recurrence("daily", at=time(2, 5))) == "Daily at 02:05"
    assert schedules.describe(Recurrence("weekly", at=time(2, 0), weekdays=(3, 0))) == "Weekly on Mon, Thu at 02:00"


@pytest.mark.parametrize(("args", "field"), [
    (("yearly",), "kind"),
    (("hourly", "0"), "every_hours"),
    (("hourly", "169"), "every_hours"),
    (("hourly", "6.5"), "every_hours"),
    (("hourly", True), "every_hours"),
    (("hourly", "9" * 5000), "every_hours"),  # int() refuses it with ValueError: a 500 before
    (("daily", None, "24:00"), "at"),
    (("daily", None, "2pm"), "at"),
    (("weekly", None, "02:00", []), "weekdays"),
    (("weekly", None, "02:00", ["mon", "someday"]), "weekdays"),
])
def test_bad_recurrences_are_refused_at_their_field(args, field):
    recurrence, errors = schedules.parse_recurrence(*args)
    assert recurrence is None and list(errors) == [field], errors


def test_weekdays_given_as_one_string_are_told_the_shape():
    recurrence, errors = schedules.parse_recurrence("weekly", None, "02:00", "mon,thu")
    assert recurrence is None and errors == {"weekdays": ['Give the weekdays as a list, e.g. ["mon", "thu"].']}


def test_good_recurrences_parse():
    assert schedules.parse_recurrence("hourly", 168)[0].every_hours == 168
    assert schedules.parse_recurrence("daily", None, "7:05")[0].at == time(7, 5)
    assert schedules.parse_recurrence("weekly", None, "02:00", ["thu", "mon", "Mon"])[0].weekdays == (0, 3)


def test_weekdays_are_day_names_or_cron_numbers_where_one_is_monday_and_zero_or_seven_sunday():
    parse = schedules.parse_recurrence
    assert parse("weekly", None, "02:00", [1, 2])[0].weekdays == (0, 1)  # Monday, Tuesday, as cron counts
    assert parse("weekly", None, "02:00", [0, 7, 6])[0].weekdays == (5, 6)  # Saturday, Sunday
    assert parse("weekly", None, "02:00", ["MONDAY", "Sunday", "wed"])[0].weekdays == (0, 2, 6)
    for bad in (["monkey"], ["mond"], [8], [-1], [True], ["1"], [1.0]):
        recurrence, errors = parse("weekly", None, "02:00", bad)
        assert recurrence is None and list(errors) == ["weekdays"], bad
        assert "0 or 7 = Sunday, 1 = Monday" in errors["weekdays"][0] and "Not a weekday" in errors["weekdays"][0]


def test_the_api_refuses_fields_of_another_kind_and_numbers_given_as_text():
    parse = schedules.parse_recurrence
    assert parse("daily", None, "02:00", None, "* * * * *", from_json=True)[1] == {
        "cron": ["cron is only used when kind is cron."]}
    assert parse("cron", 6, "02:00", ["mon"], "0 2 * * *", from_json=True)[1] == {
        "every_hours": ["every_hours is only used when kind is hourly."],
        "at": ["at is only used when kind is daily or weekly."],
        "weekdays": ["weekdays is only used when kind is weekly."]}
    # What GET shows for the fields a kind does not use (null, []) is not "given".
    assert parse("daily", None, "02:00", [], None, from_json=True)[0].at == time(2, 0)
    for text in ("6", 6.0, True):
        assert list(parse("hourly", text, from_json=True)[1]) == ["every_hours"], text
    assert parse("hourly", 6, from_json=True)[0].every_hours == 6
    # The form's text box gives digits; the form shows every kind's fields, so it may send them all.
    assert parse("hourly", "6", "02:00", ["mon"], "")[0].every_hours == 6



# --- cron ---------------------------------------------------------------------------------------------------


def cron(expression: str) -> Recurrence:
    return Recurrence("cron", cron=expression)


@pytest.mark.parametrize(("expression", "said"), [
    ("61 * * * *", "Bad minute"),  # cronsim's own message, at the field
    ("0 25 * * *", "Bad hour"),
    ("0 0 30 2 *", "That date never occurs: day-of-month 30 is past the last day of each month of the month field "
                   "(2)"),  # 30 February never comes
    ("0 0 31 4 *", "That date never occurs"),  # nor 31 April
    ("0 0 31 APR,JUN *", "That date never occurs"),
    ("0 0 32 * *", "Bad day-of-month"),  # a day no month has: cronsim's words
    ("0 0 * * FUNDAY", "Bad day-of-week"),
    ("* * *", "Give 5 fields"),
    ("0 0 0 * * *", "Give 5 fields"),  # cronsim would take seconds as a sixth field: not cron's
    ("", "Enter a cron expression"),
    (None, "Enter a cron expression"),
    (["*/30", "*", "*", "*", "*"], "Enter a cron expression"),
    ("0 " * 60, "At most 100 characters"),
])
def test_a_cron_expression_that_does_not_parse_is_refused_at_its_field(expression, said):
    recurrence, errors = schedules.parse_recurrence("cron", None, "02:00", None, expression)
    assert recurrence is None and list(errors) == ["cron"] and said in errors["cron"][0], errors


@pytest.mark.parametrize("expression", ["* * * * *", "*/5 * * * *", "0,5 3 * * *", "0,59 1,2 * * *"])
def test_a_cron_expression_whose_runs_are_closer_than_the_minimum_is_refused(settings, expression):
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    recurrence, errors = schedules.parse_recurrence("cron", cron=expression)
    assert recurrence is None and "at least 10 minutes apart" in errors["cron"][0], errors


def test_the_minimum_gap_is_the_setting_and_runs_at_it_are_accepted(settings):
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    assert schedules.parse_recurrence("cron", cron="*/10 * * * *")[0].cron == "*/10 * * * *"
    settings.DLC_SCHEDULE_MIN_MINUTES = 30
    assert "at least 30 minutes" in schedules.parse_recurrence("cron", cron="*/15 * * * *")[1]["cron"][0]
    # A gap that only the wrap to the next day makes (23:55, then 00:00) is found too.
    assert schedules.parse_recurrence("cron", cron="0,55 0,23 * * *")[1]["cron"]


def test_good_cron_expressions_parse_with_names_ranges_lists_steps_and_aliases(settings):
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    for expression in ("*/30 * * * *", "30 2 * * MON-FRI", "0 8,20 1-7 JAN,jul *", "@daily", "@hourly"):
        recurrence, errors = schedules.parse_recurrence("cron", cron=f"  {expression} ")
        assert errors == {} and recurrence.cron == expression and recurrence.at is None
    assert schedules.parse_recurrence("cron", cron="0  2   * * *")[0].cron == "0 2 * * *"


def test_cron_runs_follow_the_expression_in_the_console_zone():
    weekdays = cron("30 2 * * MON-FRI")
    friday = datetime(2026, 12, 4, 3, 0, tzinfo=BERLIN)
    assert next_run(weekdays, friday, BERLIN) == datetime(2026, 12, 7, 2, 30, tzinfo=BERLIN)  # Monday
    assert next_run(cron("@daily"), utc(2026, 12, 1, 12), BERLIN) == utc(2026, 12, 1, 23, 0)  # Berlin midnight
    half = cron("*/30 * * * *")
    assert next_run(half, utc(2026, 12, 1, 12, 0), BERLIN) == utc(2026, 12, 1, 12, 30)  # strictly after


def test_a_cron_time_the_clocks_skip_runs_once_at_the_next_minute_and_a_repeated_time_once():
    at_0230 = cron("30 2 * * *")
    # 02:30 does not exist in Berlin on 29 March 2026: cron runs it at 03:00 CEST (01:00 UTC), then daily again.
    first = next_run(at_0230, utc(2026, 3, 28, 12, 0), BERLIN)
    assert first == utc(2026, 3, 29, 1, 0)
    assert next_run(at_0230, first, BERLIN) == utc(2026, 3, 30, 0, 30)
    # ... and on 8 March 2026 in New York (02:30 EST skipped to 03:00 EDT).
    assert next_run(at_0230, utc(2026, 3, 7, 12, 0), NEW_YORK) == utc(2026, 3, 8, 7, 0)
    # 02:30 happens twice on 25 October 2026: the first (CEST, 00:30 UTC) runs, the second does not.
    twice = next_run(at_0230, utc(2026, 10, 24, 12, 0), BERLIN)
    assert twice == utc(2026, 10, 25, 0, 30)
    assert next_run(at_0230, twice, BERLIN) == utc(2026, 10, 26, 1, 30)
    # Asked from inside the second pass, the slot never goes back to the first pass's time, already gone.
    assert next_run(cron("50 2 * * *"), utc(2026, 10, 25, 1, 45), BERLIN) == utc(2026, 10, 26, 1, 50)


def test_a_cron_step_counts_real_time_across_the_dst_changes():
    half = cron("*/30 * * * *")

    def runs(after, n):
        found = []
        for _ in range(n):
            after = next_run(half, after, BERLIN)
            found.append(after)
        return found

    # Autumn: the repeated hour 02:00-03:00 has both its passes, every 30 real minutes.
    autumn = runs(utc(2026, 10, 24, 23, 50), 6)
    assert autumn == [utc(2026, 10, 25, 0, 0) + timedelta(minutes=30 * k) for k in range(6)]
    assert [r.astimezone(BERLIN).strftime("%H:%M%z") for r in autumn] == [
        "02:00+0200", "02:30+0200", "02:00+0100", "02:30+0100", "03:00+0100", "03:30+0100"]
    # Spring: 01:30 CET is followed by 03:00 CEST, half an hour later; nothing in the skipped hour.
    spring = runs(utc(2026, 3, 29, 0, 20), 3)
    assert spring == [utc(2026, 3, 29, 0, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 30)]
    assert spring[1].astimezone(BERLIN).strftime("%H:%M") == "03:00"


def test_the_cron_preview_lists_the_next_runs_in_the_console_zone_or_says_the_rule(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    runs, problem = schedules.cron_preview("0 9 * * MON", now=utc(2026, 12, 1, 12))
    assert problem is None and [r.isoformat() for r in runs] == [
        "2026-12-07T09:00:00+01:00", "2026-12-14T09:00:00+01:00", "2026-12-21T09:00:00+01:00"]
    assert schedules.cron_preview("61 * * * *") == ([], "Bad minute (minute hour day-of-month month day-of-week).")


def test_cron_recurrences_in_words():
    assert schedules.describe(cron("30 2 * * 1-5")) == "At 02:30 on Monday through Friday (cron 30 2 * * 1-5)"
    assert schedules.describe(cron("@daily")).endswith("(cron @daily)")


def test_cron_with_both_day_fields_restricted_reads_or_as_it_runs(settings):
    settings.TIME_ZONE = "UTC"
    words = schedules.describe(cron("0 0 29 2 1"))
    assert words == "At 00:00 on the 29th day of month or on Monday in February (cron 0 0 29 2 1)"
    assert next_run(cron("0 0 29 2 1"), utc(2026, 12, 1)) == utc(2027, 2, 1)  # a Monday, not a 29th
    assert " or " not in schedules.describe(cron("0 0 * * 1")) + schedules.describe(cron("0 0 */2 * 1"))


@pytest.mark.parametrize("expression", ["1-59/999 * * * *", "*/60 * * * *", "0 */24 * * *", "0 0 */31 * *",
                                        "0 0 * */12 *", "0 0 * * */7"])
def test_a_step_larger_than_its_fields_range_is_refused_with_the_way_to_say_it(expression):
    problem = schedules.cron_problem(expression)
    assert problem and "larger than its range" in problem and "cron implementations differ" in problem
    assert schedules.parse_recurrence("cron", cron=expression)[0] is None


def test_job_names_carry_the_slot_in_the_console_zone_and_fit_the_name_length(settings):
    from jobs import catalog

    settings.TIME_ZONE = "Europe/Berlin"
    assert schedules.job_name("nightly", utc(2026, 7, 1, 0, 30)) == "nightly-20260701-0230"
    long = schedules.job_name("n" * 300, utc(2026, 7, 1, 0, 30))
    assert len(long) == catalog.MAX_NAME_LENGTH and long.endswith("-20260701-0230")


# --- running ----------------------------------------------------------------------------------------------------


def make_schedule(team, *, owner=None, kind="daily", due=None, body=None, **fields):
    from jobs.models import Schedule

    name = fields.pop("name", "nightly")
    values = {"kind": kind, "at": time(2, 0), "every_hours": 6 if kind == "hourly" else None}
    values.update(fields)
    return Schedule.objects.create(
        workspace=team.alpha, owner=owner or team.users["member"], name=name,
        body=body or {**pf.BODY, "DisplayName": "nightly"},
        next_run_at=due or (datetime.now(UTC) - timedelta(minutes=1)), **values)


def runs_of(schedule):
    return list(schedule.runs.order_by("due_at").values_list("job__display_name", "skipped_reason"))


def test_a_due_slot_starts_one_job_named_after_the_slot_and_moves_to_the_next_future_slot(db, settings):
    from jobs.models import AuditEvent, Job

    settings.TIME_ZONE = "UTC"
    team = pf.make_team()
    due = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
    schedule = make_schedule(team, due=due)
    now = due + timedelta(seconds=20)
    assert schedules.run_due(now) == {schedule.pk: "started"}
    assert schedules.run_due(now) == {}  # a second beat tick: not due any more
    job = Job.objects.get(scheduled_run__schedule=schedule)
    assert job.display_name == "nightly-20261201-0200" and job.owner == team.users["member"]
    assert job.body["UserCommand"] == pf.BODY["UserCommand"]
    schedule.refresh_from_db()
    assert schedule.next_run_at == datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    event = AuditEvent.objects.get(job=job)
    assert event.action == "created" and event.actor_name == "member" and event.details["schedule"] == "nightly"


def test_a_slot_reached_twice_starts_one_job(db):
    """Two beats (or a retried task) that both read the schedule while it was due: the second finds the slot's
    ScheduledRun already there and starts nothing."""
    from jobs.models import Job

    team = pf.make_team()
    schedule = make_schedule(team)
    due = schedule.next_run_at
    assert schedules.run_one(schedule.pk) == "started"
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=due)  # what the late beat still saw
    assert schedules.run_one(schedule.pk) == "done-already"
    assert Job.objects.filter(scheduled_run__schedule=schedule).count() == 1
    assert schedule.runs.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at > datetime.now(UTC)


def test_missed_slots_are_one_run_then_the_next_future_slot(db):
    team = pf.make_team()
    now = datetime.now(UTC)
    schedule = make_schedule(team, kind="hourly", every_hours=1, anchor=now - timedelta(days=3, minutes=30),
                             due=now - timedelta(days=3) + timedelta(minutes=30))
    assert schedules.run_due(now) == {schedule.pk: "started"}
    assert schedule.runs.count() == 1
    schedule.refresh_from_db()
    assert now < schedule.next_run_at <= now + timedelta(hours=1)


def test_a_run_is_skipped_while_the_previous_run_is_active_unless_asked_not_to(db):
    from jobs.models import Job

    team = pf.make_team()
    schedule = make_schedule(team)
    schedules.run_one(schedule.pk)
    first = Job.objects.get(scheduled_run__schedule=schedule)
    Job.objects.filter(pk=first.pk).update(status="Running")
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "skipped"
    assert "previous run, job nightly-" in runs_of(schedule)[-1][1]
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=2),
                                                         skip_if_active=False)
    assert schedules.run_one(schedule.pk) == "started"
    Job.objects.filter(scheduled_run__schedule=schedule).update(status="Succeeded")
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=3),
                                                         skip_if_active=True)
    assert schedules.run_one(schedule.pk) == "started"  # the previous run ended


def test_an_owner_who_may_no_longer_create_is_a_skipped_run_and_the_schedule_stays(db):
    from jobs.models import Membership

    team = pf.make_team()
    schedule = make_schedule(team)
    Membership.objects.filter(user=team.users["member"], workspace=team.alpha).update(role=Membership.VIEWER)
    assert schedules.run_due() == {schedule.pk: "skipped"}
    assert runs_of(schedule) == [(None, "The owner, member, may no longer create jobs in this workspace.")]
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.next_run_at > datetime.now(UTC)
    team.users["member"].delete()
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_due() == {schedule.pk: "skipped"}
    assert runs_of(schedule)[-1] == (None, "The schedule's owner no longer has an account.")


def test_a_body_the_workspace_guardrails_now_refuse_is_a_skipped_run_with_the_rule(db):
    from jobs.models import WorkspacePolicy

    team = pf.make_team()
    schedule = make_schedule(team)
    WorkspacePolicy.objects.update_or_create(workspace=team.alpha,
                                             defaults={"allowed_image_prefixes": ["registry.internal/"]})
    assert schedules.run_due() == {schedule.pk: "skipped"}
    reason = runs_of(schedule)[0][1]
    assert reason.startswith("The job no longer passes the workspace's rules: JobSpecs[0].Image") \
        and "registry.internal/" in reason, reason


def test_a_required_tag_the_job_lacks_says_the_way_out_on_the_form_and_the_list(db):
    """QA: the Schedule… form has no Tags field, so its refusal says to clone, fix and schedule the clone; a
    schedule's every skipped run says to edit its configuration, with the link."""
    from jobs.models import WorkspacePolicy

    team = pf.make_team()
    WorkspacePolicy.objects.update_or_create(workspace=team.alpha, defaults={"required_tag_keys": ["cost-centre"]})
    member = pf.client_for(team.users["member"])
    response = member.post(f"/jobs/{team.job.pk}/schedule", {"name": "nightly", "kind": "daily", "at": "02:00"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "requires the tag &#x27;cost-centre&#x27;" in page
    assert 'id="schedule-fix"' in page and f'href="/jobs/new?clone={team.job.pk}"' in page
    response = member.post(f"/jobs/{team.job.pk}/schedule", {"name": "bad name", "kind": "daily", "at": "02:00"})
    assert 'id="schedule-fix"' not in response.content.decode(), "only for the job's own configuration"

    schedule = make_schedule(team, source_job=team.job)  # made before the rule
    assert schedules.run_due() == {schedule.pk: "skipped"}
    url = f"/workspaces/{team.alpha.pk}/schedules"
    page = member.get(url).content.decode()
    assert "Every run is skipped" in page and 'class="schedule-fix-config">edit its configuration</a>' in page
    assert f'href="/jobs/new?schedule={schedule.pk}" class="schedule-fix-config"' in page
    viewer = pf.client_for(team.users["viewer"]).get(url).content.decode()
    assert "Every run is skipped" in viewer and "schedule-fix-config" not in viewer, "a viewer can do nothing about it"
    WorkspacePolicy.objects.filter(workspace=team.alpha).update(required_tag_keys=[])
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_due() == {schedule.pk: "started"}
    assert "Every run is skipped" not in member.get(url).content.decode(), "said while its latest run is skipped"


def test_one_broken_schedule_does_not_keep_the_others_from_running(db):
    team = pf.make_team()
    broken = make_schedule(team, name="broken", kind="weekly", weekdays=[])  # no weekday: next_run raises
    good = make_schedule(team, name="good")
    assert schedules.run_due() == {good.pk: "started"}
    assert broken.runs.count() == 0  # rolled back: tried again next beat


# --- creating ---------------------------------------------------------------------------------------------------


def daily(name="nightly"):
    chosen, errors = schedules.parse_settings(name, "daily", None, "02:00")
    assert not errors
    return chosen


def test_secrets_are_sealed_kept_out_of_the_body_and_given_to_each_run(db):
    from jobs import secretbox
    from jobs.models import Job, Schedule

    team = pf.make_team()
    body = {**pf.BODY, "Envs": {"EPOCHS": "3"}, "SecretEnvs": {"WANDB_API_KEY": "wandb-very-secret"}}
    schedule, errors = schedules.create(team.users["member"], team.alpha, body, daily())
    assert not errors
    row = Schedule.objects.filter(pk=schedule.pk).values().get()
    assert "wandb-very-secret" not in str(row)
    assert row["body"]["Envs"] == {"EPOCHS": "3", "WANDB_API_KEY": "********"}
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "started"
    job = Job.objects.get(scheduled_run__schedule=schedule)
    assert "wandb-very-secret" not in str(job.body)
    assert secretbox.unseal(job.sealed_secrets) == {"env:WANDB_API_KEY": "wandb-very-secret"}


def test_create_checks_the_body_with_the_workspace_rules_and_the_name(db):
    team = pf.make_team()
    bad = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": 0}]}
    schedule, errors = schedules.create(team.users["member"], team.alpha, bad, daily())
    assert schedule is None and list(errors) == ["job.JobSpecs[0].PodCount"], errors
    schedules.create(team.users["member"], team.alpha, pf.BODY, daily())
    schedule, errors = schedules.create(team.users["admin"], team.alpha, pf.BODY, daily())
    assert schedule is None and errors["name"] == ["A schedule of this workspace has this name already."]
    assert schedules.parse_settings("night ly", "daily", None, "02:00")[1]["name"]


def test_a_name_that_differs_only_in_case_is_refused_and_the_database_refuses_twins(db):
    """QA: "Nightly" next to "nightly" was taken, and their jobs' names differed only in case."""
    from django.db import IntegrityError, transaction

    from jobs.models import Schedule

    team = pf.make_team()
    assert schedules.create(team.users["member"], team.alpha, pf.BODY, daily())[0] is not None
    schedule, errors = schedules.create(team.users["member"], team.alpha, pf.BODY, daily("NIGHTLY"))
    assert schedule is None and errors == {"name": ["A schedule of this workspace is named 'nightly': names may "
                                                    "not differ only in case."]}
    assert schedules.create(team.users["other"], team.beta, pf.BODY, daily("NIGHTLY"))[0] is not None, "per workspace"
    # The database holds the rule too (migration 0040; the twins saved before it were renamed there).
    with pytest.raises(IntegrityError), transaction.atomic():
        make_schedule(team, name="Nightly")
    assert Schedule.objects.filter(workspace=team.alpha).count() == 1


def test_one_name_sent_four_times_at_once_makes_one_schedule_and_three_name_errors(transactional_db):
    import threading

    from django.db import connection

    from jobs.models import Schedule

    team = pf.make_team()
    chosen = daily("race")
    start = threading.Barrier(4)
    answers: list[tuple[object, dict]] = []
    failures: list[BaseException] = []

    def create() -> None:
        try:
            start.wait()
            answers.append(schedules.create(team.users["member"], team.alpha, pf.BODY, chosen))
        except BaseException as exc:  # noqa: BLE001 - the IntegrityError a race used to end in (a 500)
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures, failures
    assert sorted(schedule is not None for schedule, _ in answers) == [False, False, False, True]
    assert [errors for schedule, errors in answers if schedule is None] == [{"name": [schedules.NAME_TAKEN]}] * 3
    assert Schedule.objects.filter(workspace=team.alpha, name="race").count() == 1


def test_a_name_taken_between_the_check_and_the_insert_is_a_name_error(db):
    # Deterministic twin of the race above: a real row inserted by another writer right before ours (a
    # pre_save receiver, since the check-to-insert gap of one thread cannot be hit on purpose).
    from django.db.models.signals import pre_save

    from jobs.models import Schedule

    team = pf.make_team()

    def other_writer(sender, instance, **kwargs) -> None:
        if instance.pk is None:
            Schedule.objects.bulk_create([Schedule(**{f.attname: getattr(instance, f.attname)
                                                      for f in Schedule._meta.concrete_fields if not f.primary_key})])

    pre_save.connect(other_writer, sender=Schedule)
    try:
        schedule, errors = schedules.create(team.users["member"], team.alpha, pf.BODY, daily("taken"))
    finally:
        pre_save.disconnect(other_writer, sender=Schedule)
    assert schedule is None and errors == {"name": [schedules.NAME_TAKEN]}
    assert schedules.create(team.users["member"], team.alpha, pf.BODY, daily("free"))[0] is not None, "usable"


def test_names_differing_only_in_case_sent_at_once_make_one_schedule_and_a_name_error(transactional_db):
    """QA: `Team` and `team` sent at once both passed the name check (it ignores case) and both saved: the database
    held names unique as written only. It refuses the second now (migration 0040), and the loser hears what the
    check says. The first waits at its insert for the second (a bounded chance, not a sleep)."""
    from jobs.models import Schedule

    team = pf.make_team()
    answers = second_while_first_saves(
        lambda: schedules.create(team.users["member"], team.alpha, pf.BODY, daily("Team")),
        lambda: schedules.create(team.users["member"], team.alpha, pf.BODY, daily("team")), Schedule)
    # Which one saves is the database's: SQLite queues the second behind the first, PostgreSQL lets it save first.
    (saved, _), (refused, errors) = sorted(answers, key=lambda answer: answer[0] is None)
    assert saved is not None and refused is None
    assert errors == {"name": [f"A schedule of this workspace is named '{saved.name}': names may not differ only "
                               "in case."]}
    assert list(Schedule.objects.filter(workspace=team.alpha).values_list("name", flat=True)) == [saved.name]


def test_disabling_clears_the_next_run_and_enabling_skips_the_slots_missed_meanwhile(db):
    from jobs.models import AuditEvent

    team = pf.make_team()
    schedule = make_schedule(team, due=datetime.now(UTC) - timedelta(days=2))
    schedules.set_enabled(team.users["admin"], schedule, False)
    assert schedules.run_due() == {} and schedule.next_run_at is None
    schedules.set_enabled(team.users["member"], schedule, True)
    assert schedule.next_run_at > datetime.now(UTC) and schedules.run_due() == {}
    assert list(AuditEvent.objects.filter(workspace=team.alpha, details__schedule="nightly")
                .values_list("details__event", flat=True).order_by("id")) == ["schedule-disabled", "schedule-enabled"]


# --- pages ------------------------------------------------------------------------------------------------------


def test_the_schedules_page_lists_recurrence_zone_runs_and_skips(db, settings):
    from jobs.models import Job

    settings.TIME_ZONE = "Europe/Berlin"
    team = pf.make_team()
    schedule = make_schedule(team, kind="weekly", weekdays=[0, 3])
    schedules.run_one(schedule.pk)
    job = Job.objects.get(scheduled_run__schedule=schedule)
    other = make_schedule(team, name="evals", owner=team.users["viewer"])
    schedules.run_one(other.pk)
    page = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    assert "Weekly on Mon, Thu at 02:00 (Europe/Berlin)" in page
    assert job.get_absolute_url() in page and job.display_name in page
    assert "Skipped: The owner, viewer, may no longer create jobs in this workspace." in page
    assert "not all made up" in page
    # A viewer changes nothing but may stop their own schedule: its Disable and Delete, no Edit.
    assert page.count('class="schedule-toggle"') == 1 and ">Disable</button>" in page and "schedule-edit" not in page
    member_page = pf.client_for(team.users["member"]).get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    assert member_page.count('class="schedule-toggle"') == 1  # their own, not the viewer's


def test_every_n_hours_is_shown_from_its_anchor_without_a_zone_and_wall_clock_kinds_with_it(db, settings):
    """QA: the page said "Every 6 hours (UTC)" (or the console's zone), as if the runs kept clock times in that
    zone; they are elapsed hours from the anchor (six hours stay six across a DST change). The list and the API
    say from when it counts, with the UTC offset, and name the zone only for the wall-clock kinds."""
    from tests.support.api import Api

    settings.TIME_ZONE = "Europe/Berlin"
    team = pf.make_team()
    make_schedule(team, name="six", kind="hourly", anchor=utc(2026, 3, 28, 22, 0))
    make_schedule(team, name="nightly", kind="daily")
    page = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    shown = re.findall(r'<dd class="schedule-recurrence">([^<;]*)', page)
    assert sorted(shown) == ["Daily at 02:00 (Europe/Berlin)", "Every 6 hours (from 2026-03-28 23:00 UTC+01:00)"]
    listed = Api(team.users["viewer"]).get("/api/v1/schedules").json()["schedules"]
    assert sorted(s["recurrence_text"] for s in listed) == ["Daily at 02:00",
                                                            "Every 6 hours (from 2026-03-28 23:00 UTC+01:00)"]
    assert {s["time_zone"] for s in listed} == {"Europe/Berlin"}


def test_an_owner_made_viewer_may_disable_and_delete_the_schedule_on_its_page_but_not_enable_or_edit_it(db):
    from jobs.models import Membership

    team = pf.make_team()
    mine = make_schedule(team, due=datetime.now(UTC) + timedelta(hours=1))
    theirs = make_schedule(team, name="admins", owner=team.users["admin"], due=datetime.now(UTC) + timedelta(hours=1))
    Membership.objects.filter(user=team.users["member"], workspace=team.alpha).update(role=Membership.VIEWER)
    owner = pf.client_for(team.users["member"])
    base = f"/workspaces/{team.alpha.pk}/schedules"
    card = re.search(rf'<section class="card schedule" id="schedule-{mine.pk}">.*?</section>',
                     owner.get(base).content.decode(), re.S).group(0)
    assert ">Disable</button>" in card and ">Delete</button>" in card
    assert "schedule-edit" not in card and f"?schedule={mine.pk}" not in card, "no Edit, no Edit configuration"
    # Not another's schedule; not editing their own, nor its configuration.
    assert owner.post(f"{base}/{theirs.pk}/toggle").status_code == 403
    assert owner.post(f"{base}/{theirs.pk}/delete").status_code == 403
    edit = {"name": "renamed", "kind": "daily", "at": "03:00"}
    refused = owner.post(f"{base}/{mine.pk}/edit", edit)
    assert refused.status_code == 403 and b"you may only disable or delete it" in refused.content
    assert owner.get(f"/jobs/new?schedule={mine.pk}").status_code == 403
    assert owner.post(f"{base}/{mine.pk}/toggle").status_code == 302
    mine.refresh_from_db()
    assert not mine.enabled and mine.next_run_at is None and mine.name == "nightly"
    # Disabled, its card offers no Enable: enabling would only make runs that are skipped.
    card = re.search(rf'<section class="card schedule" id="schedule-{mine.pk}">.*?</section>',
                     owner.get(base).content.decode(), re.S).group(0)
    assert "schedule-toggle" not in card and ">Delete</button>" in card
    assert owner.post(f"{base}/{mine.pk}/toggle").status_code == 403
    mine.refresh_from_db()
    assert not mine.enabled
    assert owner.post(f"{base}/{mine.pk}/delete").status_code == 302
    assert not type(mine).objects.filter(pk=mine.pk).exists() and type(mine).objects.filter(pk=theirs.pk).exists()


def test_the_schedules_page_tells_before_any_run_that_an_owner_who_may_not_create_will_be_skipped(db):
    from jobs.models import Membership

    team = pf.make_team()
    stuck = make_schedule(team, name="bob-daily", due=datetime.now(UTC) + timedelta(hours=1))
    make_schedule(team, name="admins", owner=team.users["admin"], due=datetime.now(UTC) + timedelta(hours=1))
    url = f"/workspaces/{team.alpha.pk}/schedules"
    admin, viewer = pf.client_for(team.users["admin"]), pf.client_for(team.users["viewer"])

    def text(client) -> str:
        return " ".join(client.get(url).text.split())  # the template wraps its lines

    assert "schedule-owner-refused" not in text(admin)  # the owner may create: nothing to tell
    Membership.objects.filter(user=team.users["member"], workspace=team.alpha).update(role=Membership.VIEWER)
    said = "The owner, member, may no longer create jobs in this workspace."
    page = text(admin)
    assert page.count("schedule-owner-refused") == 1 and "No runs yet." in page
    assert f"Its runs will be skipped. {said} Disable, delete or take it over" in page
    assert f"{said} An admin of the workspace, or its owner while still a member here, can disable or delete it." \
        in text(viewer)
    # The owner, a viewer now, may still stop it: told so, with Disable and Delete only (schedules.can_stop).
    owner = pf.client_for(team.users["member"])
    assert f"{said} You can disable or delete it, or ask an admin" in text(owner)
    schedules.set_enabled(team.users["admin"], stuck, False)
    assert f"If enabled, its runs would be skipped. {said}" in text(admin)
    # The page tells the beat's own rule: the skipped run says the same.
    schedules.set_enabled(team.users["admin"], stuck, True)
    type(stuck).objects.filter(pk=stuck.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    schedules.run_due()
    assert runs_of(stuck) == [(None, said)]
    Membership.objects.filter(user=team.users["member"], workspace=team.alpha).delete()
    assert f"Its runs will be skipped. {said}" in text(admin)  # removed: the same
    team.users["member"].delete()
    assert "Its runs will be skipped. The schedule&#x27;s owner no longer has an account." in text(admin)


def test_a_scheduled_job_page_names_its_schedule_and_a_job_page_offers_schedule(db):
    from jobs.models import Job

    team = pf.make_team()
    schedule = make_schedule(team)
    schedules.run_one(schedule.pk)
    job = Job.objects.get(scheduled_run__schedule=schedule)
    page = pf.client_for(team.users["viewer"]).get(job.get_absolute_url()).content.decode()
    assert "Started by schedule" in page and ">nightly</a>" in page
    assert 'id="schedule-job"' not in page  # a viewer may not create
    page = pf.client_for(team.users["member"]).get(team.job.get_absolute_url()).content.decode()
    assert "Started by schedule" not in page and f"/jobs/{team.job.pk}/schedule" in page


def test_the_schedule_form_says_each_error_at_its_field(db):
    from jobs.models import Schedule

    team = pf.make_team()
    client = pf.client_for(team.users["member"])
    url = f"/jobs/{team.job.pk}/schedule"
    page = client.get(url).content.decode()
    assert 'value="train-a"' in page and 'id="schedule-zone"' in page
    response = client.post(url, {"name": "bad name", "kind": "weekly", "at": "25:00"})
    assert response.status_code == 200
    errors = {f: response.context["form"].errors.get(f) for f in ("name", "at", "weekdays")}
    assert all(errors.values()), errors
    response = client.post(url, {"name": "nightly", "kind": "hourly", "every_hours": "6"})
    assert response.status_code == 302
    schedule = Schedule.objects.get(name="nightly")
    assert schedule.every_hours == 6 and not schedule.skip_if_active and schedule.source_job == team.job


def test_a_cron_schedule_starts_one_job_per_slot_and_moves_to_its_next_slot(db, settings):
    from jobs.models import Job

    settings.TIME_ZONE = "Europe/Berlin"
    team = pf.make_team()
    due = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    schedule = make_schedule(team, kind="cron", cron="*/30 * * * *", at=None, due=due)
    now = due + timedelta(seconds=20)
    assert schedules.run_due(now) == {schedule.pk: "started"}
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=due)  # a late second beat saw it due
    assert schedules.run_due(now) == {schedule.pk: "done-already"}
    job = Job.objects.get(scheduled_run__schedule=schedule)
    assert job.display_name == "nightly-20261201-1030"  # the slot in Berlin
    assert schedule.runs.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    # Missed slots (three hours of them) are one run, then the next future slot.
    later = schedule.next_run_at + timedelta(hours=3, minutes=5)
    assert schedules.run_due(later) == {schedule.pk: "skipped"}  # the first run's job is still active
    schedule.refresh_from_db()
    assert schedule.runs.count() == 2 and schedule.next_run_at == datetime(2026, 12, 1, 13, 30, tzinfo=UTC)


def test_the_schedule_form_takes_a_cron_expression_with_errors_at_its_field_and_a_preview(db, settings):
    from jobs.models import Schedule

    settings.TIME_ZONE = "Europe/Berlin"
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    team = pf.make_team()
    client = pf.client_for(team.users["member"])
    url = f"/jobs/{team.job.pk}/schedule"
    page = client.get(url).content.decode()
    assert 'value="cron"' in page and 'id="id_cron"' in page and f'hx-get="{url}"' in page
    response = client.post(url, {"name": "often", "kind": "cron", "cron": "*/5 * * * *", "at": "02:00"})
    assert response.status_code == 200
    assert "at least 10 minutes apart" in response.context["form"].errors["cron"][0]
    response = client.post(url, {"name": "bad", "kind": "cron", "cron": "61 * * * *"})
    assert response.context["form"].errors["cron"] == ["Bad minute (minute hour day-of-month month day-of-week)."]
    # Without JS, a form sent back with another field's error still previews the expression's next runs.
    response = client.post(url, {"name": "bad name", "kind": "cron", "cron": "0 9 * * MON"})
    assert list(response.context["form"].errors) == ["name"]
    assert len(response.context["cron_runs"]) == 3 and 'id="cron-preview"' in response.content.decode()
    assert re.search(r"Next runs: <time[^>]*>Mon \d{4}-\d\d-\d\d 09:00</time>", response.content.decode())
    # With htmx, the preview alone, as it is typed.
    preview = client.get(url, {"cron": "0 9 * * MON"}, HTTP_HX_REQUEST="true").content.decode()
    assert preview.startswith('<div id="cron-preview"') and preview.count("<time ") == 3 and "Europe/Berlin" in preview
    refused = client.get(url, {"cron": "* * * * *"}, HTTP_HX_REQUEST="true").content.decode()
    assert "at least 10 minutes apart" in refused and "<form" not in refused
    # An invalid expression is said once, at its field (in the preview's place); no preview of it.
    page = client.post(url, {"name": "bad", "kind": "cron", "cron": "61 * * * *"}).content.decode()
    assert page.count("Bad minute") == 1 and "Next runs" not in page
    assert re.search(r'<div id="cron-preview"[^>]*><div class="error">Bad minute', page)
    assert '<div class="error">' in refused and "Next runs" not in refused
    response = client.post(url, {"name": "weekday-mornings", "kind": "cron", "cron": " 0 9 * * MON-FRI ",
                                 "at": "02:00", "skip_if_active": "on"})
    assert response.status_code == 302
    schedule = Schedule.objects.get(name="weekday-mornings")
    assert schedule.kind == "cron" and schedule.cron == "0 9 * * MON-FRI" and schedule.at is None
    local = schedule.next_run_at.astimezone(BERLIN)
    assert (local.hour, local.minute) == (9, 0) and local.weekday() < 5
    listing = client.get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    assert '<code>0 9 * * MON-FRI</code>' in listing
    assert "At 09:00 on Monday through Friday (cron 0 9 * * MON-FRI) (Europe/Berlin)" in listing
    assert local.strftime("%Y-%m-%d %H:%M") in listing  # the next run, in the console's zone


def test_scheduling_a_job_with_a_secret_asks_for_it_again(db):
    from jobs import secretbox
    from jobs.models import Schedule

    team = pf.make_team()
    source = pf.make_job(team.alpha, team.users["member"], "with-secret")
    source.body = {**pf.BODY, "DisplayName": "with-secret", "Envs": {"HF_TOKEN": "********"}}
    source.save(update_fields=["body"])
    client = pf.client_for(team.users["member"])
    url = f"/jobs/{source.pk}/schedule"
    response = client.post(url, {"name": "nightly", "kind": "daily", "at": "02:00"})
    assert response.status_code == 200 and response.context["form"].errors.get("secret_env__HF_TOKEN")
    response = client.post(url, {"name": "nightly", "kind": "daily", "at": "02:00",
                                 "secret_env__HF_TOKEN": "hf-secret"})
    assert response.status_code == 302, response.context["form"].errors
    schedule = Schedule.objects.get(name="nightly")
    assert secretbox.unseal(schedule.sealed_secrets) == {"env:HF_TOKEN": "hf-secret"}
    assert "hf-secret" not in client.get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()


def test_a_deleted_schedules_jobs_still_say_which_schedule_started_them(db):
    """The job's run stays with the schedule's name (the schedule NULL); a new schedule of the same name, its
    page, its API and its run ignore those runs, and its own slot is still run once."""
    from jobs.models import Job, ScheduledRun

    team = pf.make_team()
    schedule = make_schedule(team)
    schedules.run_one(schedule.pk)
    job = Job.objects.get(scheduled_run__schedule=schedule)
    Job.objects.filter(pk=job.pk).update(status="Running")
    type(schedule).objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "skipped"  # the previous run is still running
    client = pf.client_for(team.users["member"])
    answer = client.post(f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/delete")
    assert answer.status_code == 302 and not type(schedule).objects.filter(pk=schedule.pk).exists()

    run = ScheduledRun.objects.get(job=job)
    assert run.schedule is None and run.schedule_name == "nightly"
    assert ScheduledRun.objects.count() == 1, "the skipped run, which nothing could show any more, went"
    page = client.get(job.get_absolute_url()).content.decode()
    assert re.search(r'id="scheduled-by">Started by schedule nightly <span class="muted">\(deleted\)</span>, the run '
                     r"due <time", page), page[page.find("scheduled-by") - 200:][:600]
    assert "/schedules#schedule-" not in page

    again = make_schedule(team)  # the same name, and the deleted one's job is still running
    assert schedules.run_one(again.pk) == "started"  # so no "previous run still running": not its run
    assert again.runs.count() == 1 and ScheduledRun.objects.count() == 2
    listing = client.get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    assert f'href="{job.get_absolute_url()}"' not in listing
    assert f'href="{again.runs.get().job.get_absolute_url()}"' in listing
    from tests.test_api_schedules import call

    shown = call(team.users["member"], "get", f"/api/v1/schedules/{again.pk}").json()
    assert [r["job"] for r in shown["runs"]] == [again.runs.get().job_id]


def test_runs_of_deleted_schedules_do_not_collide_and_a_live_slot_is_still_run_once(db):
    """(schedule, due_at) is unique; NULL schedules are distinct on SQLite and PostgreSQL alike."""
    from jobs.models import Job, ScheduledRun

    team = pf.make_team()
    due = datetime.now(UTC) - timedelta(minutes=1)
    for name in ("first", "second"):
        schedule = make_schedule(team, name=name, due=due)
        assert schedules.run_one(schedule.pk) == "started"
        schedules.delete(team.users["member"], schedule)
    orphans = ScheduledRun.objects.filter(schedule__isnull=True)
    assert sorted(orphans.values_list("schedule_name", flat=True)) == ["first", "second"]
    assert len({r.due_at for r in orphans}) == 1 and Job.objects.filter(scheduled_run__in=orphans).count() == 2

    live = make_schedule(team, name="live", due=due)
    assert schedules.run_one(live.pk) == "started"
    type(live).objects.filter(pk=live.pk).update(next_run_at=due)  # a late beat that still saw the slot due
    assert schedules.run_one(live.pk) == "done-already"
    assert live.runs.count() == 1 and ScheduledRun.objects.count() == 3


@pytest.mark.django_db(transaction=True)
def test_the_migration_names_existing_runs_after_their_schedule():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("jobs", "0018_job_run_after")], [("jobs", "0019_schedule_runs_kept")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        workspace = old.get_model("jobs", "Workspace").objects.create(name="W", backend="local")
        schedule = old.get_model("jobs", "Schedule").objects.create(
            workspace=workspace, name="nightly", body={}, kind="daily", at=time(2, 0))
        old.get_model("jobs", "ScheduledRun").objects.create(schedule=schedule, due_at=datetime.now(UTC))
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        assert list(new.get_model("jobs", "ScheduledRun").objects.values_list("schedule_name", flat=True)) == \
            ["nightly"]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


# --- the beat task, for real --------------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_due_schedule_is_run_by_the_real_beat_and_its_job_succeeds_on_localdlc(stack, member, workspace):
    from jobs.models import Schedule, ScheduledRun
    from tests.support.waiting import wait_for
    from tests.test_lifecycle import job_body
    from tests.test_sync import status_of

    schedule = Schedule.objects.create(
        workspace=workspace, owner=member, name="beat", body=job_body("echo scheduled"), kind="hourly",
        every_hours=1, next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    # The stack's beat looks every DLC_SCHEDULE_INTERVAL (2 s in tests/conftest.py); its worker starts the job.
    run = wait_for(lambda: ScheduledRun.objects.filter(schedule=schedule, job__isnull=False).first(), timeout=30,
                   what="the beat ran the schedule")
    wait_for(lambda: status_of(run.job) == "Succeeded", timeout=60, what="the scheduled job succeeded")
    schedule.refresh_from_db()
    assert schedule.runs.count() == 1 and schedule.next_run_at > datetime.now(UTC)
    assert run.job.display_name.startswith("beat-")


@pytest.mark.integration
def test_a_stranded_schedule_taken_over_by_an_admin_is_run_by_the_real_beat_as_the_admin(stack, member, workspace):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, Schedule, ScheduledRun
    from tests.support.waiting import wait_for
    from tests.test_lifecycle import job_body
    from tests.test_sync import status_of

    admin = get_user_model().objects.create_user("boss", password=None)
    Membership.objects.create(user=admin, workspace=workspace, role=Membership.ADMIN)
    # Not due yet: the stack's beat must not reach it before the take-over.
    schedule = Schedule.objects.create(
        workspace=workspace, owner=member, name="handed", body=job_body("echo handed over"), kind="hourly",
        every_hours=1, next_run_at=datetime.now(UTC) + timedelta(days=1))
    Membership.objects.filter(user=member, workspace=workspace).update(role=Membership.VIEWER)  # stranded
    answer = pf.client_for(admin).post(f"/workspaces/{workspace.pk}/schedules/{schedule.pk}/take-over")
    assert answer.status_code == 302
    schedule.refresh_from_db()
    assert schedule.owner == admin and schedule.enabled, "nothing sealed: it stays enabled"
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    run = wait_for(lambda: ScheduledRun.objects.filter(schedule=schedule).select_related("job").first(), timeout=30,
                   what="the beat ran the schedule")
    assert run.job is not None, run.skipped_reason
    assert run.job.owner == admin and run.job.display_name.startswith("handed-")
    wait_for(lambda: status_of(run.job) == "Succeeded", timeout=60, what="the scheduled job succeeded")


@pytest.mark.integration
def test_two_beats_at_once_start_one_job_for_the_slot(stack, member, workspace):
    """Two run_one calls in two threads (two connections) on the same due slot, while the stack's own beat may
    be a third: the database serializes them (row lock / SQLite's immediate transactions) and the unique
    ScheduledRun backs that up, so the slot gets one job."""
    import threading

    from django.db import connection

    from jobs.models import Job, Schedule
    from tests.test_lifecycle import job_body, use_broker

    schedule = Schedule.objects.create(
        workspace=workspace, owner=member, name="twice", body=job_body("echo once"), kind="daily", at=time(2, 0),
        next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    barrier = threading.Barrier(2)
    outcomes: list[str | None] = []

    def beat() -> None:
        try:
            barrier.wait(timeout=5)
            outcomes.append(schedules.run_one(schedule.pk))
        finally:
            connection.close()

    with use_broker(stack.redis_url):  # the job's submit goes to the stack's worker, not to a Redis elsewhere
        threads = [threading.Thread(target=beat) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert len(outcomes) == 2 and outcomes.count("started") <= 1, outcomes
    assert Job.objects.filter(scheduled_run__schedule=schedule).count() == 1
    assert schedule.runs.count() == 1
    # The job ends and its log is archived before the test's teardown empties the tables: the stack's worker and
    # sync still writing its rows then deadlocked PostgreSQL's TRUNCATE once (a CI run).
    from tests.support.waiting import wait_for

    wait_for(lambda: Job.objects.filter(scheduled_run__schedule=schedule, logs_archived_at__isnull=False).exists(),
             timeout=60, what="the slot's job ended and its log archived")


def test_the_schedules_page_reads_the_runs_of_all_schedules_at_once(db):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    team = pf.make_team()
    client = pf.client_for(team.users["member"])
    url = f"/workspaces/{team.alpha.pk}/schedules"

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert client.get(url).status_code == 200
        return len(seen)

    schedules.run_one(make_schedule(team, name="first").pk)
    one = queries()
    for n in range(4):
        schedules.run_one(make_schedule(team, name=f"more{n}").pk)
    # Other owners (one no longer a member), whose right to create jobs the page tells: not one query each either.
    for owner in ("admin", "viewer", "other"):
        schedules.run_one(make_schedule(team, name=f"by-{owner}", owner=team.users[owner]).pk)
    assert queries() == one, "one query per schedule for its runs or its owner's role (N+1)"


# --- editing --------------------------------------------------------------------------------------------------


def weekly_settings(name="nightly", at="03:30", days=("mon", "thu"), skip=True):
    chosen, errors = schedules.parse_settings(name, "weekly", None, at, list(days), skip)
    assert not errors
    return chosen


def test_an_edit_changes_name_timing_and_skip_and_keeps_the_job_secrets_runs_and_enabled_state(db, settings):
    from jobs.models import AuditEvent, Schedule

    settings.TIME_ZONE = "Europe/Berlin"
    team = pf.make_team()
    body = {**pf.BODY, "SecretEnvs": {"WANDB_API_KEY": "wandb-very-secret"}}
    schedule, errors = schedules.create(team.users["member"], team.alpha, body, daily())
    assert not errors
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(minutes=1))
    assert schedules.run_one(schedule.pk) == "started"
    schedule.refresh_from_db()
    kept = {"body": schedule.body, "sealed_secrets": schedule.sealed_secrets, "hints": schedule.hints}
    before = datetime.now(UTC)
    assert schedules.edit(team.users["admin"], schedule, weekly_settings("weekly-evals", skip=False)) == {}
    after = datetime.now(UTC)
    row = Schedule.objects.get(pk=schedule.pk)
    assert (row.name, row.kind, row.at, row.weekdays, row.skip_if_active, row.enabled, row.every_hours, row.cron) \
        == ("weekly-evals", "weekly", time(3, 30), [0, 3], False, True, None, "")
    # The job and its secrets stay; its runs' name (DisplayName, the next run's job name) follows the schedule's.
    kept["body"] = {**kept["body"], "DisplayName": schedules.job_name("weekly-evals", row.next_run_at)}
    assert {"body": row.body, "sealed_secrets": row.sealed_secrets, "hints": row.hints} == kept
    assert row.runs.count() == 1, "its run history stays with it"
    # The next run is the new timing's first slot after the save, as a create computes the first one.
    assert next_run(row.recurrence, before) <= row.next_run_at <= next_run(row.recurrence, after)
    local = row.next_run_at.astimezone(BERLIN)
    assert (local.weekday() in (0, 3), local.hour, local.minute) == (True, 3, 30)
    assert schedule.name == "weekly-evals" and schedule.next_run_at == row.next_run_at, "the caller's copy too"
    event = AuditEvent.objects.filter(details__event="schedule-edited").get()
    assert (event.actor_name, event.details["schedule"]) == ("admin", "weekly-evals")
    assert event.details["changes"] == {
        "name": {"from": "nightly", "to": "weekly-evals"},
        "recurrence": {"from": "Daily at 02:00", "to": "Weekly on Mon, Thu at 03:30"},
        "skip_if_active": {"from": True, "to": False}}
    # A disabled schedule stays disabled: no next run.
    schedules.set_enabled(team.users["member"], row, False)
    assert schedules.edit(team.users["member"], row, daily("weekly-evals")) == {}
    row.refresh_from_db()
    assert (row.kind, row.enabled, row.next_run_at) == ("daily", False, None)


def test_an_edit_does_not_run_the_slot_that_passed_while_editing(db):
    """The page was opened before the slot came, and saved after: the slot is not run late, the next one is the
    new timing's (and a rename alone still moves past the passed slot)."""
    from jobs.models import Schedule

    team = pf.make_team()
    for name, chosen in (("retimed", weekly_settings("retimed")), ("renamed", daily("renamed-now"))):
        schedule = make_schedule(team, name=name, due=datetime.now(UTC) - timedelta(minutes=5))
        assert schedules.edit(team.users["member"], schedule, chosen) == {}
        row = Schedule.objects.get(pk=schedule.pk)
        assert row.next_run_at > datetime.now(UTC), name
    assert schedules.run_due() == {}
    assert not Schedule.objects.filter(runs__isnull=False).exists()


def test_an_edit_from_an_old_page_keeps_what_changed_since(db):
    """The edit reads the schedule again, locked: a disable made since stays, and a slot the beat ran since is not
    run again."""
    from jobs.models import Schedule

    team = pf.make_team()
    page_copy = make_schedule(team)  # what the edit form was built from: enabled, its slot due
    schedules.set_enabled(team.users["admin"], Schedule.objects.get(pk=page_copy.pk), False)
    assert schedules.edit(team.users["member"], page_copy, daily("nightly")) == {}
    row = Schedule.objects.get(pk=page_copy.pk)
    assert (row.enabled, row.next_run_at) == (False, None) and page_copy.enabled is False

    ran = make_schedule(team, name="ran")
    page_copy = Schedule.objects.get(pk=ran.pk)  # still due
    assert schedules.run_one(ran.pk) == "started"
    moved = Schedule.objects.get(pk=ran.pk).next_run_at
    assert schedules.edit(team.users["member"], page_copy, daily("ran-renamed")) == {}
    assert Schedule.objects.get(pk=ran.pk).next_run_at == moved  # same timing: the slot after the one that ran
    assert schedules.run_due() == {} and ran.runs.count() == 1


def test_every_n_hours_counts_from_the_edit_when_its_hours_change_and_a_rename_keeps_its_slots(db):
    from jobs.models import Schedule

    team = pf.make_team()
    anchor = datetime.now(UTC) - timedelta(hours=2, minutes=30)
    schedule = make_schedule(team, kind="hourly", every_hours=6, anchor=anchor, due=anchor + timedelta(hours=6))
    assert schedules.edit(team.users["member"], schedule, schedules.parse_settings("six", "hourly", 6)[0]) == {}
    row = Schedule.objects.get(pk=schedule.pk)
    assert (row.anchor, row.next_run_at) == (anchor, anchor + timedelta(hours=6)), "a rename keeps the slots"
    before = datetime.now(UTC)
    assert schedules.edit(team.users["member"], row, schedules.parse_settings("four", "hourly", 4)[0]) == {}
    row = Schedule.objects.get(pk=schedule.pk)
    assert before <= row.anchor and row.next_run_at == row.anchor + timedelta(hours=4)


def test_an_edit_refuses_a_name_another_schedule_has_and_takes_its_own_in_another_case(db):
    from jobs.models import Schedule

    team = pf.make_team()
    schedule = make_schedule(team)
    make_schedule(team, name="evals")
    assert schedules.edit(team.users["member"], schedule, daily("evals")) == {"name": [schedules.NAME_TAKEN]}
    assert schedules.edit(team.users["member"], schedule, daily("EVALS")) == {
        "name": ["A schedule of this workspace is named 'evals': names may not differ only in case."]}
    assert Schedule.objects.get(pk=schedule.pk).name == "nightly"
    assert schedules.edit(team.users["member"], schedule, daily("NIGHTLY")) == {}, "its own name in another case"


def test_a_rename_racing_another_to_the_same_name_is_a_name_error(db):
    # As test_a_name_taken_between_the_check_and_the_insert_is_a_name_error: a real row given the name by another
    # writer right before our save (a pre_save receiver: the gap of one thread cannot be hit on purpose).
    from django.db.models.signals import pre_save

    from jobs.models import Schedule

    team = pf.make_team()
    schedule, other = make_schedule(team), make_schedule(team, name="other")

    def other_writer(sender, instance, **kwargs) -> None:
        if instance.pk == schedule.pk:
            Schedule.objects.filter(pk=other.pk).update(name="taken")

    pre_save.connect(other_writer, sender=Schedule)
    try:
        errors = schedules.edit(team.users["member"], schedule, daily("taken"))
    finally:
        pre_save.disconnect(other_writer, sender=Schedule)
    assert errors == {"name": [schedules.NAME_TAKEN]}
    assert Schedule.objects.get(pk=schedule.pk).name == "nightly" and schedule.name == "nightly"


def test_two_schedules_renamed_at_once_to_names_differing_only_in_case_keep_one_and_a_name_error(
        transactional_db):
    """As above, for two renames: the database refuses the second (migration 0040) and the error says so as the
    check does; the refused schedule keeps its name."""
    from jobs.models import Schedule

    team = pf.make_team()
    first, second = make_schedule(team, name="first"), make_schedule(team, name="second")
    answers = second_while_first_saves(lambda: schedules.edit(team.users["member"], first, daily("Team")),
                                       lambda: schedules.edit(team.users["member"], second, daily("team")), Schedule)
    names = dict(Schedule.objects.filter(workspace=team.alpha).values_list("pk", "name"))
    refused = first if answers[0] else second
    taken = names[second.pk if refused is first else first.pk]
    assert sorted(bool(errors) for errors in answers) == [False, True] and taken in ("Team", "team")
    assert (answers[0] or answers[1]) == {"name": [f"A schedule of this workspace is named '{taken}': names may not "
                                                   "differ only in case."]}
    assert names[refused.pk] == refused.name


def test_an_edit_racing_the_beat_leaves_one_run_for_the_slot_and_the_new_timing(transactional_db):
    """The beat's run_one holds the schedule (its row lock on PostgreSQL, SQLite's write transaction) while it
    records the due slot; an edit sent meanwhile, from another connection, waits for it, then moves the schedule
    to the new timing's next slot. The slot is run once, and the beat's next slot (of the old timing) does not
    overwrite the edit's."""
    from jobs.models import Schedule, ScheduledRun

    team = pf.make_team()
    # The viewer's schedule: its run is a skip (may not create jobs), so no job is sent to a worker.
    schedule = make_schedule(team, owner=team.users["viewer"])
    page_copy = Schedule.objects.get(pk=schedule.pk)
    beat, edit = second_while_first_saves(
        lambda: schedules.run_one(schedule.pk),
        lambda: schedules.edit(team.users["admin"], page_copy, weekly_settings()),
        ScheduledRun, when=lambda run: run.pk is None)  # the beat about to record the slot's run
    outcomes = {"beat": beat, "edit": edit}
    assert outcomes == {"beat": "skipped", "edit": {}}
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.runs.count() == 1 and row.kind == "weekly"
    assert row.next_run_at > datetime.now(UTC) - timedelta(seconds=5)
    assert row.next_run_at == next_run(row.recurrence, row.updated_at - timedelta(seconds=1)), "the edit's slot"
    assert schedules.run_due() == {} and row.runs.count() == 1


def test_a_disable_sent_while_an_edit_saves_is_not_undone_by_the_edit(transactional_db):
    """The edit holds the schedule's row from its read to its save, so a disable sent meanwhile applies after it
    (and stays) instead of being overwritten by the edit's copy. The toggle is given a bounded chance to get in
    between (a wait on an event, not a sleep): with the lock it cannot, and the outcome is the same either way."""
    from jobs.models import Schedule

    team = pf.make_team()
    schedule = make_schedule(team, due=datetime.now(UTC) + timedelta(days=1))
    # Without the lock the disable lands while the edit waits at its save, and the edit's save would undo it.
    edited, _ = second_while_first_saves(
        lambda: schedules.edit(team.users["member"], Schedule.objects.get(pk=schedule.pk), weekly_settings()),
        lambda: schedules.set_enabled(team.users["admin"], Schedule.objects.get(pk=schedule.pk), False),
        Schedule)
    assert edited == {}
    row = Schedule.objects.get(pk=schedule.pk)
    assert (row.kind, row.enabled, row.next_run_at) == ("weekly", False, None)


def test_the_edit_page_is_prefilled_asks_no_secret_and_says_errors_at_their_fields(db, settings):
    from jobs.models import Schedule

    settings.TIME_ZONE = "Europe/Berlin"
    settings.DLC_SCHEDULE_MIN_MINUTES = 10
    team = pf.make_team()
    body = {**pf.BODY, "Envs": {"HF_TOKEN": "********"}}
    schedule = make_schedule(team, kind="weekly", weekdays=[0, 3], at=time(2, 15), body=body,
                             due=datetime.now(UTC) + timedelta(days=1))
    make_schedule(team, name="evals", due=datetime.now(UTC) + timedelta(days=1))
    client = pf.client_for(team.users["member"])
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/edit"
    page = client.get(url).content.decode()
    assert 'value="nightly"' in page and 'value="02:15"' in page and 'id="schedule-zone"' in page
    assert re.search(r'value="weekly"[^>]*checked', page) and re.search(r'value="mon"[^>]*checked', page)
    assert re.search(r'value="thu"[^>]*checked', page) and not re.search(r'value="tue"[^>]*checked', page)
    assert re.search(r'name="skip_if_active"[^>]*checked', page)
    assert 'type="password"' not in page and "secret_env__" not in page, "no secret is asked again"
    assert f'hx-get="{url}"' in page
    for data, field, said in (
            ({"name": "bad name", "kind": "weekly", "at": "25:00"}, "name", "Only ASCII letters"),
            ({"name": "evals", "kind": "daily", "at": "02:00"}, "name", schedules.NAME_TAKEN),
            ({"name": "nightly", "kind": "weekly", "at": "02:00"}, "weekdays", "Choose at least one weekday."),
            ({"name": "nightly", "kind": "hourly", "every_hours": "200"}, "every_hours", "from 1 to 168"),
            ({"name": "nightly", "kind": "cron", "cron": "*/5 * * * *"}, "cron", "at least 10 minutes apart")):
        response = client.post(url, data)
        assert response.status_code == 200, data
        assert said in " ".join(response.context["form"].errors[field]), (data, response.context["form"].errors)
    row = Schedule.objects.get(pk=schedule.pk)
    assert (row.name, row.kind, row.at) == ("nightly", "weekly", time(2, 15)), "nothing saved"
    preview = client.get(url, {"cron": "0 9 * * MON"}, HTTP_HX_REQUEST="true").content.decode()
    assert preview.startswith('<div id="cron-preview"') and preview.count("<time ") == 3
    response = client.post(url, {"name": "mornings", "kind": "cron", "cron": "0 9 * * MON-FRI", "at": "02:00"},
                           follow=True)
    assert response.redirect_chain == [(f"/workspaces/{team.alpha.pk}/schedules", 302)]
    row.refresh_from_db()
    assert (row.name, row.kind, row.cron, row.at, row.weekdays, row.skip_if_active) == (
        "mornings", "cron", "0 9 * * MON-FRI", None, [], False)
    local = row.next_run_at.astimezone(BERLIN)
    listing = response.content.decode()
    assert f"Schedule mornings saved: At 09:00 on Monday through Friday (cron 0 9 * * MON-FRI); next run " \
           f"{local:%Y-%m-%d %H:%M} (Europe/Berlin)." in listing
    assert '<code>0 9 * * MON-FRI</code>' in listing
    assert row.body == {**body, "DisplayName": schedules.job_name("mornings", row.next_run_at)}
    # A cron schedule's edit page previews its expression's next runs without typing.
    page = client.get(url).content.decode()
    assert re.search(r'<div id="cron-preview"[^>]*><div class="help">Next runs: <time', page)


def test_the_edit_page_points_to_edit_configuration_for_the_job_it_runs(db):
    """It said to schedule another job and delete this schedule: no longer the way since Edit configuration."""
    team = pf.make_team()
    schedule = make_schedule(team, due=datetime.now(UTC) + timedelta(days=1))
    page = pf.client_for(team.users["member"]).get(
        f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/edit").content.decode()
    assert f'href="/jobs/new?schedule={schedule.pk}" id="schedule-edit-config">Edit configuration</a>' in page
    assert "delete this schedule" not in page


def test_the_edit_link_shows_to_who_may_change_the_schedule(db):
    team = pf.make_team()
    mine = make_schedule(team, due=datetime.now(UTC) + timedelta(days=1))
    admins = make_schedule(team, name="admins", owner=team.users["admin"], due=datetime.now(UTC) + timedelta(days=1))
    url = f"/workspaces/{team.alpha.pk}/schedules"
    edit = f"/workspaces/{team.alpha.pk}/schedules/{{}}/edit"
    viewer = pf.client_for(team.users["viewer"]).get(url).content.decode()
    member = pf.client_for(team.users["member"]).get(url).content.decode()
    admin = pf.client_for(team.users["admin"]).get(url).content.decode()
    assert "schedule-edit" not in viewer
    assert edit.format(mine.pk) in member and edit.format(admins.pk) not in member
    assert edit.format(mine.pk) in admin and edit.format(admins.pk) in admin
    assert pf.client_for(team.users["member"]).get(edit.format(admins.pk)).status_code == 403


# --- editing the job configuration (the wizard's "Edit configuration") ------------------------------------------

WANDB = "wandb-SECRET-0xFACE"


def secret_schedule(team, owner=None, **fields):
    """A daily schedule made as the Schedule… form makes one: its WANDB_API_KEY sealed, not in its body."""
    body = {**pf.BODY, "Envs": {"EPOCHS": "3"}, "SecretEnvs": {"WANDB_API_KEY": WANDB}}
    schedule, errors = schedules.create(owner or team.users["member"], team.alpha, body, daily(), **fields)
    assert not errors, errors
    return schedule


def config_events():
    from jobs.models import AuditEvent

    return list(AuditEvent.objects.filter(details__event=schedules.CONFIG_EDITED).order_by("pk"))


def test_edit_config_replaces_the_body_keeps_the_sealed_secret_seals_a_new_one_and_the_next_run_uses_them(db):
    from jobs import secretbox
    from jobs.models import Job, Schedule

    team = pf.make_team()
    schedule = secret_schedule(team)
    before = Schedule.objects.values("name", "kind", "at", "next_run_at", "enabled", "anchor").get(pk=schedule.pk)
    # What the wizard sends: the body without secrets (each secret variable as the placeholder), the secrets typed.
    body = {**pf.BODY, "UserCommand": "python train.py --epochs $EPOCHS",
            "Envs": {"EPOCHS": "5", "WANDB_API_KEY": "********", "HF_TOKEN": "********"}}
    errors = schedules.edit_config(team.users["member"], schedule, body, {"env:HF_TOKEN": "hf-NEW-0xBEEF"},
                                   hints=None, token="11111111-1111-4111-8111-111111111111")
    assert errors == {}
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.body["UserCommand"] == "python train.py --epochs $EPOCHS"
    assert row.body["Envs"] == {"EPOCHS": "5", "WANDB_API_KEY": "********", "HF_TOKEN": "********"}
    assert WANDB not in str(row.body) and "hf-NEW" not in row.sealed_secrets and WANDB not in row.sealed_secrets
    assert secretbox.unseal(row.sealed_secrets) == {"env:WANDB_API_KEY": WANDB, "env:HF_TOKEN": "hf-NEW-0xBEEF"}
    assert Schedule.objects.values("name", "kind", "at", "next_run_at", "enabled", "anchor").get(
        pk=schedule.pk) == before, "the name, timing and enabled state stay"
    [event] = config_events()
    assert event.actor_name == "member" and event.details["schedule"] == "nightly"
    assert event.details["changed"] == ["environment", "secrets"], event.details
    assert WANDB not in str(event.details) and "hf-NEW" not in str(event.details)
    # The next run's job is the new configuration, with both secrets.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "started"
    job = Job.objects.get(scheduled_run__schedule=schedule)
    assert job.body["UserCommand"] == "python train.py --epochs $EPOCHS" and job.display_name.startswith("nightly-")
    assert secretbox.unseal(job.sealed_secrets) == {"env:WANDB_API_KEY": WANDB, "env:HF_TOKEN": "hf-NEW-0xBEEF"}
    # The same token again saves nothing (the same form posted twice).
    assert schedules.edit_config(team.users["member"], schedule, {**pf.BODY, "UserCommand": "echo other"}, {},
                                 token="11111111-1111-4111-8111-111111111111") == {}
    assert Schedule.objects.get(pk=schedule.pk).body["UserCommand"] == "python train.py --epochs $EPOCHS"
    assert len(config_events()) == 1


def test_edit_config_refuses_a_guardrail_or_a_missing_secret_at_its_field_and_saves_nothing(db):
    from jobs.models import Schedule, WorkspacePolicy

    team = pf.make_team()
    schedule = secret_schedule(team)
    saved = Schedule.objects.values("body", "hints", "sealed_secrets").get(pk=schedule.pk)
    WorkspacePolicy.objects.update_or_create(workspace=team.alpha,
                                             defaults={"allowed_image_prefixes": ["registry.internal/"]})
    errors = schedules.edit_config(team.users["member"], schedule, {**pf.BODY, "UserCommand": "echo new"}, {})
    assert list(errors) == ["job.JobSpecs[0].Image"] and "registry.internal/" in errors["job.JobSpecs[0].Image"][0]
    fixed = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "Image": "registry.internal/pytorch:2.3"}]}
    # A variable sent as a secret with no value to seal: at its name.
    errors = schedules.edit_config(team.users["member"], schedule, {**fixed, "Envs": {"NEW_KEY": "********"}}, {})
    assert list(errors) == ["job.Envs.NEW_KEY"] and "send the value in SecretEnvs" in errors["job.Envs.NEW_KEY"][0]
    # Only the owner's edit keeps a sealed value: an admin must type it (else they could print it in a run's log).
    errors = schedules.edit_config(team.users["admin"], schedule, {**fixed, "Envs": {"WANDB_API_KEY": "********"}},
                                   {})
    assert list(errors) == ["job.Envs.WANDB_API_KEY"]
    assert Schedule.objects.values("body", "hints", "sealed_secrets").get(pk=schedule.pk) == saved
    assert config_events() == []
    assert schedules.edit_config(team.users["admin"], schedule, {**fixed, "Envs": {"WANDB_API_KEY": "********"}},
                                 {"env:WANDB_API_KEY": "typed-by-admin"}) == {}
    assert config_events()[0].actor_name == "admin" and "typed-by-admin" not in str(config_events()[0].details)


def test_a_schedule_of_a_template_job_keeps_the_link_and_its_config_edit_keeps_the_locks(db):
    from jobs import templates_lib
    from jobs.models import Job, Schedule

    team = pf.make_team()
    team.template.locked = ["environment.command"]
    team.template.save()
    link = templates_lib.link(team.template, team.template.versions.get())
    Job.objects.filter(pk=team.job.pk).update(hints=link)
    team.job.refresh_from_db()
    schedule, errors = schedules.create(team.users["member"], team.alpha, pf.BODY, daily(), source_job=team.job)
    assert not errors and schedule.hints["template"] == link["template"]
    errors = schedules.edit_config(team.users["member"], schedule, {**pf.BODY, "UserCommand": "echo mine"}, {})
    assert list(errors) == ["job.UserCommand"] and "locked by the template" in errors["job.UserCommand"][0]
    # A schedule made before create kept the link is bound through the job it was made from.
    Schedule.objects.filter(pk=schedule.pk).update(hints={})
    schedule.refresh_from_db()
    assert list(schedules.edit_config(team.users["member"], schedule, {**pf.BODY, "UserCommand": "echo mine"},
                                      {})) == ["job.UserCommand"]
    more = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": 2}]}  # an unlocked field
    assert schedules.edit_config(team.users["member"], schedule, more, {}) == {}
    schedule.refresh_from_db()
    assert schedule.hints["template"] == link["template"] and schedule.body["JobSpecs"][0]["PodCount"] == 2


def test_the_jobs_a_schedule_starts_carry_its_template_link_so_their_clones_keep_the_locks(db):
    from jobs import clone, templates_lib
    from jobs.models import Job, Schedule

    team = pf.make_team()
    team.template.locked = ["environment.command"]
    team.template.save()
    version = team.template.versions.get()
    link = templates_lib.link(team.template, version)
    Job.objects.filter(pk=team.job.pk).update(hints=link)
    team.job.refresh_from_db()
    schedule, errors = schedules.create(team.users["member"], team.alpha, pf.BODY, daily(), source_job=team.job)
    assert not errors
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "started"
    run = Job.objects.get(scheduled_run__schedule=schedule)
    assert run.hints[templates_lib.LINK] == link[templates_lib.LINK]
    assert templates_lib.linked(run) == (team.template, version)
    assert clone.prefill(run).template == (team.template, version), "a clone of the run is held to the locks"
    # A schedule made before it kept the link: its runs take the link of the job it was made from.
    Schedule.objects.filter(pk=schedule.pk).update(hints={}, next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    Job.objects.filter(pk=run.pk).update(status="Succeeded")
    assert schedules.run_one(schedule.pk) == "started"
    latest = Job.objects.filter(scheduled_run__schedule=schedule).latest("pk")
    assert latest.pk != run.pk and templates_lib.linked(latest) == (team.template, version)


def config_page(client, schedule):
    return client.get(f"/jobs/new?schedule={schedule.pk}")


def test_the_wizard_opens_a_schedules_configuration_prefilled_without_its_secret_or_the_job_boxes(db):
    from tests.support.wizard import page_form_data

    team = pf.make_team()
    schedule = secret_schedule(team)
    response = config_page(pf.client_for(team.users["member"]), schedule)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<title>Edit the configuration of schedule nightly" in html
    assert re.search(r"<h1>Edit the configuration of schedule nightly <small>in <a href=\"/workspaces/\d+/schedules",
                     html)
    assert 'id="sweep-block"' not in html and 'id="run-after-block"' not in html, "no Sweep and no Run after"
    assert 'id="schedule-config-save">Save configuration</button>' in html and ">Submit</button>" not in html
    assert WANDB not in html and 'id="kept-secrets"' in html and "Value of WANDB_API_KEY" in html
    assert 'id="reprompt-list"' not in html, "the owner is not asked for the sealed secret"
    data = page_form_data(html)
    assert data["_schedule"] == str(schedule.pk) and data["environment-command"] == "echo hello"
    assert (data["environment-envs-1-key"], data["environment-envs-1-value"], data["environment-envs-1-secret"]) \
        == ("WANDB_API_KEY", "", "on")
    # An admin may change it, but types the owner's secret again.
    admin = config_page(pf.client_for(team.users["admin"]), schedule).content.decode()
    assert 'id="kept-secrets"' not in admin and 'id="reprompt-list"' in admin and "WANDB_API_KEY" in admin


def test_only_who_may_change_a_schedule_opens_or_saves_its_configuration(db):
    from tests.support.wizard import page_form_data

    team = pf.make_team()
    schedule = secret_schedule(team)
    data = page_form_data(config_page(pf.client_for(team.users["member"]), schedule).content.decode())
    viewer, other = pf.client_for(team.users["viewer"]), pf.client_for(team.users["other"])
    assert config_page(viewer, schedule).status_code == 403
    assert viewer.post("/jobs/new/form", {**data, "environment-command": "echo viewer"}).status_code == 403
    assert viewer.post("/jobs/new/section/environment", data).status_code == 403
    assert config_page(other, schedule).status_code == 404, "another workspace's schedule is not found"
    assert other.post("/jobs/new/form", {**data, "environment-command": "echo other"}).status_code == 404
    assert pf.client_for(team.users["member"]).get("/jobs/new?schedule=1x").status_code == 404
    schedule.refresh_from_db()
    assert schedule.body["UserCommand"] == "echo hello" and config_events() == []


def test_save_configuration_replaces_the_schedules_body_once_per_form_and_makes_no_job(db):
    from jobs import secretbox
    from jobs.models import Job
    from tests.support.wizard import page_form_data

    team = pf.make_team()
    schedule = secret_schedule(team)
    client = pf.client_for(team.users["member"])
    jobs_before = Job.objects.count()
    data = page_form_data(config_page(client, schedule).content.decode())
    data["environment-command"] = "python train.py"
    response = client.post("/jobs/new/form", data, follow=True)
    assert response.redirect_chain == [(f"/workspaces/{team.alpha.pk}/schedules", 302)]
    assert "Schedule nightly: configuration saved; its next runs use it." in response.content.decode()
    schedule.refresh_from_db()
    assert schedule.body["UserCommand"] == "python train.py"
    assert secretbox.unseal(schedule.sealed_secrets) == {"env:WANDB_API_KEY": WANDB}, "kept, still sealed"
    assert Job.objects.count() == jobs_before, "nothing submitted"
    # The same form again (Back, a retry), after another page saved a newer configuration: it saves nothing.
    newer = page_form_data(config_page(client, schedule).content.decode())
    newer["environment-command"] = "python train.py --newer"
    assert client.post("/jobs/new/form", newer).status_code == 302
    again = client.post("/jobs/new/form", data, follow=True)
    assert "This form was already submitted: here is its schedule." in again.content.decode()
    schedule.refresh_from_db()
    assert schedule.body["UserCommand"] == "python train.py --newer" and len(config_events()) == 2


def test_save_configuration_says_a_guardrail_at_its_field_and_saves_nothing(db):
    from jobs.models import WorkspacePolicy
    from tests.support.wizard import page_form_data

    team = pf.make_team()
    schedule = secret_schedule(team)
    client = pf.client_for(team.users["member"])
    data = page_form_data(config_page(client, schedule).content.decode())
    WorkspacePolicy.objects.update_or_create(workspace=team.alpha,
                                             defaults={"allowed_image_prefixes": ["registry.internal/"]})
    data["environment-command"] = "python train.py"
    response = client.post("/jobs/new/form", data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "problem to fix before saving" in html
    image = re.search(r'<div class="field[^"]*" id="f-environment-image".*?</div>\s*</div>', html, re.S)
    assert image and "registry.internal/" in image.group(0), "the rule is said at the Image field"
    schedule.refresh_from_db()
    assert schedule.body["UserCommand"] == "echo hello" and config_events() == []


def test_the_schedules_page_links_edit_configuration_and_a_refused_schedule_says_to_use_it(db):
    from jobs.models import WorkspacePolicy

    team = pf.make_team()
    mine = secret_schedule(team, source_job=team.job)
    url = f"/workspaces/{team.alpha.pk}/schedules"
    link = f'href="/jobs/new?schedule={mine.pk}"'
    assert link in pf.client_for(team.users["member"]).get(url).content.decode()
    assert link not in pf.client_for(team.users["viewer"]).get(url).content.decode()
    WorkspacePolicy.objects.update_or_create(workspace=team.alpha, defaults={"required_tag_keys": ["cost-centre"]})
    type(mine).objects.filter(pk=mine.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_due() == {mine.pk: "skipped"}
    page = pf.client_for(team.users["member"]).get(url).content.decode()
    fix = re.search(r'<p class="notice warning schedule-fix">.*?</p>', page, re.S).group(0)
    assert "Every run is skipped" in fix and f'<a href="/jobs/new?schedule={mine.pk}" class="schedule-fix-config">' \
        in fix and "clone" not in fix


REGISTRY = "registry-SECRET-0xC0DE"
RAY_REDIS = "ray-redis-SECRET-0xD00D"


def password_schedule(team, **extra):
    """The member's schedule whose job logs in to its registry and is a Ray job with a Redis password: both sealed
    (with `extra` body fields, e.g. a secret variable)."""
    body = {**pf.BODY, "JobType": "RayJob", **extra,
            "JobSpecs": [{**pf.BODY["JobSpecs"][0], "Type": "Head",
                          "ImageConfig": {"Username": "robot", "Password": REGISTRY}}],
            "Settings": {"AdvancedSettings": {"RayRedisPassword": RAY_REDIS}}}
    schedule, errors = schedules.create(team.users["member"], team.alpha, body, daily())
    assert not errors, errors
    return schedule


def test_the_owner_editing_the_configuration_may_leave_the_saved_passwords_empty_an_admin_types_them(db):
    """The registry and Ray Redis passwords the schedule keeps sealed (as the API's edit keeps them): its owner is not
    asked for them again, an empty field keeps them; an admin, who must not run them with a command of theirs, types
    them."""
    from jobs import secretbox
    from jobs.models import Job, Schedule
    from tests.support.wizard import page_form_data

    team = pf.make_team()
    schedule = password_schedule(team)
    sealed = {"registry_password": REGISTRY, "RayRedisPassword": RAY_REDIS}
    owner = pf.client_for(team.users["member"])
    html = config_page(owner, schedule).content.decode()
    assert REGISTRY not in html and RAY_REDIS not in html
    assert 'id="reprompt-list"' not in html, "the owner is not asked for the sealed passwords"
    assert 'id="kept-password">Leave empty to keep the saved password.' in html
    assert 'id="kept-ray-password"' in html and " ".join(html.split()).count("Leave empty to keep the saved password") \
        == 4, "at both fields and in the Kept list"
    data = page_form_data(html)
    assert data["environment-registry_password"] == "" and data["environment-registry_username"] == "robot"
    data["environment-command"] = "python train.py"
    answer = owner.post("/jobs/new/form", data)
    assert answer.status_code == 302, re.findall(r'class="errorlist[^"]*"[^>]*>(.*?)</ul>', answer.content.decode())
    schedule.refresh_from_db()
    assert schedule.body["UserCommand"] == "python train.py"
    assert secretbox.unseal(schedule.sealed_secrets) == sealed, "kept, not cleared"
    assert "changed" in config_events()[0].details and "secrets" not in config_events()[0].details["changed"]
    # Its next run logs in with them.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "started"
    assert secretbox.unseal(Job.objects.get(scheduled_run__schedule=schedule).sealed_secrets) == sealed
    # A password typed replaces the saved one.
    data = page_form_data(config_page(owner, schedule).content.decode())
    data["environment-registry_password"] = "registry-NEW-0xF00D"
    assert owner.post("/jobs/new/form", data).status_code == 302
    schedule.refresh_from_db()
    assert secretbox.unseal(schedule.sealed_secrets) == {**sealed, "registry_password": "registry-NEW-0xF00D"}
    # An admin is asked for both, and an empty field is the wizard's error: nothing saved.
    admin = pf.client_for(team.users["admin"])
    html = config_page(admin, schedule).content.decode()
    assert 'id="reprompt-list"' in html and "Leave empty to keep the saved password" not in html
    data = page_form_data(html)
    data["environment-command"] = "echo by-admin"
    refused = admin.post("/jobs/new/form", data)
    assert refused.status_code == 200 and "Enter the registry password too" in refused.content.decode()
    schedule.refresh_from_db()
    assert schedule.body["UserCommand"] == "python train.py"
    data["environment-registry_password"] = "typed-by-admin"
    data["resources-advanced"] = "RayRedisPassword=ray-typed-by-admin"
    assert admin.post("/jobs/new/form", data).status_code == 302
    schedule.refresh_from_db()
    assert secretbox.unseal(schedule.sealed_secrets) == {"registry_password": "typed-by-admin",
                                                         "RayRedisPassword": "ray-typed-by-admin"}


def test_edit_config_keeps_a_sealed_password_given_empty(db):
    from jobs import secretbox

    team = pf.make_team()
    schedule = password_schedule(team)
    assert schedules.edit_config(team.users["member"], schedule, dict(schedule.body),
                                 {"registry_password": "", "RayRedisPassword": ""}) == {}
    assert secretbox.unseal(schedule.sealed_secrets) == {"registry_password": REGISTRY, "RayRedisPassword": RAY_REDIS}


# --- taking a schedule over (an admin becomes its owner) ---------------------------------------------------------


def sealed_schedule(team):
    """The member's schedule with every kind of sealed value: a secret variable, a registry login, a Ray Redis
    password."""
    return password_schedule(team, Envs={"EPOCHS": "3"}, SecretEnvs={"WANDB_API_KEY": WANDB})


def demote(team, name="member"):
    from jobs.models import Membership

    Membership.objects.filter(user=team.users[name], workspace=team.alpha).update(role=Membership.VIEWER)


def taken_over_events():
    from jobs.models import AuditEvent

    return list(AuditEvent.objects.filter(details__event=schedules.TAKEN_OVER).order_by("pk"))


def test_a_take_over_makes_the_admin_owner_drops_every_sealed_value_and_disables_the_schedule(db):
    from jobs.models import Schedule

    team = pf.make_team()
    schedule = sealed_schedule(team)
    demote(team)  # stranded: its runs would be skipped
    admin = team.users["admin"]
    dropped = schedules.take_over(admin, Schedule.objects.get(pk=schedule.pk))
    assert dropped == ["RayRedisPassword", "env:WANDB_API_KEY", "registry_password"]
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.owner == admin and row.sealed_secrets == "", "nothing of the previous owner's stays sealed"
    assert (row.enabled, row.next_run_at) == (False, None), "disabled: its runs would miss the values"
    assert row.body == schedule.body and row.name == "nightly", "its job and timing stay"
    [event] = taken_over_events()
    assert event.actor_name == "admin" and event.details["schedule"] == "nightly"
    assert event.details["previous_owner"] == "member" and event.details["disabled"] is True
    assert event.details["dropped"] == ["Settings.AdvancedSettings.RayRedisPassword", "SecretEnvs.WANDB_API_KEY",
                                        "JobSpecs[*].ImageConfig.Password"]
    said = str(event.details)
    assert WANDB not in said and REGISTRY not in said and RAY_REDIS not in said, "names only, never a value"
    # The admin's Edit configuration now asks for each of them (the previous owner's are gone).
    html = config_page(pf.client_for(admin), row).content.decode()
    assert 'id="reprompt-list"' in html and 'id="kept-secrets"' not in html and 'id="kept-password"' not in html
    assert WANDB not in html and REGISTRY not in html and RAY_REDIS not in html


def test_a_take_over_of_a_schedule_without_sealed_values_keeps_it_enabled_and_the_beat_runs_it_as_the_admin(db):
    from jobs.models import Job, Schedule

    team = pf.make_team()
    schedule = make_schedule(team)  # pf.BODY: nothing sealed
    demote(team)
    assert schedules.run_due() == {schedule.pk: "skipped"}, "stranded: the owner may no longer create jobs"
    assert schedules.take_over(team.users["admin"], Schedule.objects.get(pk=schedule.pk)) == []
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.owner == team.users["admin"] and row.enabled and row.next_run_at is not None
    assert taken_over_events()[0].details["dropped"] == [] and taken_over_events()[0].details["disabled"] is False
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_due() == {schedule.pk: "started"}
    job = Job.objects.get(scheduled_run__schedule=schedule)
    assert job.owner == team.users["admin"] and job.display_name.startswith("nightly-")


def test_enabling_is_refused_while_a_dropped_value_is_needed_and_allowed_once_typed_again(db):
    from jobs import secretbox
    from jobs.models import Job, Schedule

    team = pf.make_team()
    schedule = sealed_schedule(team)
    admin = team.users["admin"]
    schedules.take_over(admin, schedule)
    refused = schedules.set_enabled(admin, schedule, True)
    assert refused is not None
    assert "the secret variable WANDB_API_KEY and the registry password" in refused, refused
    assert "SecretEnvs.WANDB_API_KEY, JobSpecs[*].ImageConfig.Password" in refused, "the API's names too"
    assert "Ray" not in refused, "a Ray job runs without a Redis password: never required"
    row = Schedule.objects.get(pk=schedule.pk)
    assert (row.enabled, row.next_run_at) == (False, None) and not schedule.enabled, "nothing saved"
    # The page says it at the schedule, with the way to type them again, and refuses the toggle.
    client = pf.client_for(admin)
    page = client.get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    missing = re.search(r'<p class="notice warning schedule-missing">.*?</p>', page, re.S).group(0)
    assert "the secret variable WANDB_API_KEY and the registry password" in missing
    assert f'href="/jobs/new?schedule={schedule.pk}"' in missing
    answer = client.post(f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/toggle", follow=True)
    said = answer.content.decode()
    assert "It cannot be enabled yet" in said and "WANDB_API_KEY" in said
    assert f'<a href="/jobs/new?schedule={schedule.pk}">Edit configuration</a>' in said
    assert not Schedule.objects.get(pk=schedule.pk).enabled
    # Typed again in Edit configuration (as the wizard sends them): enabling works, the next run uses them as the admin.
    assert schedules.edit_config(admin, schedule, dict(schedule.body), {
        "env:WANDB_API_KEY": "admin-wandb", "registry_password": "admin-registry"}) == {}
    assert schedules.set_enabled(admin, schedule, True) is None and schedule.enabled
    assert "schedule-missing" not in client.get(f"/workspaces/{team.alpha.pk}/schedules").content.decode()
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=datetime.now(UTC) - timedelta(seconds=1))
    assert schedules.run_one(schedule.pk) == "started"
    job = Job.objects.get(scheduled_run__schedule=schedule)
    assert job.owner == admin
    assert secretbox.unseal(job.sealed_secrets) == {"env:WANDB_API_KEY": "admin-wandb",
                                                    "registry_password": "admin-registry"}


def test_only_the_workspaces_admins_and_the_superuser_may_take_over_a_schedule(db):
    from django.contrib.auth import get_user_model
    from django.utils.html import escape

    from jobs.models import Membership, Schedule

    team = pf.make_team()
    schedule = sealed_schedule(team)
    colleague = get_user_model().objects.create_user("colleague", password=None)
    Membership.objects.create(user=colleague, workspace=team.alpha, role=Membership.MEMBER)
    for name in ("viewer", "member"):
        assert schedules.take_over_refusal(team.users[name], schedule) == schedules.TAKE_OVER_REFUSED
    assert schedules.take_over_refusal(colleague, schedule) == schedules.TAKE_OVER_REFUSED, \
        "a member may not take over another member's schedule"
    root = get_user_model().objects.create_superuser("root", password=None)
    assert schedules.take_over_refusal(team.users["admin"], schedule) is None
    assert schedules.take_over_refusal(root, schedule) is None
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/take-over"
    for user in (team.users["viewer"], team.users["member"], colleague):
        client = pf.client_for(user)
        for answer in (client.get(url), client.post(url)):
            assert answer.status_code == 403 and escape(schedules.TAKE_OVER_REFUSED) in answer.content.decode()
    assert pf.client_for(team.users["other"]).post(url).status_code == 404, "another workspace's: not found"
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.owner == team.users["member"] and row.sealed_secrets == schedule.sealed_secrets and row.enabled
    assert taken_over_events() == []
    assert pf.client_for(root).post(url).status_code == 302
    assert Schedule.objects.get(pk=schedule.pk).owner == root


def test_the_schedules_and_edit_pages_offer_take_over_to_admins_with_a_confirm_page_that_works_without_js(db):
    from jobs.models import Schedule

    team = pf.make_team()
    schedule = sealed_schedule(team)
    mine = make_schedule(team, name="admins", owner=team.users["admin"])
    demote(team)
    admin = pf.client_for(team.users["admin"])
    listing = f"/workspaces/{team.alpha.pk}/schedules"
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/take-over"
    page = admin.get(listing).content.decode()
    assert f'<a href="{url}" class="button schedule-take-over">Take over</a>' in page
    assert f"/schedules/{mine.pk}/take-over" not in page, "not of the admin's own schedule"
    assert "Disable, delete or take it over" in " ".join(page.split()), "the stranded schedule's notice says so"
    for name in ("member", "viewer"):
        assert "schedule-take-over" not in pf.client_for(team.users[name]).get(listing).content.decode(), name
    edit = admin.get(f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/edit").content.decode()
    assert 'id="schedule-take-over-offer"' in edit and f'href="{url}"' in edit
    assert 'id="schedule-take-over-offer"' not in admin.get(
        f"/workspaces/{team.alpha.pk}/schedules/{mine.pk}/edit").content.decode()
    # The confirm page: a form that posts without JS, saying what happens; GET changes nothing.
    confirm = " ".join(admin.get(url).content.decode().split())
    assert f'<form method="post" action="{url}"' in confirm and 'id="schedule-take-over-yes"' in confirm
    assert "You become its owner; its runs start as you." in confirm
    assert ("Its sealed values (secret variables, the registry password, the Ray Redis password) were the previous "
            "owner's and are dropped: type them again in Edit configuration.") in confirm
    assert "the Ray Redis password, the secret variable WANDB_API_KEY and the registry password: it will be " \
           "disabled" in confirm
    assert WANDB not in confirm and REGISTRY not in confirm
    assert Schedule.objects.get(pk=schedule.pk).owner == team.users["member"] and taken_over_events() == []
    answer = admin.post(url, follow=True)
    assert answer.redirect_chain == [(listing, 302)]
    said = " ".join(answer.content.decode().split())
    assert "Schedule nightly is yours now (it was member&#x27;s); its runs start as you. It is disabled" in said
    assert (f'Type them again in <a href="/jobs/new?schedule={schedule.pk}" class="schedule-take-over-config">Edit '
            "configuration</a>, then enable it.") in said
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.owner == team.users["admin"] and not row.enabled and row.sealed_secrets == ""
    # Now the admin's own: no more Take over; the page says it already is.
    assert f"/schedules/{schedule.pk}/take-over" not in admin.get(listing).content.decode()
    again = admin.post(url, follow=True).content.decode()
    assert "You own schedule nightly already." in again and len(taken_over_events()) == 1


def test_a_stale_take_over_confirm_page_takes_nothing_from_the_admin_who_took_the_schedule_over_meanwhile(db):
    """An admin opens the confirm page (the member's schedule); another admin takes it over, types its values again
    and enables it; the first page's Yes must not then take it from them, dropping those values and disabling it,
    unconfirmed: nothing is done, and the page says what taking it over does now."""
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, Schedule

    team = pf.make_team()
    schedule = sealed_schedule(team)
    second_admin = get_user_model().objects.create_user("admin2", password=None)
    Membership.objects.create(user=second_admin, workspace=team.alpha, role=Membership.ADMIN)
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/take-over"
    confirm = admin.get(url).content.decode()
    shown = re.search(r'<input type="hidden" name="owner" value="(\d*)">', confirm).group(1)
    assert shown == str(team.users["member"].pk) and "Its owner is <strong>member</strong>" in confirm
    # Meanwhile: the second admin takes it over, types the values again and enables it.
    row = Schedule.objects.get(pk=schedule.pk)
    schedules.take_over(second_admin, row)
    assert schedules.edit_config(second_admin, row, dict(row.body), {
        "env:WANDB_API_KEY": "admin2-wandb", "registry_password": "admin2-registry"}) == {}
    assert schedules.set_enabled(second_admin, row, True) is None
    kept = Schedule.objects.get(pk=schedule.pk).sealed_secrets
    answer = admin.post(url, {"owner": shown})
    assert answer.status_code == 409
    page = " ".join(answer.content.decode().split())
    assert "Nothing was done: the schedule changed hands since this page was opened." in page
    assert "Its owner is <strong>admin2</strong>" in page and f'name="owner" value="{second_admin.pk}"' in page
    row = Schedule.objects.get(pk=schedule.pk)
    assert (row.owner, row.enabled, row.sealed_secrets) == (second_admin, True, kept), "nothing changed"
    assert len(taken_over_events()) == 1, "only the second admin's"
    # Confirmed again, against the owner it now names: taken over.
    assert admin.post(url, {"owner": str(second_admin.pk)}).status_code == 302
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.owner == team.users["admin"] and not row.enabled and row.sealed_secrets == ""


def test_the_take_over_confirm_page_of_a_schedule_with_one_sealed_value_names_it_in_the_singular(db):
    team = pf.make_team()
    body = {**pf.BODY, "Envs": {"EPOCHS": "3"}, "SecretEnvs": {"WANDB_API_KEY": WANDB}}
    schedule, errors = schedules.create(team.users["member"], team.alpha, body, daily())
    assert not errors, errors
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/take-over"
    confirm = " ".join(pf.client_for(team.users["admin"]).get(url).content.decode().split())
    assert ("This schedule has the secret variable WANDB_API_KEY: it will be disabled until it is typed "
            "again.") in confirm


def test_a_take_over_that_drops_only_the_ray_redis_password_says_the_schedule_may_be_enabled_at_once(db):
    """A Ray job runs without a Redis password: the taken-over schedule is disabled (its runs would no longer use
    the password its owner chose), but the admin is told it may be enabled as it is, and it may."""
    from jobs.models import Schedule

    team = pf.make_team()
    body = {**pf.BODY, "JobType": "RayJob", "JobSpecs": [{**pf.BODY["JobSpecs"][0], "Type": "Head"}],
            "Settings": {"AdvancedSettings": {"RayRedisPassword": RAY_REDIS}}}
    schedule, errors = schedules.create(team.users["member"], team.alpha, body, daily())
    assert not errors, errors
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/take-over"
    confirm = " ".join(admin.get(url).content.decode().split())
    assert ("This schedule has the Ray Redis password: it will be disabled: enable it again to run its jobs without "
            "one, or type one in Edit configuration first.") in confirm
    said = " ".join(admin.post(url, follow=True).content.decode().split())
    assert ("It is disabled: the Ray Redis password was the previous owner's and was dropped. Enable it to run "
            "its jobs without one, or type one again in") in said
    assert "then enable it" not in said and "until it is typed again" not in confirm
    row = Schedule.objects.get(pk=schedule.pk)
    assert not row.enabled and schedules.set_enabled(team.users["admin"], row, True) is None and row.enabled


def test_two_take_overs_at_once_are_ordered_by_the_row_lock_and_the_second_drops_nothing_more(transactional_db):
    """Two admins take the same schedule over from the same page: the first holds the schedule's row from its read
    to its save, so the second, sent meanwhile, waits, then takes it over from the first, who kept nothing sealed.
    The second is given a bounded chance to get in between (a wait on an event, not a sleep): with the lock it
    cannot, and the outcome is the same either way."""
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, Schedule

    team = pf.make_team()
    schedule = sealed_schedule(team)
    second_admin = get_user_model().objects.create_user("admin2", password=None)
    Membership.objects.create(user=second_admin, workspace=team.alpha, role=Membership.ADMIN)
    pages = {name: Schedule.objects.get(pk=schedule.pk) for name in ("first", "second")}  # each admin's copy
    # Without the lock the second lands while the first waits at its save, and both drop the member's values.
    first, second = second_while_first_saves(lambda: schedules.take_over(team.users["admin"], pages["first"]),
                                             lambda: schedules.take_over(second_admin, pages["second"]), Schedule)
    outcomes = {"first": first, "second": second}
    assert outcomes == {"first": ["RayRedisPassword", "env:WANDB_API_KEY", "registry_password"], "second": []}
    row = Schedule.objects.get(pk=schedule.pk)
    assert row.owner == second_admin and row.sealed_secrets == "" and not row.enabled
    first, second = taken_over_events()
    assert (first.actor_name, first.details["previous_owner"]) == ("admin", "member")
    assert (second.actor_name, second.details["previous_owner"], second.details["dropped"]) == ("admin2", "admin", [])


def test_taking_over_the_schedule_of_a_deleted_user_says_so_in_words(db):
    """Its owner's account was deleted (owner NULL): the message read "(it was (deleted user)'s)"."""
    from jobs.models import Schedule

    team = pf.make_team()
    schedule = make_schedule(team, due=datetime.now(UTC) + timedelta(days=1))
    Schedule.objects.filter(pk=schedule.pk).update(owner=None)
    url = f"/workspaces/{team.alpha.pk}/schedules/{schedule.pk}/take-over"
    said = " ".join(pf.client_for(team.users["admin"]).post(url, {"owner": ""}, follow=True).content.decode().split())
    assert "Schedule nightly is yours now (it was its deleted owner&#x27;s); its runs start as you." in said, said
    assert Schedule.objects.get(pk=schedule.pk).owner == team.users["admin"]
