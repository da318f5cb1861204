"""Sweeps through Django's test client: the wizard's POST with a sweep, its errors at the sweep field, the sweep
page (and its poll), the sweep list, the trial line of the job page, stop all. A real localdlc process answers
the wizard's ListEcsSpecs through the SDK; nothing reaches a worker (on-commit callbacks are only captured)."""

from __future__ import annotations

import html as htmllib
import re
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from jobs import secretbox, spec, sweeps
from jobs import status as st
from jobs.models import AuditEvent, Job, Membership, Sweep, SweepTrial, Workspace
from tests.support.wizard import form_data, local_workspace, page_form_data

pytestmark = pytest.mark.integration

URL = "/jobs/new"
GRID = "LR = 0.01, 0.1\nBS = 32, 64"


@pytest.fixture
def ws(db, localdlc, tmp_path, settings):
    return local_workspace(localdlc, tmp_path, settings)


def make_user(name: str, ws: Workspace | None, role: str = Membership.MEMBER):
    user = get_user_model().objects.create_user(name, password="pw-not-used-here")
    if ws is not None:
        Membership.objects.create(user=user, workspace=ws, role=role)
    return user


@pytest.fixture
def user(ws):
    return make_user("sweeper", ws)


@pytest.fixture
def web(client, user):
    client.force_login(user)
    return client


def launch(web, grid: str = GRID, **changes) -> Sweep:
    data = form_data(**{"basic__name": "lr-grid", "environment__command": "python train.py --lr $LR --bs $BS",
                        **changes})
    answer = web.post(URL, {**data, "sweep": grid})
    sweep = Sweep.objects.get()
    assert answer.status_code == 302 and answer["Location"] == sweep.get_absolute_url()
    return sweep


