"""Jobs side by side (jobs.compare and its page): the configuration rows of the job page, one column per job, the
rows that differ marked and shown alone by default; variables, roles and tags compared by name; secrets hidden as
on the job page; only jobs the user may view, without telling which others exist; bad selections answered with a
message; one query for the jobs whatever their number."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs import compare, jobpage
from jobs.models import Job, Membership, Workspace


@pytest.fixture
def ws(db):
    """The workspace of tests.support.pages' `people`, without a localdlc: nothing here calls DLC."""
    return Workspace.objects.create(name="Local", backend=Workspace.BACKEND_LOCAL)


def body(name: str = "job", *, command: str = "python train.py", envs: dict | None = None, pods: int = 1,
         tags: dict | None = None, **extra) -> dict:
    return {"DisplayName": name, "JobType": "PyTorchJob", "UserCommand": command, "Envs": envs or {},
            "JobSpecs": [{"Type": "Worker", "PodCount": pods, "Image": "registry.example/torch:2.3",
                          "EcsSpec": "ecs.g6.large"}],
            "Settings": {"Tags": tags or {"team": "nlp"}}, **extra}


def make_job(ws, owner, name: str = "job", **spec) -> Job:
    return Job.objects.create(workspace=ws, owner=owner, display_name=name, status="Succeeded",
                              job_type="PyTorchJob", body=body(name, **spec))


def rows_of(groups: list[compare.Group]) -> dict[str, compare.Row]:
    return {row.label: row for group in groups for row in group.rows}


def page_rows(html: str) -> dict[str, tuple[bool, list[str]]]:
    """{label: (marked as differing, [cell texts])} of the compare table's configuration rows."""
    out = {}
    html = re.sub(r'<tbody id="compare-summary">.*?</tbody>', "", html, flags=re.S)
    for attrs, label, cells in re.findall(
            r'<tr( class="differs")?><th scope="row">(.*?)</th>(.*?)</tr>', html, re.S):
        text = unescape(re.sub(r"<[^>]+>", "", label)).replace("≠", "").strip()
        out[text] = (bool(attrs), [unescape(re.sub(r"<[^>]+>", "", c)).strip()
                                   for c in re.findall(r"<td[^>]*>(.*?)</td>", cells, re.S)])
    return out


def url(*ids, all_rows: bool = False) -> str:
    return compare.compare_url(ids, all_rows=all_rows)


# --- rows, without a request or the database -------------------------------------------------------------


def test_rows_follow_the_job_pages_sections_and_mark_what_differs():
    a = Job(display_name="a", body=body("a", command="python train.py --lr 0.1", pods=2))
    b = Job(display_name="b", body=body("b", command="python train.py --lr 0.01", pods=2))
    groups = compare.groups([jobpage.sections(a), jobpage.sections(b)])
    assert [g.title for g in groups] == [jobpage.SECTION_TITLES[k] for k in
                                         ("basic", "environment", "resources", "vpc", "fault_tolerance", "ram_role")]
    rows = rows_of(groups)
    command = rows["Startup command"]
    assert command.differs and [c.value for c in command.cells] == ["python train.py --lr 0.1",
                                                                     "python train.py --lr 0.01"]
    assert [c.changed for c in command.cells] == [False, True], "the cell unlike the first job's is the one marked"
    assert not rows["Image"].differs and not rows["Job resources › Worker › Nodes"].differs
    assert "Job name" not in rows, "the name heads the column"


def test_variables_roles_and_tags_are_compared_by_name_not_position():
    a = Job(display_name="a", body=body(envs={"EPOCHS": "3", "LR": "0.1"}, tags={"team": "nlp", "lr": "0.1"}))
    b = Job(display_name="b", body=body(envs={"SEED": "7", "EPOCHS": "3", "LR": "0.2"}, tags={"team": "nlp"}))
    rows = rows_of(compare.groups([jobpage.sections(j) for j in (a, b)], [compare._tags(a), compare._tags(b)]))
    assert not rows["Variable EPOCHS"].differs, "the same variable at another position is the same"
    assert [c.value for c in rows["Variable LR"].cells] == ["0.1", "0.2"] and rows["Variable LR"].differs
    assert [c.value for c in rows["Variable SEED"].cells] == [None, "7"] and rows["Variable SEED"].differs
    assert [c.value for c in rows["Tag lr"].cells] == ["0.1", None]
    assert not rows["Tag team"].differs
    env = next(g for g in compare.groups([jobpage.sections(j) for j in (a, b)]) if g.key == "environment")
    labels = [r.label for r in env.rows]
    assert labels.index("Variable SEED") < labels.index("Variable EPOCHS"), "a new row goes where its job has it"


