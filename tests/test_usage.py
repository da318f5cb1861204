"""jobs.usage and the workspace's Usage page: GPU-, CPU- and node-hours per owner, job type and job.

Pure functions first; the report and the page on the portal team (whose backend is a port nothing listens on,
so instance types are unknown for real); then one job run for real on localdlc, sized by its real ListEcsSpecs.
"""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime, timedelta

import pytest

from jobs import dlc, lifecycle, usage
from jobs.models import Job
from tests import portal_fixtures as pf
from tests.support.wizard import credentials_file

NOW = datetime.now(UTC)  # the page reads the clock: its jobs are placed relative to it
SPECS = {"ecs.gn6i-c4g1.xlarge": {"InstanceType": "ecs.gn6i-c4g1.xlarge", "Cpu": 4, "Gpu": 1},
         "ecs.g6.large": {"InstanceType": "ecs.g6.large", "Cpu": 2, "Gpu": 0}}


def quota_role(count=1, cpu="8", gpu="2"):
    return {"Type": "Worker", "PodCount": count, "Image": "img", "ResourceConfig": {"CPU": cpu, "GPU": gpu,
                                                                                    "Memory": "16Gi"}}


# -- sizes and hours ---------------------------------------------------------------------------------------


def test_a_quota_job_is_sized_by_its_resource_config_and_an_ecs_job_by_the_catalog():
    assert usage.resources([quota_role(count=2)], None) == usage.Resources(2, 16.0, 4.0)
    roles = [{"Type": "PS", "PodCount": 1, "EcsSpec": "ecs.g6.large"},
             {"Type": "Worker", "PodCount": 3, "EcsSpec": "ecs.gn6i-c4g1.xlarge"}]
    assert usage.resources(roles, SPECS) == usage.Resources(4, 14.0, 3.0)


def test_an_instance_type_the_catalog_does_not_know_leaves_the_size_unknown_but_counts_nodes():
    roles = [{"Type": "Worker", "PodCount": 2, "EcsSpec": "ecs.unknown"}, quota_role()]
    assert usage.resources(roles, SPECS) == usage.Resources(3, None, None)
    assert usage.resources([{"Type": "Worker", "PodCount": 1, "EcsSpec": "ecs.g6.large"}], None).gpu is None


@pytest.mark.parametrize("job_specs", [None, "x", [None, 3], [{"PodCount": "many", "ResourceConfig": {"CPU": "-1"}}]])
def test_a_malformed_body_gives_no_size_rather_than_an_error(job_specs):
    size = usage.resources(job_specs, SPECS)
    assert size.nodes == 0 and size.gpu in (None, 0.0)


def test_hours_are_cut_to_the_period_and_a_running_job_runs_to_its_end():
    start, end = NOW - timedelta(days=1), NOW
    assert usage.hours_within(NOW - timedelta(hours=30), NOW - timedelta(hours=20), start, end) == pytest.approx(4)
    assert usage.hours_within(NOW - timedelta(hours=2), None, start, end) == pytest.approx(2)
    assert usage.hours_within(NOW - timedelta(hours=3), NOW - timedelta(hours=1), start, end) == pytest.approx(2)
    assert usage.hours_within(NOW - timedelta(days=3), NOW - timedelta(days=2), start, end) == 0
    assert usage.hours_within(None, None, start, end) == 0


# -- the report ----------------------------------------------------------------------------------------------


@pytest.fixture(name="team")
def fixture_team(db):
    return pf.make_team()


