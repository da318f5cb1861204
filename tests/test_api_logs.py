"""A job's pods, logs and events through the JSON API (jobs.api_logs), for scripts: the newest lines, following a
running pod with the cursor (each line once), the whole log as text, events; masked as the page shows them; the
answers to bad parameters and unknown pods; the job page's access (a viewer, a read-only token; another workspace's
job 404).

The archived-log and refusal tests run through Django's test client with real tokens (no DLC: the workspace's
endpoint is a closed port, so a read of DLC is a real failure); the integration test runs a job on the stack's
localdlc that prints its secret, and reads it over HTTP from the stack's web server."""

from __future__ import annotations

import secrets
import time
import zlib
from datetime import UTC, datetime, timedelta

import pytest
import requests

from jobs import apitokens, dlc, jobpage, podlogs
from jobs.api_logs import event_json
from jobs.models import Job, Membership, PodLog, Workspace
from tests import portal_fixtures as pf
from tests.support import openapi_check
from tests.support.api import Api
from tests.support.waiting import wait_for

ARCHIVED = [f"line {n}" for n in range(1, 1501)] + ["loss=0.5 WANDB_API_KEY=********", "done"]


def archived_job(team, lines: list[str] = ARCHIVED, name: str = "ended") -> Job:
    """An ended job of Alpha's member whose one pod's log the console archived (as logarchive writes it: masked)."""
    ended = datetime.now(UTC) - timedelta(hours=1)
    job = pf.make_job(team.alpha, team.users["member"], name, status="Succeeded", finished_at=ended,
                      pods=[{"PodId": "ended-worker-0", "Type": "Worker", "Status": "Succeeded", "Ip": "10.0.0.2",
                             "GmtStartTime": "2026-03-01T10:00:00Z", "GmtFinishTime": "2026-03-01T11:00:00Z"}])
    text = "\n".join(lines)
    PodLog.objects.create(job=job, pod_id="ended-worker-0", content=zlib.compress(text.encode()), lines=len(lines))
    return job