def test_roles_are_compared_per_role_and_a_missing_row_differs_from_an_empty_one():
    two = body()
    two["JobSpecs"] = [*two["JobSpecs"], {"Type": "PS", "PodCount": 1, "Image": "registry.example/torch:2.3",
                                          "EcsSpec": "ecs.g6.xlarge"}]
    a, b = Job(display_name="a", body=body(envs={"EMPTY": ""})), Job(display_name="b", body=two)
    rows = rows_of(compare.groups([jobpage.sections(a), jobpage.sections(b)]))
    assert not rows["Job resources › Worker › Instance type"].differs
    assert [c.value for c in rows["Job resources › PS › Instance type"].cells] == [None, "ecs.g6.xlarge"]
    assert [c.value for c in rows["Variable EMPTY"].cells] == ["", None] and rows["Variable EMPTY"].differs


def test_ids_are_parsed_in_order_without_repeats_and_junk_is_kept_short():
    ids, junk, more = compare.parse_ids(["3", " 1 ", "3", "", "abc", "²", "-4", "1" * 19, "x" * 100, "a", "b", "c"])
    assert ids == [3, 1]
    assert junk[:3] == ["abc", "²", "-4"] and len(junk) == 5 and more == 3
    assert all(len(j) <= 41 for j in junk)


# --- the page --------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_page_shows_only_differences_by_default_and_all_rows_on_request(client, people, ws):
    a = make_job(ws, people["alice"], "lr-0.1", command="python train.py --lr 0.1")
    b = make_job(ws, people["bob"], "lr-0.01", command="python train.py --lr 0.01")
    client.force_login(people["alice"])
    html = client.get(url(a.pk, b.pk)).content.decode()
    assert f'<a href="/jobs/{a.pk}">lr-0.1</a>' in html and f'<a href="/jobs/{b.pk}">lr-0.01</a>' in html
    rows = page_rows(html)
    assert rows["Startup command"] == (True, ["python train.py --lr 0.1", "python train.py --lr 0.01"])
    assert "Image" not in rows, "equal rows are left out by default"
    assert re.search(r'Owner</th><td>alice</td><td>bob</td>', html)
    assert 'id="show-all"' in html and unescape(re.search(r'href="([^"]+)" id="show-all"', html)[1]) == \
        url(a.pk, b.pk, all_rows=True)

    rows = page_rows(client.get(url(a.pk, b.pk, all_rows=True)).content.decode())
    assert rows["Image"] == (False, ["registry.example/torch:2.3"] * 2)
    assert rows["Startup command"][0] is True


@pytest.mark.postgres
def test_identical_jobs_say_so(client, people, ws):
    a, b = make_job(ws, people["alice"], "same-1"), make_job(ws, people["alice"], "same-2")
    client.force_login(people["alice"])
    html = client.get(url(a.pk, b.pk)).content.decode()
    assert 'id="no-differences"' in html and page_rows(html) == {}
    # QA: "Only differences (0)" for jobs whose names and times differ. The page says what it compares.
    assert "Only configuration differences (0)" in html and "the name, status, owner and times are shown" in html