def ran(team, name, owner="member", *, hours=2.0, ended_ago=1.0, running=False, job_type="PyTorchJob",
        roles=None, created_ago=None, workspace=None):
    """A job of Alpha that started `hours + ended_ago` hours before NOW and ran `hours` (or still runs)."""
    started = NOW - timedelta(hours=hours + ended_ago)
    created = NOW - timedelta(hours=created_ago) if created_ago is not None else started - timedelta(minutes=1)
    return Job.objects.create(
        workspace=workspace or team.alpha, owner=team.users[owner], display_name=name, job_type=job_type,
        status="Running" if running else "Succeeded", dlc_job_id=f"dlc-{name}",
        body={**pf.BODY, "DisplayName": name, "JobSpecs": roles or [quota_role()]},
        created_at=created, started_at=started, finished_at=None if running else started + timedelta(hours=hours))


def test_the_report_sums_hours_by_owner_and_type_and_ranks_the_largest_jobs(team):
    Job.objects.all().delete()  # the fixture's jobs never started
    ran(team, "big", hours=3)  # 8 CPUs, 2 GPUs
    ran(team, "small", owner="admin", hours=1, job_type="TFJob", roles=[quota_role(gpu="0", cpu="4")])
    ran(team, "live", owner="admin", hours=0, ended_ago=2, running=True, roles=[quota_role(count=2)])
    ran(team, "elsewhere", owner="other", hours=5, workspace=team.beta)
    result = usage.report(team.alpha, 30, specs=SPECS, now=NOW)
    assert result.total.jobs == 3 and result.total.running == 1
    assert result.total.gpu_hours == pytest.approx(3 * 2 + 2 * 4)
    assert result.total.cpu_hours == pytest.approx(3 * 8 + 1 * 4 + 2 * 16)
    assert result.total.node_hours == pytest.approx(3 + 1 + 2 * 2)
    owners = {line.key: line for line in result.by_owner}
    assert owners["admin"].gpu_hours == pytest.approx(8) and owners["member"].gpu_hours == pytest.approx(6)
    assert [line.key for line in result.by_owner] == ["admin", "member"], "most GPU-hours first"
    assert {line.key: line.jobs for line in result.by_type} == {"PyTorchJob": 2, "TFJob": 1}
    assert [j.name for j in result.top_jobs] == ["live", "big", "small"]


def test_only_time_inside_the_period_counts(team):
    Job.objects.all().delete()
    ran(team, "before", hours=5, ended_ago=24 * 8)  # ended 8 days ago
    ran(team, "straddles", hours=10, ended_ago=24 * 7 - 4)  # its last 4 hours fall in the 7 days
    result = usage.report(team.alpha, 7, specs=SPECS, now=NOW)
    assert [j.name for j in result.jobs] == ["straddles"]
    assert result.jobs[0].hours == pytest.approx(4)


def test_a_job_that_ran_for_under_a_second_is_a_line_with_no_hours(team):
    # QA: a job failing at once (DLC's times are whole seconds: started == finished) was left out of the page,
    # its totals and the CSV, whose header promises one line per job.
    Job.objects.all().delete()
    ran(team, "instant", hours=0)
    ran(team, "normal", hours=1)
    result = usage.report(team.alpha, 30, specs=SPECS, now=NOW)
    assert sorted(j.name for j in result.jobs) == ["instant", "normal"] and result.total.jobs == 2
    assert {j.name: j.hours for j in result.jobs}["instant"] == 0
    assert len(list(csv.reader(io.StringIO(usage.to_csv(result))))) == 3


def test_a_job_running_since_before_the_lookback_is_still_counted(team):
    Job.objects.all().delete()
    ran(team, "marathon", hours=0, ended_ago=24 * 200, running=True, created_ago=24 * 201)
    result = usage.report(team.alpha, 30, specs=SPECS, now=NOW)
    assert [j.name for j in result.jobs] == ["marathon"] and result.jobs[0].hours == pytest.approx(30 * 24)


def test_jobs_of_unknown_size_are_counted_apart_and_ended_jobs_without_an_end_time_are_skipped(team):
    Job.objects.all().delete()
    ran(team, "ecs", roles=[{"Type": "Worker", "PodCount": 2, "EcsSpec": "ecs.g6.large"}])
    no_end = ran(team, "no-end")
    Job.objects.filter(pk=no_end.pk).update(finished_at=None)
    result = usage.report(team.alpha, 30, specs=None, now=NOW)
    assert result.catalog_missing and result.total.unknown == 1 and result.total.jobs == 1
    assert result.total.gpu_hours == 0 and result.total.node_hours == pytest.approx(4)