def make_user(name: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(name, password=None)


def log_url(job: Job, pod: str = "ended-worker-0", suffix: str = "log") -> str:
    return f"/api/v1/jobs/{job.pk}/pods/{pod}/{suffix}"


# --- the archive, and what is refused (no DLC) ---------------------------------------------------------------


def test_an_archived_log_sends_its_newest_lines_numbered_its_search_and_no_cursor(team, api):
    job = archived_job(team)
    viewer = api["viewer"]  # the page's access: a viewer reads logs
    first = viewer.get(log_url(job)).json()
    assert first["lines"] == ARCHIVED[-1000:] and first["line_numbers"] == list(range(503, 1503))
    assert first["truncated"] is True, "the log has earlier lines than a first view sends"
    assert first["cursor"] is None and first["more"] is False, "an ended job's archive has nothing more to come"
    last = viewer.get(log_url(job), tail=2).json()
    assert (last["lines"], last["line_numbers"], last["truncated"]) == (ARCHIVED[-2:], [1501, 1502], True)
    found = viewer.get(log_url(job), q="WANDB").json()
    assert found["lines"] == ["loss=0.5 WANDB_API_KEY=********"] and found["line_numbers"] == [1501]
    assert found["truncated"] is False, "the archive is searched whole"
    short = archived_job(team, ["a", "\x1b[32mgreen\x1b[0m", "bar 10%\rbar 100%"], name="short")
    answer = viewer.get(log_url(short)).json()
    assert answer["lines"] == ["a", "green", "bar 100%"], "the text the page shows: codes dropped, the last update"
    assert answer["line_numbers"] == [1, 2, 3] and answer["truncated"] is False


def test_the_text_download_is_the_whole_log_with_the_pages_file_name(team, api):
    job = archived_job(team)
    answer = api["viewer"].get(log_url(job, suffix="log.txt"))
    assert answer.status_code == 200 and answer["Content-Type"] == "text/plain; charset=utf-8"
    assert answer["Content-Disposition"] == 'attachment; filename="ended-ended-worker-0.log"'
    assert b"".join(answer.streaming_content).decode() == "".join(f"{line}\n" for line in ARCHIVED)


def test_the_pods_are_the_job_pages_table(team, api):
    job = archived_job(team)
    answer = api["viewer"].get(f"/api/v1/jobs/{job.pk}/pods").json()
    assert answer == {"pods": [{
        "id": "ended-worker-0", "role": "Worker", "index": 0, "status": "Succeeded", "ip": "10.0.0.2",
        "started_at": "2026-03-01T10:00:00+00:00", "finished_at": "2026-03-01T11:00:00+00:00",
        "log": f"http://testserver{log_url(job)}", "log_text": f"http://testserver{log_url(job, suffix='log.txt')}"}]}
    waiting = pf.make_job(team.alpha, team.users["member"], "waiting", status="Submitting", dlc_job_id="", pods=[])
    assert api["viewer"].get(f"/api/v1/jobs/{waiting.pk}/pods").json() == {"pods": []}
    assert api["viewer"].get(f"/api/v1/jobs/{waiting.pk}/events").json() == {"events": []}, "not on DLC yet"


@pytest.mark.parametrize(("query", "field", "says"), [
    ({"tail": "0"}, "tail", "from 1 to 1000"),
    ({"tail": "1001"}, "tail", "from 1 to 1000"),
    ({"tail": "ten"}, "tail", "whole number"),
    ({"since": "yesterday"}, "since", "`cursor` of an earlier answer"),
    ({"since": "12.x"}, "since", "`cursor` of an earlier answer"),
    ({"since": "0"}, "since", "before this pod could have logged anything; ask again without `since`"),
    ({"since": str(podlogs.encode_cursor(datetime.now(UTC) + timedelta(hours=1)))}, "since", "in the future"),
    ({"since": "1", "tail": "5"}, "tail", "Only without `since`"),
    ({"q": "x" * 201}, "q", "at most 200 characters"),
    ({"lines": "5"}, "lines", "Unknown parameter: send q, since, tail."),
])
def test_a_bad_parameter_is_a_400_at_it(team, api, query, field, says):
    answer = api["member"].get(log_url(archived_job(team)), **query)
    assert answer.status_code == 400, answer.content
    assert says in answer.json()["errors"][field][0], answer.json()


def test_an_unknown_pod_or_job_is_a_404_and_a_stray_parameter_a_400(team, api):
    job, member = archived_job(team), api["member"]
    for url in (log_url(job, "nope"), log_url(job, "nope", "log.txt"), log_url(team.other_job, "beta-job-worker-0"),
                f"/api/v1/jobs/{team.other_job.pk}/pods", f"/api/v1/jobs/{team.other_job.pk}/events"):
        answer = member.get(url)
        assert answer.status_code == 404 and answer.json() == {"error": "Not found."}, url
    for url in (log_url(job, suffix="log.txt"), f"/api/v1/jobs/{job.pk}/pods", f"/api/v1/jobs/{job.pk}/events"):
        answer = member.get(url, tail="5")
        assert answer.status_code == 400 and "this endpoint takes none" in answer.json()["errors"]["tail"][0], url


def test_dlc_not_answering_is_a_502_that_says_so(team, api):
    """The team's workspace endpoint is a closed port: a real failure to read DLC."""
    running = team.job
    for url in (log_url(running, "train-a-worker-0"), log_url(running, "train-a-worker-0", "log.txt"),
                f"/api/v1/jobs/{running.pk}/events"):
        answer = api["viewer"].get(url)
        assert answer.status_code == 502 and answer.json()["error"].startswith("Could not read the"), url


def test_head_answers_as_get_and_a_read_only_token_reads(team, api):
    job = archived_job(team)
    reader = Api(team.users["member"], read_only=True)
    for url in (log_url(job), log_url(job, suffix="log.txt"), f"/api/v1/jobs/{job.pk}/pods"):
        assert reader.get(url).status_code == 200, url
        head = reader.client.head(url, HTTP_AUTHORIZATION=f"Bearer {reader.token}")
        assert head.status_code == 200, url
    assert reader.client.post(log_url(job), HTTP_AUTHORIZATION=f"Bearer {reader.token}").status_code == 405


def test_an_events_type_reason_and_message_are_split_as_dlc_writes_them():
    events = jobpage.events(["2026-03-01T10:00:00Z [Warning] BackOff: Back-off restarting: exit 1",
                             "2026-03-01T10:00:01Z pod scheduled", "no time [Normal] here"])
    assert [event_json(e) for e in events] == [
        {"time": "2026-03-01T10:00:00+00:00", "type": "Warning", "reason": "BackOff",
         "message": "Back-off restarting: exit 1"},
        {"time": "2026-03-01T10:00:01+00:00", "type": None, "reason": None, "message": "pod scheduled"},
        {"time": None, "type": None, "reason": None, "message": "no time [Normal] here"}]


# --- a real job on the stack ---------------------------------------------------------------------------------------


def _documented(doc, path: str, answer: requests.Response) -> list[str]:
    """What of a JSON answer over HTTP the OpenAPI document does not describe (tests/support/openapi_check)."""
    documented = openapi_check.operation(doc, "GET", path)["responses"]
    response = openapi_check.resolve(doc, documented[str(answer.status_code)])
    schema = response["content"]["application/json"]["schema"]
    return openapi_check.problems(doc, schema, answer.json())


@pytest.mark.integration
def test_a_running_jobs_log_is_followed_once_masked_and_downloaded_whole(stack, member, workspace, settings, gate):
    """A job that prints its secret, waits for the test, then prints more: the first view holds the lines so far
    (the secret masked, the value really in DLC's log), following with the cursor gets only the later lines, each
    once, until `more` is false; the download and the archived log are whole and masked; events are listed; a
    viewer and a read-only token read, another workspace's member gets 404."""
    settings.LOCALDLC_CREDENTIALS_FILE = str(stack.credentials_file)
    wandb = f"wandb-{secrets.token_hex(16)}"
    before = ["start", "WANDB_API_KEY=********", *map(str, range(1, 6))]
    after = ["after-1", "late ********", "after-3", "done"]
    command = (f"echo start; echo WANDB_API_KEY=$WANDB_API_KEY; seq 1 5; until [ -e {gate} ]; do sleep 0.1; done; "
               "echo after-1; echo \"late $WANDB_API_KEY\"; echo after-3; echo done")
    body = {"DisplayName": "api-logs", "JobType": "PyTorchJob", "UserCommand": command,
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "registry.example/pytorch:2.3",
                          "EcsSpec": "ecs.g6.large"}], "SecretEnvs": {"WANDB_API_KEY": wandb}}
    viewer = make_user("vera")
    Membership.objects.create(user=viewer, workspace=workspace, role=Membership.VIEWER)
    elsewhere = Workspace.objects.create(name="Elsewhere", backend=Workspace.BACKEND_LOCAL, dlc_workspace_id="x",
                                         endpoint=workspace.endpoint)
    olga = make_user("olga")
    Membership.objects.create(user=olga, workspace=elsewhere, role=Membership.ADMIN)
    tokens = {name: apitokens.create_token(user, "test", **scope)[1] for name, user, scope in (
        ("member", member, {}), ("viewer", viewer, {}), ("read_only", member, {"read_only": True}),
        ("other", olga, {}))}

    def get(path: str, who: str = "member", **query) -> requests.Response:
        return requests.get(f"{stack.url}{path}", params=query, timeout=30,
                            headers={"Authorization": f"Bearer {tokens[who]}"})

    created = requests.post(f"{stack.url}/api/v1/jobs?workspace={workspace.pk}", json=body, timeout=30,
                            headers={"Authorization": f"Bearer {tokens['member']}"})
    assert created.status_code == 201, created.text
    job_id = created.json()["id"]
    doc = requests.get(f"{stack.url}/api/v1/openapi.json", timeout=30).json()

    def pods() -> list[dict]:
        answer = get(f"/api/v1/jobs/{job_id}/pods")
        assert answer.status_code == 200 and not _documented(doc, f"/api/v1/jobs/{job_id}/pods", answer), answer.text
        return [p for p in answer.json()["pods"] if p["status"] == "Running"]

    [pod] = wait_for(pods, timeout=60, what="the job's pod running")
    assert pod["role"] == "Worker" and pod["log"].endswith(f"/api/v1/jobs/{job_id}/pods/{pod['id']}/log")
    log = f"/api/v1/jobs/{job_id}/pods/{pod['id']}/log"

    def first_view() -> dict | None:
        answer = get(log)
        assert answer.status_code == 200 and not _documented(doc, log, answer), answer.text
        return answer.json() if answer.json()["lines"][-1:] == ["5"] else None

    first = wait_for(first_view, timeout=60, what="the lines before the gate in the first view")
    job = Job.objects.get(pk=job_id)
    raw = dlc.get_pod_logs(workspace, job.dlc_job_id, pod["id"])
    assert f"WANDB_API_KEY={wandb}" in raw, "the control: DLC's log holds the value"
    assert first["lines"] == before and first["line_numbers"] == list(range(1, 8)), first
    assert first["more"] is True and first["cursor"] and first["truncated"] is False
    for who in ("viewer", "read_only"):
        assert get(log, who).json()["lines"] == before, who
    running = get(f"{log}.txt")
    assert running.status_code == 200 and running.text == "".join(f"{line}\n" for line in before), running.text
    assert get(log, tail=2).json()["lines"] == ["4", "5"]
    assert get(log, q="wandb_api").json()["lines"] == ["WANDB_API_KEY=********"]
    assert get(log, q=wandb).json()["lines"] == [], "searching for the value finds nothing"
    events = get(f"/api/v1/jobs/{job_id}/events")
    assert events.status_code == 200 and not _documented(doc, f"/api/v1/jobs/{job_id}/events", events), events.text
    created_event = events.json()["events"][0]
    assert created_event["type"] == "Normal" and created_event["reason"] == "Created" and created_event["time"]
    assert created_event["message"].startswith(f"Job {job.dlc_job_id} created")
    for path in (f"/api/v1/jobs/{job_id}/pods", log, f"{log}.txt", f"/api/v1/jobs/{job_id}/events"):
        assert get(path, "other").status_code == 404, path

    gate.touch()
    followed, numbers, cursor, answers = [], [], first["cursor"], 0
    deadline = time.monotonic() + 60
    while True:
        answer = get(log, since=cursor)
        assert answer.status_code == 200 and not _documented(doc, log, answer), answer.text
        got = answer.json()
        followed += got["lines"]
        numbers += got["line_numbers"]
        cursor, answers = got["cursor"], answers + 1
        if not got["more"]:
            break
        assert time.monotonic() < deadline, f"still following after 60 s: {followed}"
        time.sleep(0.3)
    assert followed == after, "only the lines after the cursor, each once"
    assert numbers == list(range(8, 12)), "numbered on from the first view"
    assert answers > 1 and cursor is not None
    for text in (str(first), str(followed)):
        assert wandb not in text and wandb[6:26] not in text

    wait_for(lambda: Job.objects.filter(pk=job_id, logs_archived_at__isnull=False).exists(), timeout=60,
             what="the job ended and its log archived")
    download = get(f"{log}.txt")
    assert download.status_code == 200 and download.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert download.headers["Content-Disposition"] == f'attachment; filename="api-logs-{pod["id"]}.log"'
    assert download.text == "".join(f"{line}\n" for line in before + after) and wandb not in download.text
    archived = get(log).json()
    assert archived == {"pod": pod["id"], "lines": before + after, "line_numbers": list(range(1, 12)),
                        "cursor": None, "more": False, "truncated": False}