@pytest.mark.postgres
def test_secrets_stay_hidden_as_on_the_job_page(client, people, ws):
    spec = {"envs": {"API_TOKEN": "tok-very-secret", "EPOCHS": "3"}}
    a = make_job(ws, people["alice"], "with-secrets", **spec)
    a.body["JobSpecs"][0]["ImageConfig"] = {"Username": "robot", "Password": "hunter2-registry"}
    a.body["Settings"]["AdvancedSettings"] = {"RayRedisPassword": "redis-secret-pw"}
    a.hints = {"image_type": "address", "secrets": ["registry_password"]}
    a.save()
    b = make_job(ws, people["alice"], "other", envs={"API_TOKEN": "tok-other-secret"})
    client.force_login(people["alice"])
    html = client.get(url(a.pk, b.pk, all_rows=True)).content.decode()
    for secret in ("tok-very-secret", "tok-other-secret", "hunter2-registry", "redis-secret-pw"):
        assert secret not in html, secret
    rows = page_rows(html)
    assert rows["Variable API_TOKEN"] == (False, [jobpage.HIDDEN, jobpage.HIDDEN])
    assert rows["Registry password"][1] == [jobpage.HIDDEN, "—"]


@pytest.mark.postgres
def test_only_jobs_the_user_may_view_and_nothing_about_the_others(client, people, ws):
    mine, theirs = make_job(ws, people["alice"], "mine"), make_job(ws, people["bob"], "theirs")
    hidden = make_job(people["elsewhere"], people["olga"], "olga-secret-project")
    missing = hidden.pk + 1000
    client.force_login(people["alice"])

    html = client.get(url(mine.pk, hidden.pk, theirs.pk, missing)).content.decode()
    assert "olga-secret-project" not in html and f'data-job="{hidden.pk}"' not in html
    assert [int(n) for n in re.findall(r'<th scope="col" data-job="(\d+)"', html)] == [mine.pk, theirs.pk]
    notice = unescape(re.search(r'id="compare-unavailable">(.*?)</div>', html, re.S)[1])
    assert f"{hidden.pk}, {missing}" in notice and "no such job, or not in a workspace you can view" in notice

    # An id of another workspace and an id of no job are answered in the same words.
    one, other = (re.search(r"<main.*</main>", client.get(url(mine.pk, pk)).content.decode(), re.S)[0]
                  for pk in (hidden.pk, missing))
    assert one.replace(str(hidden.pk), "N") == other.replace(str(missing), "N")
    assert "At least 2 jobs you can view" in one and 'id="compare-table"' not in one


@pytest.mark.postgres
def test_jobs_of_different_workspaces_the_user_can_view_are_compared(client, people, ws):
    Membership.objects.create(user=people["alice"], workspace=people["elsewhere"], role="viewer")
    here, there = make_job(ws, people["alice"], "here"), make_job(people["elsewhere"], people["olga"], "there")
    client.force_login(people["alice"])
    html = client.get(url(here.pk, there.pk)).content.decode()
    assert re.search(r"Workspace</th><td>Local</td><td>Elsewhere</td>", html)
    assert 'id="compare-unavailable"' not in html


@pytest.mark.postgres
@pytest.mark.parametrize("query, message", [
    ("", "Select 2 to 6 jobs to compare."),
    ("?ids={0}", "Select at least 2 jobs to compare: only 1 was given."),
    ("?ids={0}&ids={0}", "Select at least 2 jobs to compare: only 1 was given."),
    ("?" + "&".join(f"ids={n}" for n in range(1, 8)), "Up to 6 jobs can be compared side by side: 7 were selected."),
    ("?ids=abc&ids=1.5", "No valid job ids were given."),
])
def test_bad_selections_get_a_message_not_an_error(client, people, ws, query, message):
    job = make_job(ws, people["alice"])
    client.force_login(people["alice"])
    answer = client.get("/jobs/compare" + query.format(job.pk))
    assert answer.status_code == 200
    html = answer.content.decode()
    assert message in unescape(re.search(r'id="compare-problem">(.*?)</div>', html, re.S)[1])
    assert 'id="compare-table"' not in html


@pytest.mark.postgres
def test_junk_ids_are_named_and_the_valid_ones_compared(client, people, ws):
    a, b = make_job(ws, people["alice"], "a"), make_job(ws, people["alice"], "b")
    client.force_login(people["alice"])
    html = client.get(f"/jobs/compare?ids={a.pk}&ids=<b>x</b>&ids={b.pk}").content.decode()
    notice = re.search(r'id="compare-junk">(.*?)</div>', html, re.S)[1]
    assert "&lt;b&gt;x&lt;/b&gt;" in notice and "<b>x</b>" not in html
    assert 'id="compare-table"' in html