def test_the_csv_has_one_line_per_job_and_defuses_formula_names(team):
    Job.objects.all().delete()
    ran(team, "=HYPERLINK(1)", hours=2)
    rows = list(csv.reader(io.StringIO(usage.to_csv(usage.report(team.alpha, 30, specs=SPECS, now=NOW)))))
    assert rows[0][:3] == ["job_id", "name", "owner"] and len(rows) == 2
    line = dict(zip(rows[0], rows[1], strict=True))
    assert line["name"] == "'=HYPERLINK(1)" and line["gpu_hours"] == "4.00" and line["cpu_core_hours"] == "16.00"


def test_the_csv_defuses_a_formula_job_type(team):
    # A job synced from DLC carries DLC's JobType as given: a cell like any other text.
    Job.objects.all().delete()
    ran(team, "typed", hours=1, job_type="@SUM(1+1)")
    rows = list(csv.DictReader(io.StringIO(usage.to_csv(usage.report(team.alpha, 30, specs=SPECS, now=NOW)))))
    assert rows[0]["job_type"] == "'@SUM(1+1)"


def ecs_role(count=1, spot=None):
    role = {"Type": "Worker", "PodCount": count, "Image": "img", "EcsSpec": "ecs.gn6i-c4g1.xlarge"}
    return role if spot is None else {**role, "SpotSpec": {"SpotStrategy": "SpotWithPriceLimit", **spot}}


def test_a_price_change_leaves_past_usage_costs_as_they_were(team):
    # QA: a price changed mid-month re-priced every job of the report, so last month's report changed after the
    # fact. Now each hour is costed at the prices in force when it ran; a job running across the change is split.
    from decimal import Decimal

    from jobs import costs
    from jobs.models import WorkspaceCost

    Job.objects.all().delete()
    WorkspaceCost.objects.create(workspace=team.alpha, gpu_hour_price="10", cpu_core_hour_price="0",
                                 instance_prices={"ecs.gn6i-c4g1.xlarge": "12.4"})
    ran(team, "quota", hours=3, ended_ago=24)  # 3 h x 2 GPUs x 10
    ran(team, "ecs", hours=2, ended_ago=48, roles=[ecs_role(2)])  # 2 h x 2 x 12.4
    live = ran(team, "live", hours=0, ended_ago=1, running=True, roles=[ecs_role(1)])
    team.alpha.refresh_from_db()
    before = usage.report(team.alpha, 30, specs=SPECS, now=NOW)
    assert {j.name: j.cost for j in before.jobs} == {"quota": Decimal(60), "ecs": Decimal("49.6"),
                                                      "live": Decimal("12.4")}
    answer = pf.client_for(team.users["admin"]).post(f"/workspaces/{team.alpha.pk}/prices", {
        "currency": "CNY", "instance_prices": "ecs.gn6i-c4g1.xlarge 100", "gpu_hour_price": "50",
        "cpu_core_hour_price": "0"})
    assert answer.status_code == 302
    team.alpha.refresh_from_db()
    after = usage.report(team.alpha, 30, specs=SPECS, now=NOW)
    assert {j.name: j.cost for j in after.jobs} == {j.name: j.cost for j in before.jobs}, "a report of the past"
    assert after.total.cost == before.total.cost and after.currency == "CNY"
    change = costs.row(team.alpha).prices_from
    later = usage.report(team.alpha, 30, specs=SPECS, now=change + timedelta(hours=1))
    old_hours = (change - live.started_at).total_seconds() / 3600
    assert {j.name: j.cost for j in later.jobs}["live"] == costs.cost(Decimal("12.4"), old_hours) + Decimal(100)
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(usage.to_csv(after)))}
    assert (rows["ecs"]["cost"], rows["quota"]["cost"]) == ("49.60", "60.00")


