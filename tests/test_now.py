"""jobs.now, the Usage page's "Now": what the workspace's jobs hold and wait for.

The queue order and the sums first, as plain functions over ActiveJob; then from the database (one query whatever
the number of jobs; sizes from jobs.usage's one size function); then the page, its HTMX refresh, the job page's
position line and the API's queue_position on the portal team (whose backend is a dead port: instance types unknown
for real); last, one browser check that long names stay inside the page.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import now, usage
from jobs.models import Job
from tests import portal_fixtures as pf
from tests.support.api import Api

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
SPECS = {"ecs.gn6i-c4g1.xlarge": {"InstanceType": "ecs.gn6i-c4g1.xlarge", "Cpu": 4, "Gpu": 1}}
NAMES = {"quota-a": "team-a", "quota-b": "team-b"}


def sized(nodes=1, cpu=8.0, gpu=2.0):
    return usage.Resources(nodes, cpu, gpu)


def active(pk, status="Queuing", *, quota="quota-a", prio=1, submitted=0, owner="ann", size=None, started=None):
    """An ActiveJob `submitted` minutes after T0 (None: not sent to DLC yet), created a minute before."""
    at = None if submitted is None else T0 + timedelta(minutes=submitted)
    created = (at or T0 + timedelta(hours=1)) - timedelta(minutes=1)
    return now.ActiveJob(pk, f"job-{pk}", owner, status, quota, prio, created, at,
                         None if started is None else T0 + timedelta(minutes=started), size or sized())


def order(group):
    return [e.job.pk for e in group.entries]


# -- the queue ------------------------------------------------------------------------------------------------


def test_a_quotas_queue_is_higher_priority_first_then_earlier_submitted():
    jobs = [active(1, prio=1, submitted=0), active(2, prio=5, submitted=10), active(3, prio=5, submitted=5),
            active(4, prio=1, submitted=3), active(5, "Running", prio=9, submitted=1)]
    [group] = now.queues(jobs, NAMES)
    assert order(group) == [3, 2, 1, 4], "the running job is not queued"
    second = group.entries[1].position
    assert (second.position, second.of, second.text) == (2, 4, "2nd of 4 in quota team-a")
    assert second.as_json() == {"position": 2, "of": 4, "quota": "team-a", "held": False}


def test_each_quota_has_its_own_queue_and_public_resources_ignore_priority():
    jobs = [active(1, quota="quota-b", submitted=0), active(2, quota="", prio=9, submitted=5),
            active(3, quota="", prio=1, submitted=1), active(4, quota="quota-x", submitted=2),
            active(5, quota="quota-a", submitted=9)]
    groups = now.queues(jobs, NAMES)
    assert [(g.quota_id, order(g)) for g in groups] == [
        ("quota-a", [5]), ("quota-b", [1]), ("quota-x", [4]), ("", [3, 2])], "registered, unregistered, public"
    assert groups[2].entries[0].position.text == "1st of 1 in quota quota-x", "an unregistered quota: its id"
    public = groups[3].entries[1].position
    assert public.text == "2nd of 2 on public resources" and public.as_json()["quota"] is None


def test_jobs_the_console_still_holds_come_after_every_job_dlc_holds_whatever_their_priority():
    jobs = [active(pk, status, prio=p, submitted=s) for pk, (status, p, s) in enumerate((
        ("Queuing", 3, 50), ("Waiting", 3, None), ("Submitting", 9, None), ("Creating", 3, 60), ("Bidding", 1, 0)),
        start=1)]
    [group] = now.queues(jobs, NAMES)
    assert order(group) == [1, 4, 5, 3, 2], "DLC's in its order (priority, submitted), then the console's own"


def test_a_high_priority_run_after_job_does_not_take_the_place_of_a_job_dlc_queued():
    # QA: job 41 (Priority 9, Waiting on job 40) was "1st of 2", job 39 (Priority 1, queued on DLC) "2nd of 2".
    jobs = [active(39, "Queuing", prio=1, submitted=0), active(41, "Waiting", prio=9, submitted=None)]
    [group] = now.queues(jobs, NAMES)
    assert order(group) == [39, 41]
    assert [e.position.text for e in group.entries] == ["1st of 2 in quota team-a", "2nd of 2 in quota team-a"]


@pytest.mark.parametrize(("n", "text"), [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"),
                                        (12, "12th"), (13, "13th"), (21, "21st"), (102, "102nd"), (111, "111th")])
def test_ordinals(n, text):
    assert now.ordinal(n) == text


# -- the sums -------------------------------------------------------------------------------------------------


def test_sums_per_owner_and_quota_count_running_jobs_and_queued_ones_apart():
    jobs = [active(1, "Running", owner="ann", size=sized(2, 16.0, 4.0), started=0),
            active(2, "EnvPreparing", owner="ann", quota="", size=sized(1, 4.0, 0.0)),
            active(3, "Running", owner="bob", size=sized(1, None, None), started=5),  # an unknown instance type
            active(4, "Queuing", owner="bob", size=sized(1, 8.0, 8.0)),
            active(5, "Waiting", owner="ann", quota="quota-x", submitted=None, size=sized(1, 8.0, 1.0))]
    snap = now.build(jobs, NAMES, T0 + timedelta(hours=3))
    total = snap.total
    assert (total.running, total.gpu, total.cpu, total.nodes, total.unknown, total.queued) == (3, 4, 20, 4, 1, 2)
    owners = {h.key: h for h in snap.by_owner}
    assert [h.key for h in snap.by_owner] == ["ann", "bob"], "most GPUs first"
    assert (owners["ann"].running, owners["ann"].gpu, owners["ann"].cpu, owners["ann"].queued) == (2, 4, 20, 1)
    assert (owners["bob"].running, owners["bob"].gpu, owners["bob"].unknown, owners["bob"].queued_gpu) == (1, 0, 1, 8)
    quotas = [(h.key, h.label, h.running, h.gpu, h.queued) for h in snap.by_quota]
    assert quotas == [("quota-a", "team-a", 2, 4, 1), ("quota-b", "team-b", 0, 0, 0), ("quota-x", "quota-x", 0, 0, 1),
                      ("", "Public resources", 1, 0, 0)], "every registered quota, even idle; then the others"
    assert snap.queued == 2


def test_the_longest_running_are_the_five_started_first():
    jobs = [active(pk, "Running", started=pk * 10, size=sized(1, 8.0, pk)) for pk in range(1, 8)]
    jobs += [active(8, "EnvPreparing"), active(9, "Queuing")]  # not started: not running
    snap = now.build(jobs, NAMES, T0 + timedelta(hours=2))
    assert [run.job.pk for run in snap.longest] == [1, 2, 3, 4, 5]
    assert snap.longest[0].run_time == "1h 50m" and snap.longest[0].job.size.gpu == 1


# -- from the database ----------------------------------------------------------------------------------------


@pytest.fixture(name="team")
def fixture_team(db):
    team = pf.make_team()
    team.alpha.quotas = [{"id": "quota-a", "name": "team-a", "resource_type": "general"}]
    team.alpha.save(update_fields=["quotas"])
    Job.objects.filter(workspace=team.alpha).delete()  # the fixture's jobs: made again as each test needs
    return team


def quota_role(count=1, cpu="8", gpu="2"):
    return {"Type": "Worker", "PodCount": count, "Image": "img", "ResourceConfig": {"CPU": cpu, "GPU": gpu,
                                                                                    "Memory": "16Gi"}}


def make(team, name, status, owner="member", *, quota="quota-a", prio=None, roles=None, ago=60, **fields):
    """A job of Alpha submitted `ago` minutes ago (started then, if it runs)."""
    at = datetime.now(UTC) - timedelta(minutes=ago)
    body = {**pf.BODY, "DisplayName": name, "JobSpecs": roles or [quota_role()]}
    if quota:
        body["ResourceId"] = quota
    if prio is not None:
        body["Priority"] = prio
    values = {"submitted_at": at, "created_at": at - timedelta(seconds=5), "dlc_job_id": f"dlc-{name}",
              "started_at": at if status in now.HOLDING else None, **fields}
    return Job.objects.create(workspace=team.alpha, owner=team.users[owner], display_name=name, status=status,
                              job_type="PyTorchJob", body=body, **values)


def test_the_snapshot_sizes_jobs_with_the_usage_reports_size_function(team):
    ecs = [{"Type": "Worker", "PodCount": 3, "EcsSpec": "ecs.gn6i-c4g1.xlarge"}]
    make(team, "quota-job", "Running", roles=[quota_role(count=2)])
    make(team, "ecs-job", "Running", owner="admin", quota="", roles=ecs)
    make(team, "done", "Succeeded", finished_at=datetime.now(UTC))  # ended: not now
    pf.make_job(team.beta, team.users["other"], "beta-running")  # another workspace
    snap = now.snapshot(team.alpha, SPECS)
    sizes = {j.name: j.size for j in now.active_jobs(team.alpha, SPECS)}
    assert sizes == {"quota-job": usage.size_of(json.dumps([quota_role(count=2)]), SPECS),
                     "ecs-job": usage.size_of(json.dumps(ecs), SPECS)}
    assert (snap.total.running, snap.total.gpu, snap.total.cpu, snap.total.nodes) == (2, 4 + 3, 16 + 12, 5)
    assert {h.key: h.gpu for h in snap.by_owner} == {"member": 4, "admin": 3}
    unknown = now.snapshot(team.alpha, None)  # no catalog: the instance-type job's size is unknown
    assert unknown.catalog_missing and unknown.total.unknown == 1 and unknown.total.gpu == 4


def test_the_snapshot_costs_the_same_queries_for_3_jobs_as_for_40(team):
    def queries() -> int:
        with CaptureQueriesContext(connection) as ctx:
            now.snapshot(team.alpha, SPECS)
        return len(ctx.captured_queries)

    for i in range(3):
        make(team, f"run-{i}", "Running")
    few = queries()
    for i in range(37):
        make(team, f"more-{i}", "Queuing" if i % 2 else "Running", prio=i % 9 + 1, owner=("member", "admin")[i % 2])
    assert queries() == few == 1


def test_a_queued_jobs_position_is_its_place_in_its_quotas_queue(team):
    first = make(team, "first", "Queuing", prio=5, ago=10)
    second = make(team, "second", "Queuing", prio=5, ago=5)
    make(team, "low", "Queuing", prio=1, ago=60)
    held = make(team, "held", "Waiting", prio=5, ago=1, submitted_at=None, dlc_job_id="")
    public = make(team, "public", "Queuing", quota="", ago=30)
    running = make(team, "running", "Running")
    assert now.queue_position(first).text == "1st of 4 in quota team-a"
    assert now.queue_position(second).text == "2nd of 4 in quota team-a"
    assert now.queue_position(held).text == "4th of 4 in quota team-a", "after all DLC holds, the lower one too"
    assert now.queue_position(public).text == "1st of 1 on public resources"
    with CaptureQueriesContext(connection) as ctx:
        assert now.queue_position(running) is None
    assert ctx.captured_queries == [], "a job that is not queued costs no query"


# -- the pages and the API ------------------------------------------------------------------------------------


def test_every_member_sees_now_on_the_usage_page_and_the_htmx_refresh_is_the_section_alone(team):
    make(team, "holder", "Running", roles=[quota_role(count=2, gpu="4")], ago=300)
    make(team, "waiter", "Queuing", owner="admin", prio=3)
    for name in ("viewer", "member", "admin"):
        html = pf.client_for(team.users[name]).get(f"/workspaces/{team.alpha.pk}/usage").content.decode()
        assert 'id="usage-now"' in html and 'hx-trigger="every 15s' in html, name
        assert html.index('id="usage-now"') < html.index('id="id_days"'), "at the top of the page"
        assert 'id="now-gpus">8<' in html and "1st of 1 in quota team-a" in html and "5h" in html
    partial = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage", HTTP_HX_REQUEST="true")
    html = partial.content.decode()
    assert html.lstrip().startswith('<section class="card usage-now"')
    assert "<html" not in html and 'id="usage-top-jobs"' not in html and "waiter" in html
    assert pf.client_for(team.users["other"]).get(f"/workspaces/{team.alpha.pk}/usage",
                                                  HTTP_HX_REQUEST="true").status_code == 404


def test_the_htmx_refresh_costs_the_same_queries_whatever_the_number_of_jobs(team, django_assert_max_num_queries):
    client = pf.client_for(team.users["member"])
    url = f"/workspaces/{team.alpha.pk}/usage"
    client.get(url, HTTP_HX_REQUEST="true")  # the session and the catalog's cache, once
    for i in range(30):
        make(team, f"job-{i}", ("Running", "Queuing", "Waiting")[i % 3], prio=i % 9 + 1)
    with CaptureQueriesContext(connection) as few:
        client.get(url, HTTP_HX_REQUEST="true")
    for i in range(30):
        make(team, f"later-{i}", ("Running", "Queuing")[i % 2])
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert "later-1" in client.get(url, HTTP_HX_REQUEST="true").content.decode()


def test_a_long_name_in_largest_jobs_is_clamped_like_the_job_list(team):
    make(team, "x" * 200, "Running", dlc_job_id="dlc-long")
    html = pf.client_for(team.users["member"]).get(f"/workspaces/{team.alpha.pk}/usage").content.decode()
    top = html[html.index('<table class="jobs" id="usage-top-jobs">'):]
    assert '<td class="name"><a href="/jobs/' in top and f'title="{"x" * 200}"' in top


def test_the_job_page_of_a_queued_job_says_its_place_and_a_running_one_does_not(team):
    make(team, "ahead", "Queuing", prio=9)
    queued = make(team, "behind", "Queuing", prio=2)
    running = make(team, "running", "Running")
    client = pf.client_for(team.users["viewer"])
    html = client.get(queued.get_absolute_url()).content.decode()
    assert 'id="queue-position">2nd of 2 in quota team-a' in html
    assert 'id="queue-position"' in client.get(queued.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="queue-position"' not in client.get(running.get_absolute_url()).content.decode()
    # QA: a job waiting for its upstream read "1st of 1", as if DLC held it: its place is the one it will take.
    held = make(team, "held", "Waiting", prio=5, submitted_at=None, dlc_job_id="")
    html = client.get(held.get_absolute_url()).content.decode()
    assert 'id="queue-position">Once released: 3rd of 3 in quota team-a' in html
    assert "not sent to DLC until the job it runs after ends" in html


def test_the_apis_job_detail_has_its_queue_position(team):
    make(team, "ahead", "Queuing", prio=9)
    queued = make(team, "behind", "Queuing", prio=2)
    running = make(team, "running", "Running")
    api = Api(team.users["viewer"])
    assert api.get(f"/api/v1/jobs/{queued.pk}").json()["queue_position"] == {"position": 2, "of": 2,
                                                                             "quota": "team-a", "held": False}
    assert api.get(f"/api/v1/jobs/{running.pk}").json()["queue_position"] is None
    # A job waiting for the job it runs after is not in DLC's queue yet: the place is the one it will take.
    held = make(team, "held", "Waiting", prio=5, submitted_at=None, dlc_job_id="")
    assert api.get(f"/api/v1/jobs/{held.pk}").json()["queue_position"]["held"] is True
    assert "queue_position" not in api.get("/api/v1/jobs").json()["jobs"][0], "detail only: a query per job"
    schema = api.get("/api/v1/openapi.json").json()["components"]["schemas"]["JobDetail"]["properties"]
    assert set(schema["queue_position"]["properties"]) == {"position", "of", "quota", "held"}


# -- in Chromium ----------------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.browser
def test_long_names_in_now_and_largest_jobs_stay_inside_the_page_at_1280_and_390(stack, member, workspace, page):
    from jobs.models import WorkspacePolicy
    from tests.conftest import PASSWORD
    from tests.support.browser import sign_in
    from tests.test_browser_layout import lines, overflow, too_wide

    long_name = "x" * 256  # the longest name, with nothing to break at (QA's 200 widened the page to 2217 px)
    started = datetime.now(UTC) - timedelta(hours=3)
    # An idle policy, so the stack's beat (idle.clear_flags) keeps the idle flag set below; the job has no DLC id,
    # so the beat's idle check never reads it (a CI run's beat cleared the flag before the page was read).
    WorkspacePolicy.objects.update_or_create(workspace=workspace, defaults={"idle_after_minutes": 60})
    for name, status in ((long_name, "Running"), ("q" * 256, "Queuing")):
        Job.objects.create(workspace=workspace, owner=member, display_name=name, status=status, job_type="PyTorchJob",
                           body={**pf.BODY, "ResourceId": "quota-a", "JobSpecs": [quota_role(count=2)]},
                           created_at=started, submitted_at=started,
                           started_at=started if status == "Running" else None,
                           idle_since=started if status == "Running" else None)
    sign_in(page, stack.url, member.username, PASSWORD)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 800})
        page.goto(f"{stack.url}/workspaces/{workspace.pk}/usage")
        assert page.locator("#now-queue").get_by_text("1st of 1 in quota quota-a").count() == 1
        assert overflow(page) == 0, f"the usage page is {overflow(page)} px wider than {width} px: {too_wide(page)}"
        # What idle jobs hold is on screen, not past the owner table's own sideways scroll (a phone stacks it).
        held = page.locator("#now-by-owner td.idle-held").first
        assert "Idle" in held.inner_text() and held.evaluate("e => e.getBoundingClientRect().right") <= width, width
        for table in ("#usage-top-jobs", "#now-longest", "#now-queue"):
            assert lines(page.locator(f"{table} td.name a").first) <= 2, f"{table} at {width} px: cut at two lines"