@pytest.mark.postgres
def test_one_query_for_the_jobs_and_the_same_page_cost_for_two_or_six(client, people, ws, django_assert_num_queries):
    jobs = [make_job(ws, people["alice"], f"j{i}", command=f"python train.py --seed {i}") for i in range(6)]
    with django_assert_num_queries(2):  # the jobs, and their training metrics
        compare.compare(people["alice"], [str(j.pk) for j in jobs])
    client.force_login(people["alice"])
    costs = []
    for n in (2, 6):
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url(*[j.pk for j in jobs[:n]])).status_code == 200
        costs.append(len(ctx.captured_queries))
    assert costs[0] == costs[1], costs


@pytest.mark.postgres
def test_the_list_forms_get_without_javascript_lands_on_the_clean_url(client, people, ws):
    a, b = make_job(ws, people["alice"], "a"), make_job(ws, people["alice"], "b")
    client.force_login(people["alice"])
    answer = client.get(f"/jobs/compare?csrfmiddlewaretoken=tok123&job={a.pk}&job={b.pk}")
    assert answer.status_code == 302 and answer["Location"] == url(a.pk, b.pk)
    html = client.get("/").content.decode()
    button = re.search(r'<button[^>]*id="compare-selected"[^>]*>', html)[0]
    assert 'formaction="/jobs/compare"' in button and 'formmethod="get"' in button


@pytest.mark.postgres
def test_a_clone_links_to_its_comparison_with_the_source(client, people, ws):
    source = make_job(ws, people["alice"], "source")
    clone = make_job(ws, people["alice"], "source-copy")
    clone.cloned_from = source
    clone.save()
    client.force_login(people["alice"])
    html = client.get(f"/jobs/{clone.pk}").content.decode()
    link = unescape(re.search(r'id="compare-source" href="([^"]+)"', html)[1])
    assert link == url(source.pk, clone.pk)
    assert 'id="compare-source"' not in client.get(f"/jobs/{source.pk}").content.decode()


@pytest.mark.postgres
def test_training_metrics_are_a_group_of_last_values_one_row_per_name(client, people, ws):
    from jobs.models import JobScalar

    a, b, c = (make_job(ws, people["alice"], name) for name in ("a", "b", "c"))
    for job, metrics in ((a, {"loss": 0.25, "acc": 0.9}), (b, {"loss": 0.125}), (c, {})):
        for name, last in metrics.items():
            JobScalar.objects.create(job=job, pod_id="p-0", name=name, points=[[1, last]], last=last, min=last,
                                     max=last, count=1, last_step=1)
    result = compare.compare(people["alice"], [str(a.pk), str(b.pk), str(c.pk)])
    group = result.groups[-1]
    assert (group.key, group.title) == ("scalars", "Training metrics (last value)")
    rows = rows_of([group])
    assert list(rows) == ["loss", "acc"], "most jobs' metrics first"
    assert [cell.value for cell in rows["loss"].cells] == ["0.25", "0.125", None]
    assert [cell.value for cell in rows["acc"].cells] == ["0.9", None, None] and rows["acc"].differs
    client.force_login(people["alice"])
    html = client.get(url(a.pk, b.pk, c.pk)).content.decode()
    assert 'id="compare-scalars"' in html and "Training metrics (last value)" in html
    assert page_rows(html)["loss"] == (True, ["0.25", "0.125", "—"])
    # The counts say what they count: the same configurations, two metric rows differing (QA: "Only configuration
    # differences (2)" counted the metric rows as configuration).
    assert "<strong>Only differences (2: 0 configuration, 2 training metrics)</strong>" in html
    total = sum(len(group.rows) for group in result.groups[:-1])
    assert f'id="show-all">All rows ({total + 2}: {total} configuration, 2 training metrics)</a>' in html
    assert not compare.metric_groups([c]), "no metrics, no group"