def test_a_spot_jobs_usage_cost_is_marked_at_most_on_the_page_the_csv_and_the_api(team):
    # QA: spot jobs were costed at the full price, as if DLC charged it. At their bid's ceiling now, and said so.
    from jobs.models import WorkspaceCost
    from tests.support.api import Api

    Job.objects.all().delete()
    WorkspaceCost.objects.create(workspace=team.alpha, instance_prices={"ecs.gn6i-c4g1.xlarge": "12.4"})
    ran(team, "spot", hours=2, roles=[ecs_role(2, {"SpotDiscountLimit": 0.5})])  # 2 h x 2 x 6.2
    ran(team, "full", hours=1, owner="admin", roles=[ecs_role(1)])
    ran(team, "unpriced", hours=1, owner="admin", roles=[quota_role()])
    team.alpha.refresh_from_db()
    result = usage.report(team.alpha, 7, specs=SPECS)
    assert {j.name: (str(j.cost), j.cost_is_ceiling) for j in result.jobs} == {
        "spot": ("24.8000", True), "full": ("12.4000", False), "unpriced": ("None", False)}
    assert result.total.ceiling == 1 and {line.key: line.ceiling for line in result.by_owner} == {"member": 1,
                                                                                                  "admin": 0}
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(usage.to_csv(result)))}
    assert {name: (r["cost"], r["cost_is_ceiling"]) for name, r in rows.items()} == {
        "spot": ("24.80", "yes"), "full": ("12.40", "no"), "unpriced": ("", "")}
    html = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage?days=7").content.decode()
    assert 'id="usage-cost">at most 37.20 CNY' in html and 'id="usage-ceiling">(1 spot job at the bid' in html
    assert html.count("≤ </span><span class=\"visually-hidden\">at most </span>") == 3, \
        "the spot job, its owner's line and its type's line"
    data = Api(team.users["viewer"]).get(f"/api/v1/workspaces/{team.alpha.pk}/usage", days=7).json()
    assert {j["name"]: (j["cost"], j["cost_is_ceiling"]) for j in data["top_jobs"]} == {
        "spot": ("24.80", True), "full": ("12.40", False), "unpriced": (None, False)}
    assert data["totals"]["ceiling_jobs"] == 1 and data["totals"]["cost"] == "37.20"


# -- the page ------------------------------------------------------------------------------------------------


def test_every_member_sees_the_page_and_others_get_a_404(team):
    ran(team, "big", hours=3)
    for name in ("viewer", "member", "admin"):
        page = pf.client_for(team.users[name]).get(f"/workspaces/{team.alpha.pk}/usage?days=7")
        assert page.status_code == 200, name
        html = page.content.decode()
        assert 'id="usage-gpu-hours">' in html and "big" in html
        assert ('class="current">Usage</a>' in html) == (name == "admin"), "the admin tabs only for admins"
    assert pf.client_for(team.users["other"]).get(f"/workspaces/{team.alpha.pk}/usage").status_code == 404


def test_the_page_says_why_sizes_are_unknown_and_a_bad_period_falls_back(team):
    # The backend (a dead port) cannot say what ecs.g6.large is.
    ran(team, "ecs", roles=[{"Type": "Worker", "PodCount": 1, "EcsSpec": "ecs.g6.large"}])
    html = pf.client_for(team.users["member"]).get(f"/workspaces/{team.alpha.pk}/usage?days=abc").content.decode()
    assert 'id="usage-unknown"' in html and "Could not list instance types" in html
    assert '<option value="30" selected>' in html


def test_the_csv_download_is_a_file_named_after_the_workspace(team):
    ran(team, "big", hours=3, ended_ago=0.5)
    response = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage?days=1&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith('attachment; filename="alpha-usage-1d-')
    assert "big" in response.content.decode()