def test_a_wizard_post_with_a_sweep_makes_one_job_per_trial_and_redirects_to_the_sweep(
        web, ws, user, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as enqueued:
        sweep = launch(web, environment__envs__0__key="MODE", environment__envs__0__value="offline",
                       environment__envs__1__key="WANDB_API_KEY", environment__envs__1__value="wandb-secret-1",
                       environment__envs__1__secret="on")
    # The submits are enqueued on commit, all four after the one transaction that saved everything.
    assert len(enqueued) == 4
    assert (sweep.workspace, sweep.owner, sweep.name) == (ws, user, "lr-grid")
    assert sweep.parameters == [["LR", ["0.01", "0.1"]], ["BS", ["32", "64"]]]
    trials = list(SweepTrial.objects.filter(sweep=sweep).select_related("job").order_by("number"))
    assert [t.number for t in trials] == [1, 2, 3, 4]
    assert [t.values for t in trials] == [{"LR": "0.01", "BS": "32"}, {"LR": "0.01", "BS": "64"},
                                          {"LR": "0.1", "BS": "32"}, {"LR": "0.1", "BS": "64"}]
    assert [t.job.display_name for t in trials] == ["lr-grid-01", "lr-grid-02", "lr-grid-03", "lr-grid-04"]
    assert Job.objects.count() == 4
    for trial in trials:
        job = trial.job
        assert job.body["DisplayName"] == job.display_name and job.status == st.SUBMITTING
        assert job.body["Envs"] == {"MODE": "offline", "WANDB_API_KEY": spec.SECRET_PLACEHOLDER, **trial.values}
        assert job.body["UserCommand"] == "python train.py --lr $LR --bs $BS"
        assert "wandb-secret-1" not in str(job.body) and "wandb-secret-1" not in job.sealed_secrets
        assert secretbox.unseal(job.sealed_secrets) == {spec.SECRET_ENV_PREFIX + "WANDB_API_KEY": "wandb-secret-1"}
    assert AuditEvent.objects.filter(action="created", job__in=[t.job for t in trials]).count() == 4


def errors_at_the_sweep_field(html: str) -> str:
    block = re.search(r'<div class="field[^"]*invalid" id="f-sweep">(.*?)</div>\s*</div>', html, re.S)
    assert block, "no error at the sweep field"
    assert re.search(r'<textarea name="sweep"[^>]*aria-invalid="true"', html)
    return htmllib.unescape(block.group(1))


@pytest.mark.parametrize(("grid", "message"), [
    ("LR = 0.01", "A sweep needs at least 2 trials; these values make 1."),
    ("LR = 1, 2, 3, 4, 5, 6, 7, 8\nBS = 1, 2, 3, 4, 5, 6, 7",
     "These values make 56 trials; a sweep may have at most 50."),
    ("MODE = a, b", "MODE is already one of the job's environment variables"),
    ("HF_TOKEN = a, b", "looks like the name of a secret"),
    ("lr rate = 1, 2", "is not an environment variable name"),
])
def test_a_bad_sweep_is_an_error_at_its_field_nothing_saved_every_value_kept(web, grid, message):
    data = form_data(basic__name="kept-name", environment__command="echo kept",
                     environment__envs__0__key="MODE", environment__envs__0__value="offline")
    answer = web.post(URL, {**data, "sweep": grid})
    html = answer.content.decode()
    assert answer.status_code == 200
    assert Job.objects.count() == 0 and Sweep.objects.count() == 0
    assert message in errors_at_the_sweep_field(html)
    assert 'href="#id_sweep"' in re.search(r'id="error-summary">(.*?)</div>', html, re.S).group(1)
    assert f">\n{htmllib.escape(grid, quote=False)}</textarea>" in html
    assert 'name="basic-name" value="kept-name"' in html and "echo kept" in html
    assert 'name="environment-envs-0-value" value="offline"' in html


def test_the_first_trial_the_rules_refuse_is_the_error(web):
    envs = {}
    for i in range(19):  # the 20-variable limit: 19 + 1 parameter pass, 19 + 2 do not
        envs |= {f"environment__envs__{i}__key": f"V{i}", f"environment__envs__{i}__value": "x"}
    html = web.post(URL, {**form_data(**envs), "sweep": "A = 1, 2\nB = 3, 4"}).content.decode()
    assert "Trial 1 (A=1, B=3) would be refused: Envs: At most 20 environment variables" in errors_at_the_sweep_field(
        html)
    assert Job.objects.count() == 0 and Sweep.objects.count() == 0
    assert web.post(URL, {**form_data(**envs), "sweep": "A = 1, 2"}).status_code == 302
    assert Sweep.objects.get().trials.count() == 2


def test_an_invalid_job_and_a_bad_sweep_are_reported_together(web):
    html = web.post(URL, {**form_data(basic__name="bad name!"), "sweep": "1X = a, b"}).content.decode()
    assert "may contain only ASCII letters (a-z, A-Z), digits" in html
    assert "not an environment variable name" in errors_at_the_sweep_field(html)
    assert Job.objects.count() == 0


def test_adding_a_row_without_javascript_keeps_the_sweep_text(web):
    html = web.post(URL, {**form_data(), "_add": "envs", "sweep": GRID}).content.decode()
    assert f">\n{GRID}</textarea>" in html and Job.objects.count() == 0
    assert 'id="err-sweep"' not in html


def test_an_empty_sweep_submits_one_job_as_before(web):
    answer = web.post(URL, {**form_data(basic__name="single"), "sweep": "  \n"})
    assert answer.status_code == 302 and Job.objects.get().display_name == "single" and not Sweep.objects.exists()


def test_the_sweep_page_shows_its_facts_parameters_tally_and_trials_and_polls_while_active(web, user):
    sweep = launch(web)
    html = web.get(sweep.get_absolute_url()).content.decode()
    assert "lr-grid" in html and user.username in html and 'id="time-zone">Times in UTC' in html
    assert "LR = 0.01, 0.1" in html and "BS = 32, 64" in html
    rows = re.findall(r'<tr id="trial-(\d+)" data-status="([^"]+)">(.*?)</tr>', html, re.S)
    assert [n for n, _s, _r in rows] == ["1", "2", "3", "4"]
    assert re.findall(r'<td class="mono">([^<]*)</td>', rows[2][2]) == ["0.1", "32"]
    jobs = {t.number: t.job for t in sweep.trials.select_related("job")}
    assert f'href="/jobs/{jobs[3].pk}">lr-grid-03</a>' in rows[2][2]
    assert re.search(r'<span class="badge [a-z]+">4 [^<]+</span>', html)  # the tally: four waiting to submit
    poll = re.search(r'<div id="sweep-trials" hx-get="([^"]+)" hx-trigger="every 5s"', html)
    assert poll and poll.group(1) == sweep.get_absolute_url()
    # The poll's answer is the table alone; once every trial ended it asks no more.
    Job.objects.filter(pk__in=[j.pk for j in jobs.values()]).update(status="Succeeded")
    partial = web.get(sweep.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
    assert partial.lstrip().startswith('<div id="sweep-trials"') and "<html" not in partial
    assert 'data-polling="no"' in partial and "hx-get" not in partial and "4 Succeeded" in partial
    assert '<span id="sweep-stop" hx-swap-oob="true"></span>' in partial, "the page's Stop button goes too"
    # Compare links the first trials; "Clone as sweep" clones trial 1 with the grid in the sweep box.
    compare = re.search(r'id="compare-trials" href="([^"]+)"', html).group(1)
    assert parse_qs(urlparse(htmllib.unescape(compare)).query)["ids"] == [str(jobs[n].pk) for n in (1, 2, 3, 4)]
    clone = htmllib.unescape(re.search(r'id="clone-sweep" href="([^"]+)"', html).group(1))
    query = parse_qs(urlparse(clone).query)
    assert query["clone"] == [str(jobs[1].pk)] and query["sweep"] == ["LR = 0.01, 0.1\nBS = 32, 64"]


def test_clone_as_sweep_opens_the_wizard_without_the_parameters_among_the_variables(web):
    sweep = launch(web, environment__envs__0__key="MODE", environment__envs__0__value="offline")
    page = web.get(sweep.get_absolute_url()).content.decode()
    clone = htmllib.unescape(re.search(r'id="clone-sweep" href="([^"]+)"', page).group(1))
    html = web.get(clone).content.decode()
    assert f">\n{GRID}</textarea>" in html
    assert 'name="environment-envs-0-key" value="MODE"' in html
    # Not among the variables' rows (the name datalist may suggest them: the workspace's jobs used them).
    assert not re.search(r'name="environment-envs-\d+-key" value="(LR|BS)"', html)
    assert 'name="basic-name" value="lr-grid-copy"' in html
    # Posted as the page is, it is a second sweep of four.
    data = page_form_data(html)
    answer = web.post(URL, data)
    assert answer.status_code == 302, errors_at_the_sweep_field(answer.content.decode())
    second = Sweep.objects.exclude(pk=sweep.pk).get()
    assert second.trials.count() == 4 and second.name == "lr-grid-copy"
    assert {t.job.cloned_from_id for t in second.trials.select_related("job")} == {sweep.trials.get(number=1).job_id}


def test_clone_as_sweep_the_policy_note_the_name_field_and_the_baseline_agree(web):
    # QA: the note said "lr-grid-01 -> lr-grid-01-copy" while the name field held "lr-grid-copy".
    sweep = launch(web)
    page = web.get(sweep.get_absolute_url()).content.decode()
    clone = htmllib.unescape(re.search(r'id="clone-sweep" href="([^"]+)"', page).group(1))
    raw = web.get(clone).content.decode()
    html = htmllib.unescape(raw)
    assert 'name="basic-name" value="lr-grid-copy"' in html
    assert "<strong>Job name</strong>: lr-grid-01 → lr-grid-copy" in html
    assert 'name="_baseline_name" value="lr-grid-copy"' in html
    # The page re-rendered after a POST (here one refused for its empty command) still says the same.
    data = {**page_form_data(raw), "environment-command": ""}
    again = htmllib.unescape(web.post(URL, data).content.decode())
    assert "Enter a startup command" in again and Sweep.objects.count() == 1
    assert "<strong>Job name</strong>: lr-grid-01 → lr-grid-copy" in again


def test_a_get_with_sweep_prefills_the_box(web):
    html = web.get(URL + "?sweep=LR+%3D+1%2C+2").content.decode()
    assert ">\nLR = 1, 2</textarea>" in html


def test_the_job_page_of_a_trial_says_which_and_its_values(web):
    sweep = launch(web)
    job = sweep.trials.get(number=3).job
    html = htmllib.unescape(web.get(job.get_absolute_url()).content.decode())
    line = re.search(r'id="sweep-trial">(.*?)</p>', html, re.S).group(1)
    assert "Trial 3 of 4 in sweep" in line and f'href="{sweep.get_absolute_url()}">lr-grid</a>' in line
    assert "LR=0.1, BS=32" in line


def test_another_workspaces_user_gets_404_and_does_not_list_it(web, client, ws):
    sweep = launch(web)
    other_ws = Workspace.objects.create(name="Other", backend=Workspace.BACKEND_LOCAL)
    outsider = make_user("outsider", other_ws)
    other = Client()
    other.force_login(outsider)
    assert other.get(sweep.get_absolute_url()).status_code == 404
    assert other.post(f"/sweeps/{sweep.pk}/stop").status_code == 404
    assert "lr-grid" not in other.get("/sweeps/").content.decode()
    viewer = make_user("viewer", ws, Membership.VIEWER)
    other.force_login(viewer)
    html = other.get(sweep.get_absolute_url()).content.decode()
    assert "lr-grid-01" in html and 'id="stop-all"' not in html and 'id="clone-sweep"' not in html
    # QA: the sweep list offered viewers "Create a job or a sweep", which answers 403.
    assert 'id="create-sweep"' not in other.get("/sweeps/").content.decode()
    assert other.get("/jobs/new").status_code == 403
    assert 'id="create-sweep"' in web.get("/sweeps/").content.decode()


def test_the_sweep_list_shows_the_workspaces_sweeps_with_trial_counts(web):
    sweep = launch(web)
    html = web.get("/sweeps/").content.decode()
    row = re.search(rf'<tr id="sweep-{sweep.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "lr-grid" in row and "LR, BS" in row and "<td>4</td>" in row
    assert 'href="/sweeps/"' in html  # the top bar's link


def test_stop_all_stops_the_active_trials_a_member_may_stop(web, ws, user):
    sweep = launch(web)
    jobs = {t.number: t.job for t in sweep.trials.select_related("job")}
    Job.objects.filter(pk=jobs[4].pk).update(status="Succeeded")
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(user)
    assert csrf_client.post(f"/sweeps/{sweep.pk}/stop").status_code == 403  # no CSRF token
    assert Job.objects.filter(status=st.SUBMITTING).count() == 3
    # Another member may not stop this member's trials (the list's rule: admins stop anyone's).
    colleague = make_user("colleague", ws)
    other = Client()
    other.force_login(colleague)
    answer = other.post(f"/sweeps/{sweep.pk}/stop", follow=True)
    assert "Stop all active trials: 3 × Not permitted." in answer.content.decode()
    assert Job.objects.filter(status=st.SUBMITTING).count() == 3
    # The owner: never sent, they are cancelled at once.
    answer = web.post(f"/sweeps/{sweep.pk}/stop", follow=True)
    assert answer.redirect_chain[-1][0] == sweep.get_absolute_url()
    assert "Stop all active trials: 3 × Stopped." in answer.content.decode()
    assert [Job.objects.get(pk=jobs[n].pk).status for n in (1, 2, 3, 4)] == ["Stopped"] * 3 + ["Succeeded"]
    answer = web.post(f"/sweeps/{sweep.pk}/stop", follow=True)
    assert "no trial is active" in answer.content.decode()


def test_a_2x2_sweep_really_runs_on_localdlc_and_each_trial_sees_its_own_values(stack, member):
    """The whole way: the wizard's POST, the worker's CreateJob per trial through the SDK, localdlc pods, the
    sync, the pod logs. Each trial's log holds its own LR and BS, so the variables reached the right pods."""
    from tests.support.waiting import wait_for
    from tests.test_skeleton_flow import csrf, signed_in_session

    web = signed_in_session(stack.url, member.username)
    create_url = f"{stack.url}/jobs/new"
    data = form_data(basic__name="grid-e2e", environment__image="registry.example/pytorch:2.3",
                     resources__roles__0__instance_type="ecs.g6.large",
                     environment__command='echo "trial lr=$LR bs=$BS"')
    answer = web.post(create_url, data={**data, "sweep": "LR = 0.01, 0.1\nBS = 32, 64",
                                        "csrfmiddlewaretoken": csrf(web, create_url)},
                      headers={"Referer": create_url})
    sweep = Sweep.objects.get(name="grid-e2e")
    assert answer.status_code == 200 and answer.url == f"{stack.url}{sweep.get_absolute_url()}"
    trials = list(sweep.trials.select_related("job").order_by("number"))
    assert len(trials) == 4

    def finished():
        for t in trials:
            t.job.refresh_from_db()
        # archived too: until their metrics are read the table keeps polling (sweeps.polling)
        return all(t.job.status in st.TERMINAL and t.job.pods and t.job.logs_archived_at for t in trials)

    wait_for(finished, timeout=120)
    for t in trials:
        job = t.job
        assert job.status == "Succeeded", (job.display_name, job.reason_message, job.submit_error)
        log = web.get(f"{stack.url}/jobs/{job.pk}/pods/{job.pods[0]['PodId']}/logs").text
        assert f"trial lr={t.values['LR']} bs={t.values['BS']}" in log, (job.display_name, log[-500:])
    page = web.get(f"{stack.url}{sweep.get_absolute_url()}").text
    assert "4 Succeeded" in page and 'data-polling="no"' in page


def test_a_template_start_takes_a_sweep_unless_it_locks_the_variables(web, ws):
    from jobs import templates_lib
    from jobs.forms import wizard as glue

    admin = make_user("admin", ws, Membership.ADMIN)
    sections = glue.Wizard(form_data(basic__name="from-tpl", environment__command="echo $LR")).sections
    version = templates_lib.save(ws, admin, "tpl", sections)
    templates_lib.set_locks(version.template, admin, ["environment.command"])
    page = web.get(f"{URL}?template={version.template.pk}").content.decode()
    data = {**page_form_data(page), "sweep": "LR = 1, 2"}
    answer = web.post(URL, data)
    assert answer.status_code == 302, errors_at_the_sweep_field(answer.content.decode())
    assert [t.job.body["Envs"] for t in Sweep.objects.get().trials.select_related("job")] == [{"LR": "1"},
                                                                                              {"LR": "2"}]
    templates_lib.set_locks(version.template, admin, ["environment.envs"])
    html = web.post(URL, {**data, "_submission": ""}).content.decode()  # a new page's post, not this one's again
    assert "locks the environment variables" in errors_at_the_sweep_field(html)
    assert Sweep.objects.count() == 1


def test_the_trials_metrics_are_columns_and_rank_by_puts_the_best_ended_trial_first(web):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from jobs.models import JobScalar

    sweep = launch(web)
    jobs = {t.number: t.job for t in sweep.trials.select_related("job")}
    finals = {1: {"loss": 0.5, "acc": 0.7}, 2: {"loss": 0.2, "acc": 0.9}, 3: {"loss": 0.1}, 4: {"loss": 0.05}}
    for number, metrics in finals.items():
        for name, last in metrics.items():
            JobScalar.objects.create(job=jobs[number], pod_id="p-0", name=name, points=[[9, last]], last=last,
                                     min=last, max=last, count=1, last_step=9)
    Job.objects.filter(pk__in=[jobs[n].pk for n in (1, 2, 3)]).update(status="Succeeded")  # 4 still runs

    html = web.get(sweep.get_absolute_url()).content.decode()
    assert re.findall(r'<th class="metric mono[^"]*" title="Last value">([^<]+)</th>', html) == ["loss", "acc"]
    row = re.search(r'<tr id="trial-1" [^>]*>(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'<td class="metric-value">([^<]*)</td>', row) == ["0.5", "0.7"]
    assert f'href="/sweeps/{sweep.pk}?rank=loss&amp;goal=min"' in html
    assert f'href="/sweeps/{sweep.pk}?rank=acc&amp;goal=max"' in html

    with CaptureQueriesContext(connection) as queries:
        ranked = web.get(f"{sweep.get_absolute_url()}?rank=loss", HTTP_HX_REQUEST="true").content.decode()
    assert sum("jobs_jobscalar" in q["sql"] for q in queries.captured_queries) == 1, "one query for all trials"
    order = re.findall(r'<tr id="trial-(\d+)"', ranked)
    assert order == ["3", "2", "1", "4"], "ended trials by loss, lowest first; the running one below"
    best = re.search(r'<tr id="trial-3" [^>]*>(.*?)</tr>', ranked, re.S).group(1)
    assert 'id="best-trial">Best</span> 1' in best and ranked.count('id="best-trial"') == 1
    # The poll (trial 4 runs) keeps the ranking; the goal can be flipped.
    assert f'hx-get="/sweeps/{sweep.pk}?rank=loss&amp;goal=min" hx-trigger="every 5s"' in ranked
    flipped = web.get(f"{sweep.get_absolute_url()}?rank=loss&goal=max", HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'<tr id="trial-(\d+)"', flipped) == ["1", "2", "3", "4"]
    assert 'id="rank-goal">highest first' in flipped

    bad = web.get(f"{sweep.get_absolute_url()}?rank=<b>bleu</b>")
    assert bad.status_code == 200
    text = bad.content.decode()
    assert "No trial has a metric named &#x27;&lt;b&gt;bleu&lt;/b&gt;&#x27;: rank by one of acc, loss." in text
    assert re.findall(r'<tr id="trial-(\d+)"', text) == ["1", "2", "3", "4"]


# --- random search ---------------------------------------------------------------------------------------------

RANDOM = "LR = loguniform(1e-5, 1e-1)\nLAYERS = int(2, 8)\nBS = 32, 64"


def field_errors(html: str, field: str) -> str:
    block = re.search(rf'<div class="field[^"]*invalid" id="f-{field}">(.*?)</div>\s*</div>', html, re.S)
    assert block, f"no error at {field}"
    assert re.search(rf'name="{field}"[^>]*aria-invalid="true"', html, re.S)
    return htmllib.unescape(block.group(1))


def post_random(web, text: str = RANDOM, trials: str = "5", seed: str = "1234", **changes):
    data = form_data(**{"basic__name": "lr-random", "environment__command": "python train.py --lr $LR", **changes})
    return web.post(URL, {**data, "sweep": text, "sweep_trials": trials, "sweep_seed": seed})


def test_a_random_sweep_makes_the_trials_asked_with_sampled_values_and_stores_method_and_seed(
        web, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as enqueued:
        answer = post_random(web)
    sweep = Sweep.objects.get()
    assert answer.status_code == 302 and answer["Location"] == sweep.get_absolute_url()
    assert len(enqueued) == 5 and Job.objects.count() == 5
    assert (sweep.method, sweep.trials_asked, sweep.seed) == ("random", 5, 1234)
    assert sweep.specs == [["LR", "loguniform(1e-5, 1e-1)"], ["LAYERS", "int(2, 8)"], ["BS", "32, 64"]]
    trials = list(sweep.trials.select_related("job").order_by("number"))
    expected = sweeps.parse_form(RANDOM, "5", "1234")[0].trials()  # random.Random(1234): the same draws
    assert [t.values for t in trials] == expected and len({tuple(v.values()) for v in expected}) == 5
    for trial in trials:
        assert trial.job.body["Envs"] == trial.values
        assert 1e-5 <= float(trial.values["LR"]) <= 0.1 and 2 <= int(trial.values["LAYERS"]) <= 8
    assert [t.job.display_name for t in trials] == [f"lr-random-0{n}" for n in range(1, 6)]
    html = htmllib.unescape(web.get(sweep.get_absolute_url()).content.decode())
    assert re.search(r'id="sweep-method">Random search, 5 trials, seed 1234<', html)
    assert "LR = loguniform(1e-5, 1e-1)" in html and "LAYERS = int(2, 8)" in html and "BS = 32, 64" in html
    row = re.search(r'<tr id="trial-2" [^>]*>(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'<td class="mono">([^<]*)</td>', row) == [expected[1]["LR"], expected[1]["LAYERS"],
                                                                 expected[1]["BS"]]


def test_an_empty_seed_is_drawn_stored_and_shown(web):
    assert post_random(web, seed="").status_code == 302
    sweep = Sweep.objects.get()
    assert sweep.seed is not None
    html = web.get(sweep.get_absolute_url()).content.decode()
    assert f"Random search, 5 trials, seed {sweep.seed}<" in html
    assert [t.values for t in sweep.trials.order_by("number")] == \
        sweeps.parse_form(RANDOM, "5", str(sweep.seed))[0].trials()


def test_a_grid_ignores_trials_and_seed(web):
    assert post_random(web, text=GRID, trials="junk", seed="-3").status_code == 302
    sweep = Sweep.objects.get()
    assert (sweep.method, sweep.trials_asked, sweep.seed, sweep.trials.count()) == ("grid", None, None, 4)
    assert 'id="sweep-method">Grid<' in web.get(sweep.get_absolute_url()).content.decode()


@pytest.mark.parametrize(("text", "trials", "seed", "field", "message"), [
    ("LR = normal(0, 1)", "5", "", "sweep", "LR = normal(...): unknown distribution; use uniform(low, high)"),
    ("LR = loguniform(0, 1)", "5", "", "sweep", "LR = loguniform(0, 1): low must be above 0"),
    ("N = int(2, 8.5)", "5", "", "sweep", "the bounds must be whole numbers"),
    ("LR = uniform(1, 1)", "5", "", "sweep", "low must be below high"),
    (RANDOM, "", "", "sweep_trials", "Give the number of trials of the random search: 2 to 50."),
    (RANDOM, "51", "", "sweep_trials", "A random search runs 2 to 50 trials, not 51."),
    ("N = int(1, 2)\nBS = 32, 64", "5", "", "sweep_trials", "only 4 combinations, fewer than the 5 trials asked"),
    (RANDOM, "5", "-1", "sweep_seed", "The seed is a whole number from 0"),
])
def test_a_bad_random_sweep_is_an_error_at_its_field_nothing_saved_every_value_kept(web, text, trials, seed, field,
                                                                                     message):
    answer = post_random(web, text, trials, seed, basic__name="kept-name")
    html = answer.content.decode()
    assert answer.status_code == 200 and Job.objects.count() == 0 and Sweep.objects.count() == 0
    assert message in field_errors(html, field)
    assert f'href="#id_{field}"' in re.search(r'id="error-summary">(.*?)</div>', html, re.S).group(1)
    assert f">\n{htmllib.escape(text, quote=False)}</textarea>" in html
    assert f'name="sweep_trials" id="id_sweep_trials" min="2" max="50" step="1" value="{trials}"' in html
    assert f'id="id_sweep_seed" min="0" step="1" value="{seed}"' in html
    assert 'name="basic-name" value="kept-name"' in html


def test_clone_as_sweep_of_a_random_search_carries_trials_and_seed_and_samples_the_same(web):
    assert post_random(web, seed="77").status_code == 302
    sweep = Sweep.objects.get()
    page = web.get(sweep.get_absolute_url()).content.decode()
    clone = htmllib.unescape(re.search(r'id="clone-sweep" href="([^"]+)"', page).group(1))
    query = parse_qs(urlparse(clone).query)
    assert (query["sweep"], query["sweep_trials"], query["sweep_seed"]) == ([RANDOM], ["5"], ["77"])
    html = web.get(clone).content.decode()
    assert f">\n{RANDOM}</textarea>" in html and 'value="5"' in html and 'value="77"' in html
    assert not re.search(r'name="environment-envs-\d+-key" value="(LR|LAYERS)"', html)
    answer = web.post(URL, page_form_data(html))
    assert answer.status_code == 302, answer.content.decode()[-3000:]
    second = Sweep.objects.exclude(pk=sweep.pk).get()
    assert (second.method, second.trials_asked, second.seed) == ("random", 5, 77)
    assert [t.values for t in second.trials.order_by("number")] == [t.values for t in sweep.trials.order_by("number")]


def test_sweep_values_with_markup_are_shown_as_text_on_the_sweep_and_job_pages(web, ws):
    # Sweep values are free text (anything but a comma or a line break) shown on several pages: escaped everywhere.
    payload = ['<img src=x onerror="alert(1)">', "<script>alert(2)</script>"]
    sweep = launch(web, grid=f"MODE = {', '.join(payload)}", environment__command="python train.py --mode $MODE")
    job = sweep.trials.get(number=1).job
    for url in (sweep.get_absolute_url(), job.get_absolute_url(), f"/jobs/compare?ids={job.pk}&ids={job.pk + 1}"):
        page = web.get(url).content.decode()
        assert "&lt;img src=x" in page, url  # trial 1's value, shown as text
        assert "<img src=x" not in page and "<script>alert" not in page, url


def test_the_table_keeps_polling_after_the_last_trial_ended_until_its_metrics_are_read(web):
    from datetime import timedelta

    from django.utils import timezone

    sweep = launch(web)
    jobs = [t.job for t in sweep.trials.select_related("job")]
    ids = [j.pk for j in jobs]
    now = timezone.now()
    # Ended a moment ago, the log archive (which reads the METRIC lines) not done yet: the page must ask again,
    # else it stays on "No trial has training metrics yet" when the metrics arrive seconds later.
    for pk in ids:
        Job.objects.filter(pk=pk).update(status="Succeeded", dlc_job_id=f"dlc-{pk}", finished_at=now)

    def partial() -> str:
        return web.get(sweep.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()

    page = partial()
    assert 'data-polling="yes"' in page and "hx-get" in page and "4 Succeeded" in page
    assert 'id="stop-all"' not in web.get(sweep.get_absolute_url()).content.decode(), "nothing left to stop"
    Job.objects.filter(pk__in=ids).update(logs_archived_at=now)
    assert 'data-polling="no"' in partial()
    # An archive that never came is not waited for forever.
    Job.objects.filter(pk__in=ids).update(logs_archived_at=None, finished_at=now - sweeps.ARCHIVE_WAIT - timedelta(1))
    assert 'data-polling="no"' in partial()


def test_a_ranked_table_keeps_its_ranking_through_the_seconds_its_ended_trials_metrics_are_read(web):
    from django.utils import timezone

    from jobs.models import JobScalar

    sweep = launch(web)
    jobs = {t.number: t.job for t in sweep.trials.select_related("job")}
    now = timezone.now()
    # The last trials ended a moment ago and their archives (which read the METRIC lines) are not done yet: the
    # ranked metric is unknown for now. The poll must keep asking for the ranking, or once the metrics arrive the
    # table stays in trial order while the address (pushed by the Rank button) says ?rank=loss.
    for job in jobs.values():
        Job.objects.filter(pk=job.pk).update(status="Succeeded", dlc_job_id=f"dlc-{job.pk}", finished_at=now)
    waiting = web.get(f"{sweep.get_absolute_url()}?rank=loss", HTTP_HX_REQUEST="true").content.decode()
    assert f'hx-get="/sweeps/{sweep.pk}?rank=loss" hx-trigger="every 5s"' in waiting
    error = re.search(r'<p class="error" id="rank-error" role="alert">([^<]+)</p>', waiting).group(1)
    assert htmllib.unescape(error) == ("No trial has a metric named 'loss' yet: the ended trials' metrics are being "
                                       "read from their logs."), "not 'no trial printed METRIC lines': they did"

    for number, last in {1: 0.5, 2: 0.2, 3: 0.1, 4: 0.3}.items():
        JobScalar.objects.create(job=jobs[number], pod_id="p-0", name="loss", points=[[9, last]], last=last,
                                 min=last, max=last, count=1, last_step=9)
    Job.objects.filter(pk__in=[j.pk for j in jobs.values()]).update(logs_archived_at=now)
    poll = re.search(r'hx-get="([^"]+)" hx-trigger="every 5s"', waiting).group(1)
    ranked = web.get(htmllib.unescape(poll), HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'<tr id="trial-(\d+)"', ranked) == ["3", "2", "4", "1"]
    assert 'id="best-trial">Best</span> 1' in ranked and 'id="rank-error"' not in ranked
    assert 'data-polling="no"' in ranked


def test_re_ranking_in_place_also_updates_the_compare_link_to_the_best_trials(web):
    from jobs.models import JobScalar

    sweep = launch(web)
    jobs = {t.number: t.job for t in sweep.trials.select_related("job")}
    for number, last in {1: 0.5, 2: 0.2, 3: 0.1, 4: 0.3}.items():
        JobScalar.objects.create(job=jobs[number], pod_id="p-0", name="loss", points=[[9, last]], last=last,
                                 min=last, max=last, count=1, last_step=9)
    Job.objects.filter(pk__in=[j.pk for j in jobs.values()]).update(status="Succeeded")
    ranked = web.get(f"{sweep.get_absolute_url()}?rank=loss", HTTP_HX_REQUEST="true").content.decode()
    link = re.search(r'<a class="button" id="compare-trials" href="([^"]+)" hx-swap-oob="true">', ranked)
    assert link, "the page's Compare link, outside the swapped table, kept the trial order"
    ids = parse_qs(urlparse(htmllib.unescape(link.group(1))).query)["ids"]
    assert ids == [str(jobs[n].pk) for n in (3, 2, 4, 1)]


def test_the_sweep_list_is_newest_first_past_one_page_with_a_status_summary_per_sweep_in_one_query(web, ws, user):
    from datetime import timedelta

    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from jobs import sweep_views

    sweep = launch(web)  # the newest: created now
    statuses = ["Running", "Succeeded", "Succeeded", "Failed"]
    for trial, status in zip(sweep.trials.order_by("number").select_related("job"), statuses, strict=True):
        Job.objects.filter(pk=trial.job_id).update(status=status)
    old = timezone.now() - timedelta(days=1)
    Sweep.objects.bulk_create([Sweep(workspace=ws, owner=user, name=f"old-{n:02d}", parameters=[["LR", [0.1]]],
                                     created_at=old + timedelta(minutes=n)) for n in range(sweep_views.LIST_SIZE)])
    with CaptureQueriesContext(connection) as queries:
        html = web.get("/sweeps/").content.decode()
    names = re.findall(r'<tr id="sweep-\d+">\s*<td class="name"><a [^>]*>([^<]+)</a>', html)
    assert len(names) == sweep_views.LIST_SIZE and names[:3] == ["lr-grid", "old-49", "old-48"], names[:3]
    assert "old-00" not in names, "the oldest falls off the page, not the newest"
    row = re.search(rf'<tr id="sweep-{sweep.pk}">(.*?)</tr>', html, re.S).group(1)
    summary = re.sub(r"<[^>]+>", "", re.search(r'<td class="tally">(.*?)</td>', row, re.S).group(1))
    assert " ".join(summary.split()) == "1 Running · 2 Succeeded · 1 Failed", "active first, then in lifecycle order"
    assert sum("jobs_sweeptrial" in q["sql"] for q in queries.captured_queries) == 2, \
        "the trial counts and the status summary: one query each for the whole page, not one per sweep"


def test_rank_by_offers_each_metric_as_a_button_and_marks_the_chosen_one(web):
    from jobs.models import JobScalar

    sweep = launch(web)
    for trial in sweep.trials.select_related("job"):
        for name in ("loss", "acc"):
            JobScalar.objects.create(job=trial.job, pod_id="p-0", name=name, points=[[1, 0.5]], last=0.5, min=0.5,
                                     max=0.5, count=1, last_step=1)
    html = web.get(sweep.get_absolute_url()).content.decode()
    line = re.search(r'<p class="rank-by" id="rank-by">(.*?)</p>', html, re.S).group(1)
    assert line.lstrip().startswith("Rank trials by:") and "the table is in trial order" in line
    assert re.findall(r'class="button small mono" [^>]*aria-pressed="false">(\w+)</a>', line) == ["acc", "loss"]
    ranked = web.get(f"{sweep.get_absolute_url()}?rank=acc").content.decode()
    line = re.search(r'<p class="rank-by" id="rank-by">(.*?)</p>', ranked, re.S).group(1)
    assert re.findall(r'class="button small mono current" [^>]*aria-pressed="true">(\w+)</a>', line) == ["acc"]
    assert 'id="rank-clear">Trial order</a>' in line


def test_a_running_trials_values_so_far_are_shown_read_in_turn_not_at_every_view(web, ws, localdlc, settings):
    """QA: a running trial showed "—" for its metrics while its job page charted them live. The page shows the
    values so far, read from its pod's log through the SDK at most once per SAMPLE_SECONDS however often the page
    polls, and at most DLC_SWEEP_LIVE_READS trials per view."""
    import time

    from django.core.cache import cache
    from django.utils import timezone

    from jobs import dlc, lifecycle, scalars
    from jobs.models import JobScalar

    body = {"DisplayName": "live-02", "JobType": "PyTorchJob",
            "UserCommand": 'for s in 0 1 2; do echo "METRIC step=$s loss=0.$((5 - s))"; done; sleep 30',
            "JobSpecs": [{"Type": "Worker", "PodCount": 1, "Image": "img", "EcsSpec": "ecs.g6.large"}]}
    now = timezone.now()
    sweep = Sweep.objects.create(workspace=ws, name="live", parameters=[["Q", ["a", "b"]]])
    ended = Job.objects.create(workspace=ws, display_name="live-01", status="Succeeded", dlc_job_id="dlc-live-1",
                               finished_at=now, logs_archived_at=now)
    JobScalar.objects.create(job=ended, pod_id="p", name="loss", points=[[3, 0.2]], last=0.2, min=0.2, max=0.2,
                             count=1, last_step=3)
    running = Job.objects.create(workspace=ws, display_name="live-02", status="Creating", job_type="PyTorchJob",
                                 body=body, dlc_job_id=dlc.create_job(ws, body))
    SweepTrial.objects.create(sweep=sweep, job=ended, number=1, values={"Q": "a"})
    SweepTrial.objects.create(sweep=sweep, job=running, number=2, values={"Q": "b"})
    try:
        deadline = time.monotonic() + 30
        while not ((item := dlc.get_job(ws, running.dlc_job_id))["Status"] == "Running" and item.get("Pods")):
            assert time.monotonic() < deadline, item["Status"]
            time.sleep(0.1)
        lifecycle.apply_remote(running, item)
        while "loss" not in scalars.live(running)[1]:  # its METRIC lines are in the log
            assert time.monotonic() < deadline
            time.sleep(0.1)
        cache.clear()  # what that read left: the page reads it itself

        def cells(html: str, number: int) -> list[str]:
            row = re.search(rf'<tr id="trial-{number}" [^>]*>(.*?)</tr>', html, re.S).group(1)
            return re.findall(r'<td class="(metric-value[^"]*)"[^>]*>([^<]*)</td>', row)

        html = web.get(sweep.get_absolute_url()).content.decode()
        assert cells(html, 1) == [("metric-value", "0.2")]
        assert cells(html, 2) == [("metric-value live", "0.3")], "its last value so far, not —"
        assert 'id="live-values"' in html
        reads = localdlc.stats()["calls"].get("GetPodLogs", 0)
        polled = web.get(sweep.get_absolute_url(), HTTP_HX_REQUEST="true").content.decode()
        assert cells(polled, 2) == [("metric-value live", "0.3")]
        assert localdlc.stats()["calls"].get("GetPodLogs", 0) == reads, "read again only after SAMPLE_SECONDS"

        cache.clear()
        settings.DLC_SWEEP_LIVE_READS = 0  # no read left for this view: nothing read, nothing made up
        html = web.get(sweep.get_absolute_url()).content.decode()
        assert cells(html, 2) == [("metric-value", "—")]
        assert 'id="live-values"' not in html and localdlc.stats()["calls"].get("GetPodLogs", 0) == reads
    finally:
        dlc.stop_job(ws, running.dlc_job_id)