def test_the_csv_download_opens_as_utf8_in_a_spreadsheet(team):
    # QA: without a byte-order mark Excel reads a CSV in the machine's code page, so a currency such as ¥ and an
    # owner or a DLC job name that is not ASCII came out garbled ("Â¥").
    from jobs.models import WorkspaceCost

    WorkspaceCost.objects.create(workspace=team.alpha, currency="¥", gpu_hour_price="10", cpu_core_hour_price="0")
    Job.objects.all().delete()
    job = ran(team, "synced", hours=1)
    Job.objects.filter(pk=job.pk).update(display_name="训练-1")  # as a job synced from DLC may be named
    response = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage?format=csv")
    assert response.content.startswith("\ufeff".encode()), "Excel takes the file as UTF-8 only with the mark"
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert [(r["job_id"], r["name"], r["currency"]) for r in rows] == [(str(job.pk), "训练-1", "¥")]


def test_the_csv_is_named_by_the_consoles_date_not_utcs(team, settings):
    # QA: the file's date was UTC's, a day off the console's own (DLC_TIME_ZONE) for part of every day. A zone
    # whose date differs from UTC's now: +14 h from 10:00 UTC, -12 h before noon.
    settings.TIME_ZONE = "Pacific/Kiritimati" if datetime.now(UTC).hour >= 10 else "Etc/GMT+12"
    from django.utils import timezone

    response = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage?format=csv")
    local = timezone.localdate()
    assert local != datetime.now(UTC).date()
    assert f'-usage-30d-{local:%Y%m%d}.csv"' in response["Content-Disposition"]


# -- a real run ----------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_job_run_on_localdlc_is_sized_by_its_listecsspecs(localdlc_factory, tmp_path, settings, db, client):
    from django.contrib.auth import get_user_model

    from jobs.models import Membership, Workspace

    gpus = localdlc_factory(gpu=4, creating_seconds=0.1, env_preparing_seconds=0.1)  # the shared one has none
    settings.LOCALDLC_CREDENTIALS_FILE = str(credentials_file(gpus, tmp_path))
    ws = Workspace.objects.create(name="GPU", backend=Workspace.BACKEND_LOCAL, endpoint=gpus.endpoint)
    vic = get_user_model().objects.create_user("vic")
    Membership.objects.create(user=vic, workspace=ws, role=Membership.VIEWER)
    body = {"DisplayName": "gpu-run", "JobType": "PyTorchJob", "UserCommand": "sleep 1",
            "JobSpecs": [{"Type": "Worker", "PodCount": 2, "Image": "img", "EcsSpec": "ecs.gn6i-c4g1.xlarge"}]}
    job = Job.objects.create(workspace=ws, owner=vic, display_name="gpu-run", status="Creating",
                             job_type="PyTorchJob", body=body)
    job.dlc_job_id = dlc.create_job(ws, body)
    job.save()
    deadline = time.monotonic() + 30
    while (item := dlc.get_job(ws, job.dlc_job_id))["Status"] != "Succeeded":
        assert time.monotonic() < deadline and item["Status"] not in ("Failed", "Stopped"), item
        time.sleep(0.1)
    lifecycle.apply_remote(job, item)
    job.refresh_from_db()
    assert job.started_at and job.finished_at
    client.force_login(vic)
    rows = list(csv.DictReader(io.StringIO(client.get(f"/workspaces/{ws.pk}/usage?format=csv").content.decode())))
    assert [r["name"] for r in rows] == ["gpu-run"]
    hours = (job.finished_at - job.started_at).total_seconds() / 3600
    assert (rows[0]["nodes"], rows[0]["gpus"], rows[0]["cpus"]) == ("2", "2.00", "8.00")
    assert float(rows[0]["gpu_hours"]) == pytest.approx(2 * hours, abs=0.006)
