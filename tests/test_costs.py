"""jobs.costs: rates, estimates, a job's cost, the month's spend against the budget and its guardrail; the Prices and
budget page, the usage report's cost columns and the API's cost figures.

Pure functions first; then database tests on the portal team (no stack: costs need no backend).
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache

from jobs import costs, policies, spec, usage
from jobs.api_jobs import job_detail_json
from jobs.models import AuditEvent, Job, PastPrices, WorkspaceCost
from tests import portal_fixtures as pf
from tests.support.api import Api

PRICES = costs.Prices(currency="CNY",
                      instance={"ecs.gn6i-c4g1.xlarge": Decimal("12.4"), "ecs.g6.large": Decimal("0.5")},
                      gpu_hour=Decimal("10"), cpu_core_hour=Decimal("0.25"))


def ecs(count=1, spec_name="ecs.gn6i-c4g1.xlarge", role="Worker"):
    return {"Type": role, "PodCount": count, "Image": "img", "EcsSpec": spec_name}


def quota(count=1, cpu="8", gpu="2"):
    return {"Type": "Worker", "PodCount": count, "Image": "img", "ResourceConfig": {"CPU": cpu, "GPU": gpu,
                                                                                    "Memory": "16Gi"}}


# -- rates and estimates -------------------------------------------------------------------------------------


def test_an_instance_job_costs_its_pods_times_the_instance_price():
    assert PRICES.hourly([ecs(2)]) == Decimal("24.8")
    assert PRICES.hourly([ecs(1, "ecs.g6.large", "PS"), ecs(2)]) == Decimal("25.3")


def test_a_quota_job_costs_its_gpus_and_cores_at_the_quota_rates():
    assert PRICES.hourly([quota(2, cpu="8", gpu="2")]) == 2 * (2 * Decimal(10) + 8 * Decimal("0.25"))
    assert PRICES.hourly([quota(1, cpu="4", gpu="0")]) == Decimal("1")


def test_no_price_is_never_guessed():
    assert PRICES.hourly([ecs(1, "ecs.unpriced")]) is None
    assert PRICES.hourly([ecs(1), ecs(1, "ecs.unpriced")]) is None, "one unpriced role: the whole job"
    gpu_only = costs.Prices(gpu_hour=Decimal(3))
    assert gpu_only.hourly([quota(1, cpu="8", gpu="1")]) is None, "cores used but no core-hour price"
    assert gpu_only.hourly([quota(1, cpu="0", gpu="1")]) == Decimal(3)
    assert costs.Prices().hourly([]) is None and costs.Prices().hourly("garbage") is None


def test_amounts_are_decimal_and_rounded_half_up_to_the_cent():
    assert costs.cost(Decimal("0.0001"), 0.5) == Decimal("0.0001")  # 0.00005 rounds up at 4 places
    assert costs.cost(Decimal("12.4"), 1 / 3) == Decimal("4.1333")
    assert costs.money(Decimal("0.005")) == "0.01" and costs.money(Decimal("2.344")) == "2.34"
    assert costs.money(Decimal("24.8")) == "24.80" and costs.money(None) == ""
    assert costs.cost(None, 3) is None


def test_the_estimate_reads_per_hour_and_at_most_with_a_maximum_duration():
    estimate = costs.estimate(PRICES, [ecs(2)], max_minutes=24 * 60)
    assert estimate.text == "Estimated 24.80 CNY per hour, at most 595.20 CNY."
    assert costs.estimate(PRICES, [ecs(2)]).text == "Estimated 24.80 CNY per hour."
    sweep = costs.estimate(PRICES, [ecs(2)], max_minutes=60, trials=3)
    assert sweep.text == ("Estimated 24.80 CNY per hour for each of 3 trials (74.40 CNY per hour in all), at most "
                          "74.40 CNY in all.")
    assert costs.estimate(PRICES, [ecs(1, "ecs.unpriced")]) is None


def test_only_a_job_with_every_role_sized_is_said_to_have_no_price():
    """QA: a blank wizard said "No estimate: … no price for an instance type" before any type was chosen."""
    assert costs.sized([ecs(1, "ecs.unpriced")]) and costs.sized([quota(1, cpu="4", gpu="0")])
    assert not costs.sized([]) and not costs.sized("garbage") and not costs.sized([None])
    assert not costs.sized([{"Type": "Worker", "PodCount": 1, "EcsSpec": ""}]), "no type chosen yet"
    assert not costs.sized([ecs(1), {"Type": "PS", "PodCount": 1}]), "one role still blank"


@pytest.mark.parametrize(("text", "problem"), [
    ("ecs.g6.large abc", "is not a number"),
    ("ecs.g6.large -1", "is negative"),
    ("ecs.g6.large 1.23456", "more than 4 decimals"),
    ("ecs.g6.large", "expected `<instance type> <price per hour>`"),
    ("not an instance 1", "expected"),
    ("ECS! 1", "is not an instance type"),
    ("ecs.g6.large 1\necs.g6.large 2", "has a price already"),
    ("ecs.g6.large NaN", "is not a number"),
])
def test_a_bad_price_line_says_what_is_wrong(text, problem):
    table, problems = costs.parse_table(text)
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_good_price_table_parses_in_any_usual_separator():
    table, problems = costs.parse_table("ecs.g6.large 1.5\n\n# comment\necs.gn6i-c4g1.xlarge=12.40\nml.gu7i.c16m60\t3")
    assert problems == []
    assert table == {"ecs.g6.large": "1.5", "ecs.gn6i-c4g1.xlarge": "12.4", "ml.gu7i.c16m60": "3"}


# -- the month, in the console's zone ------------------------------------------------------------------------


def test_a_month_starts_at_local_midnight_across_dst(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    # 2026-03-01 00:30 in Berlin (CET, +01:00) is still February in UTC.
    start, after = costs.month_bounds(datetime(2026, 2, 28, 23, 30, tzinfo=UTC))
    assert start == datetime(2026, 2, 28, 23, 0, tzinfo=UTC)
    assert after == datetime(2026, 3, 31, 22, 0, tzinfo=UTC), "April starts in summer time (+02:00)"
    assert (after - start) == timedelta(days=31, hours=-1)
    start, after = costs.month_bounds(datetime(2026, 10, 15, 12, 0, tzinfo=UTC))
    assert start == datetime(2026, 9, 30, 22, 0, tzinfo=UTC) and after == datetime(2026, 10, 31, 23, 0, tzinfo=UTC)
    start, after = costs.month_bounds(datetime(2026, 12, 31, 23, 30, tzinfo=UTC))  # already January in Berlin
    assert start == datetime(2026, 12, 31, 23, 0, tzinfo=UTC) and after == datetime(2027, 1, 31, 23, 0, tzinfo=UTC)


def test_a_budget_warns_at_80_and_100_percent():
    def at(spent):
        return costs.Budget(Decimal(100), Decimal(spent), "CNY", 0, True, "December 2026")

    assert at("79.99").level == 0 and at("79.99").notice == ""
    assert at(80).level == 80 and "80.00 CNY spent" in at(80).notice and "refused" not in at(80).notice
    assert at(100).exhausted and "New jobs are refused" in at(100).notice
    assert not costs.Budget(Decimal(0), Decimal(0), "CNY", 0, False, "x").exhausted


def test_a_budgets_share_is_of_the_spend_as_shown_to_the_cent():
    # QA: the share was of the exact spend, floored: the card read "0.80 CNY spent of 1.00 CNY (79%)" with no
    # warning, and "1.00 of 1.00 (99%)" without saying the budget was spent.
    def at(spent):
        return costs.Budget(Decimal(1), Decimal(spent), "CNY", 0, True, "December 2026")

    assert (at("0.7996").percent, at("0.7996").level) == (80, 80)
    assert "0.80 CNY spent of this workspace's budget of 1.00 CNY (80%)" in at("0.7996").notice
    assert at("0.9951").exhausted and "1.00 CNY spent" in at("0.9951").notice and "(100%)" in at("0.9951").notice
    assert at("0.7949").level == 0, "0.79 shown is under 80%"
    zero = costs.Budget(Decimal(0), Decimal("0.0049"), "CNY", 0, True, "x")
    assert (zero.percent, zero.exhausted) == (0, False), "0.00 of 0.00 shown: nothing spent yet"


# -- database ------------------------------------------------------------------------------------------------


@pytest.fixture(name="team")
def fixture_team(db):
    team = pf.make_team()
    Job.objects.all().delete()  # the fixture's jobs never started
    return team


def set_prices(team, **fields):
    values = {"instance_prices": {"ecs.gn6i-c4g1.xlarge": "12.4"}, "gpu_hour_price": "10",
              "cpu_core_hour_price": "0.25", **fields}
    stored = WorkspaceCost.objects.update_or_create(workspace=team.alpha, defaults=values)[0]
    team.alpha.refresh_from_db()  # as a new request would read it (the workspace caches its prices row)
    return stored


def ran(team, name, *, started, finished=None, roles=None, owner="member", job_type="PyTorchJob"):
    return Job.objects.create(
        workspace=team.alpha, owner=team.users[owner], display_name=name, job_type=job_type,
        status="Running" if finished is None else "Succeeded", dlc_job_id=f"dlc-{name}",
        body={**pf.BODY, "DisplayName": name, "JobSpecs": roles or [ecs(2)]},
        created_at=started - timedelta(minutes=1), started_at=started, finished_at=finished)


def test_a_jobs_cost_so_far_and_when_ended(team):
    set_prices(team)
    now = datetime(2026, 12, 10, 12, tzinfo=UTC)
    running = ran(team, "live", started=now - timedelta(hours=2))
    cost = costs.job_cost(running, now=now)
    assert (cost.amount, cost.currency, cost.running) == (Decimal("49.6"), "CNY", True)
    ended = ran(team, "done", started=now - timedelta(hours=3), finished=now - timedelta(hours=2, minutes=30))
    assert costs.job_cost(ended, now=now).as_json() == {"amount": "12.40", "currency": "CNY", "running": False,
                                                        "ceiling": False}
    assert costs.job_cost(ran(team, "x", started=now, roles=[ecs(1, "ecs.unpriced")]), now=now) is None
    assert job_detail_json(running)["cost"]["currency"] == "CNY"
    assert job_detail_json(ran(team, "none", started=now, roles=[ecs(1, "ecs.unpriced")]))["cost"] is None


def test_the_months_spend_counts_ended_and_running_jobs_inside_the_month(team, settings, django_assert_max_num_queries):
    settings.TIME_ZONE = "UTC"
    set_prices(team)
    now = datetime(2026, 12, 10, 12, tzinfo=UTC)
    start, _after = costs.month_bounds(now)
    ran(team, "across", started=start - timedelta(hours=5), finished=start + timedelta(hours=1))  # 1 h counts
    ran(team, "live", started=now - timedelta(hours=2))  # 2 h so far
    ran(team, "last-month", started=start - timedelta(days=3), finished=start - timedelta(days=2))
    ran(team, "unpriced", started=now - timedelta(hours=1), roles=[ecs(1, "ecs.unpriced")])
    prices = costs.prices_for(team.alpha)
    with django_assert_max_num_queries(2):  # the two index walks of jobs.usage, whatever the number of jobs
        found = costs.spend(team.alpha, start, now, prices)
    assert (found.amount, found.jobs, found.no_price) == (Decimal("24.8") * 3, 3, 1)


def test_the_guardrail_refuses_new_jobs_once_the_budget_is_spent(team):
    set_prices(team, monthly_budget="0.01", refuse_when_spent=True,
               instance_prices={"ecs.gn6i-c4g1.xlarge": "100000"})
    ran(team, "expensive", started=datetime.now(UTC) - timedelta(minutes=1))
    sections = spec.inverse({**pf.BODY, "JobSpecs": [ecs(1)]})
    errors = spec.validate_sections(sections, policies.context_for(team.alpha, with_specs=False))
    assert "budget for" in errors[""][0] and "refused" in errors[""][0]
    api = spec.validate({**pf.BODY}, policies.context_for(team.alpha, with_specs=False))
    assert "budget for" in api[""][0], "the API, clones, sweeps and schedules check bodies the same way"
    # Without the guardrail the same spend only warns.
    set_prices(team, monthly_budget="0.01", refuse_when_spent=False)
    assert "" not in spec.validate_sections(sections, policies.context_for(team.alpha, with_specs=False))
    assert "spent of this workspace's budget" in costs.notice(team.alpha)


def test_the_api_refuses_a_create_over_budget_with_a_400(team):
    set_prices(team, monthly_budget="0", refuse_when_spent=True)
    ran(team, "spent", started=datetime.now(UTC) - timedelta(hours=1))
    answer = Api(team.users["member"]).post("/api/v1/jobs", {"workspace": team.alpha.pk, "body": pf.BODY})
    assert answer.status_code == 400, answer.content
    assert any("budget" in m for ms in answer.json()["errors"].values() for m in ms)


def test_the_usage_report_csv_and_api_have_costs(team):
    set_prices(team, monthly_budget="1000")
    now = datetime.now(UTC)
    ran(team, "big", started=now - timedelta(hours=3), finished=now - timedelta(hours=1))  # 2 h x 24.8
    ran(team, "cheap", started=now - timedelta(hours=2), finished=now - timedelta(hours=1), owner="admin",
        job_type="TFJob", roles=[quota(1, cpu="4", gpu="0")])  # 1 h x 1.00
    ran(team, "unpriced", started=now - timedelta(hours=2), finished=now - timedelta(hours=1),
        roles=[ecs(1, "ecs.unpriced")])
    result = usage.report(team.alpha, 7, specs=None)
    assert result.total.cost == Decimal("50.6") and result.total.no_price == 1
    assert {line.key: line.cost for line in result.by_type} == {"PyTorchJob": Decimal("49.6"), "TFJob": Decimal(1)}
    rows = list(csv.DictReader(io.StringIO(usage.to_csv(result))))
    assert [(r["name"], r["cost"], r["currency"]) for r in rows] == [
        ("big", "49.60", "CNY"), ("cheap", "1.00", "CNY"), ("unpriced", "", "")]
    data = Api(team.users["viewer"]).get(f"/api/v1/workspaces/{team.alpha.pk}/usage", days=7).json()
    assert (data["totals"]["cost"], data["totals"]["no_price_jobs"], data["currency"]) == ("50.60", 1, "CNY")
    assert {j["name"]: j["cost"] for j in data["top_jobs"]} == {"big": "49.60", "cheap": "1.00", "unpriced": None}
    assert data["budget"]["amount"] == "1000.00" and data["budget"]["refuse_when_spent"] is False
    page = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage")
    assert b'id="budget-spent"' in page.content and b"no price" in page.content


def test_the_usage_page_and_api_show_the_budget_as_of_the_report_not_a_cached_figure(team, settings):
    # QA: the budget beside the report was reused for up to a minute (SPEND_TTL), so after a job ran the page said
    # less was spent this month than the report's cost of the very same jobs.
    settings.TIME_ZONE = "UTC"
    set_prices(team, monthly_budget="1000")
    now = datetime.now(UTC)
    start, _after = costs.month_bounds(now)
    begun = max(start, now - timedelta(hours=3))  # this month's, whatever the day of the month
    # Of different shapes: the month's spend prices each shape's summed hours, the report each job's.
    ran(team, "first", started=begun, finished=begun + timedelta(seconds=1), roles=[ecs(1)])
    viewer = pf.client_for(team.users["viewer"])
    url = f"/workspaces/{team.alpha.pk}/usage"
    assert viewer.get(url).status_code == 200  # the month's spend is now cached
    ran(team, "second", started=begun, finished=min(begun + timedelta(hours=2), now))
    data = Api(team.users["viewer"]).get(f"/api/v1/workspaces/{team.alpha.pk}/usage", days=30).json()
    assert data["budget"]["spent"] == data["totals"]["cost"], "the API's too"
    ran(team, "third", started=begun, finished=min(begun + timedelta(hours=1), now), roles=[ecs(3)])
    page = viewer.get(url)
    report, shown = page.context["report"], page.context["budget"]
    assert shown.spent == report.total.cost > Decimal("0.01"), "the month's spend is the report's cost"


def test_the_usage_apis_cost_is_empty_where_no_job_had_a_price(team):
    # QA: the OpenAPI document says a line's cost is "" when no job had a price (and `priced` false: every cost
    # ""), but the API answered "0.00", which reads as free.
    now = datetime.now(UTC)
    ran(team, "unpriced", started=now - timedelta(hours=2), finished=now - timedelta(hours=1))
    api = Api(team.users["viewer"])
    data = api.get(f"/api/v1/workspaces/{team.alpha.pk}/usage", days=7).json()
    assert data["priced"] is False
    assert [data["totals"]["cost"], *(line["cost"] for line in data["by_owner"] + data["by_type"])] == ["", "", ""]
    set_prices(team)
    ran(team, "priced", started=now - timedelta(hours=2), finished=now - timedelta(hours=1), owner="admin",
        job_type="TFJob")
    Job.objects.filter(display_name="unpriced").update(body={**pf.BODY, "JobSpecs": [ecs(1, "ecs.unpriced")]})
    data = api.get(f"/api/v1/workspaces/{team.alpha.pk}/usage", days=7).json()
    assert data["totals"]["cost"] == "24.80" and data["totals"]["no_price_jobs"] == 1
    assert {line["key"]: line["cost"] for line in data["by_owner"]} == {"admin": "24.80", "member": ""}


# -- the Prices and budget page ------------------------------------------------------------------------------


def test_the_page_shows_each_error_at_its_field(team):
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/prices"
    answer = client.post(url, {"currency": "CNY", "instance_prices": "ecs.g6.large 1\necs.g6.large 2\necs.g6.xlarge -2",
                               "gpu_hour_price": "ten", "cpu_core_hour_price": "-1", "monthly_budget": "1.234",
                               "refuse_when_spent": "on"})
    assert answer.status_code == 200
    errors = answer.context["form"].errors
    assert "has a price already" in errors["instance_prices"][0] and "is negative" in errors["instance_prices"][1]
    assert "not a number" in errors["gpu_hour_price"][0] and "negative" in errors["cpu_core_hour_price"][0]
    assert "more than 2 decimals" in errors["monthly_budget"][0]
    assert not WorkspaceCost.objects.exists()
    missing = client.post(url, {"currency": "", "refuse_when_spent": "on"}).context["form"].errors
    assert "currency" in missing and "Set a monthly budget" in missing["monthly_budget"][0]


def test_saving_prices_is_audited_and_reads_back(team):
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/prices"
    data = {"currency": "USD", "instance_prices": "ecs.gn6i-c4g1.xlarge 12.40", "gpu_hour_price": "",
            "cpu_core_hour_price": "0.2500", "monthly_budget": "500", "refuse_when_spent": "on"}
    assert client.post(url, data).status_code == 302
    stored = WorkspaceCost.objects.get(workspace=team.alpha)
    assert stored.instance_prices == {"ecs.gn6i-c4g1.xlarge": "12.4"} and stored.gpu_hour_price is None
    assert stored.monthly_budget == Decimal(500) and stored.refuse_when_spent
    event = AuditEvent.objects.get(action=AuditEvent.CHANGED, details__event="costs")
    assert event.details["changes"]["currency"] == {"from": "CNY", "to": "USD"}
    assert client.post(url, data).status_code == 302
    assert AuditEvent.objects.filter(details__event="costs").count() == 1, "saving the same values changes nothing"
    page = client.get(url)
    assert page.context["form"].initial["cpu_core_hour_price"] == "0.25" and b"Budget for" in page.content


# -- QA walk: prices as typed, roles without a PodCount ---------------------------------------------------------


@pytest.mark.parametrize("text", ["1,5", "0,25", "1,000", "1,000.50"])
def test_a_comma_is_refused_not_dropped(text):
    """QA: "1,5" saved as 15: the comma was removed as a thousands separator."""
    assert costs.parse_price(text) == (None, costs.COMMA)
    table, problems = costs.parse_table(f"ecs.g6.large {text}")
    assert table == {} and problems == [f"Line 1 (ecs.g6.large): {costs.COMMA}"]
    assert costs.parse_table(f"ecs.g6.large,{text}")[1] == [f"Line 1 (ecs.g6.large): {costs.COMMA}"]


@pytest.mark.parametrize(("text", "saved"), [("-0", "0"), ("-0.00", "0"), ("1.00000", "1"), ("12.400000", "12.4"),
                                             (".5", "0.5")])
def test_zero_is_never_negative_and_trailing_zeros_are_no_precision(text, saved):
    price, problem = costs.parse_price(text)
    assert problem == "" and costs.plain(price) == saved
    assert costs.parse_table(f"ecs.g6.large {text}") == ({"ecs.g6.large": saved}, [])
    assert costs.plain("-0") == "0", "a stored -0 reads 0 in the form and the audit"


@pytest.mark.parametrize("text", ["١٢", "１２.５", "1²", "1e3", "1_000", "Infinity", "."])
def test_only_ascii_decimal_numbers_are_prices(text):
    price, problem = costs.parse_price(text)
    assert price is None and "is not a number" in problem, problem
    assert ("0-9" in problem) == (not text.isascii())


def test_instance_type_names_and_tables_have_a_limit():
    long_name = "ecs." + "a" * 61
    problems = costs.parse_table(f"{long_name} 1")[1]
    assert problems == ["Line 1: an instance type name has at most 64 characters (this one has 65)."]
    assert costs.parse_table(f"{long_name[:-1]} 1")[1] == []
    huge = "\n".join(f"ecs.g{i}.large 1" for i in range(costs.TABLE_MAX_LINES + 1))
    table, problems = costs.parse_table(huge)
    assert table == {} and problems == ["The table has 501 lines: at most 500 (one instance type each)."]
    assert len(costs.parse_table(huge.rsplit("\n", 1)[0])[0]) == costs.TABLE_MAX_LINES
    garbage = costs.parse_table("ecs.g6.large 1 " + "x" * 5000)[1][0]
    assert len(garbage) < 200, "a pasted page does not come back whole as the error"


@pytest.mark.parametrize("count", [None, 0, -1, "x", 1.5, True])
def test_a_role_without_a_valid_pod_count_has_no_price(count):
    """QA: a role with no PodCount was priced 0 (free). jobs.spec and DLC require one: no count, no price."""
    role = {key: value for key, value in ecs(1).items() if key != "PodCount"}
    if count is not None:
        role["PodCount"] = count
    assert PRICES.hourly([role]) is None
    quota_role = {**quota(1), "PodCount": count} if count is not None else \
        {k: v for k, v in quota(1).items() if k != "PodCount"}
    assert PRICES.hourly([quota_role]) is None
    assert PRICES.hourly([{**role, "PodCount": "2"}]) == Decimal("24.8"), "a count as digits, as usage reads it"


def test_the_page_refuses_commas_and_long_tables_at_their_fields_and_saves_minus_zero_as_zero(team):
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/prices"
    base = {"currency": "CNY", "instance_prices": "", "gpu_hour_price": "", "cpu_core_hour_price": "",
            "monthly_budget": ""}
    errors = client.post(url, {**base, "gpu_hour_price": "1,5", "cpu_core_hour_price": "１２.５",
                               "monthly_budget": "1,000", "instance_prices": "ecs.g6.large 1,5"}).context["form"].errors
    assert errors["gpu_hour_price"] == [costs.COMMA] and errors["monthly_budget"] == [costs.COMMA]
    assert "0-9" in errors["cpu_core_hour_price"][0] and costs.COMMA in errors["instance_prices"][0]
    many = "\n".join(f"ecs.g{i}.large 1" for i in range(3000))
    assert "at most 500" in client.post(url, {**base, "instance_prices": many}).context["form"].errors[
        "instance_prices"][0]
    assert not WorkspaceCost.objects.exists()
    saved = {**base, "gpu_hour_price": "-0", "cpu_core_hour_price": "1.00000", "monthly_budget": "500.000",
             "instance_prices": "ecs.g6.large -0"}
    assert client.post(url, saved).status_code == 302
    stored = WorkspaceCost.objects.get(workspace=team.alpha)
    assert (stored.gpu_hour_price, stored.cpu_core_hour_price, stored.monthly_budget) == (0, 1, 500)
    assert stored.instance_prices == {"ecs.g6.large": "0"}
    change = AuditEvent.objects.get(details__event="costs").details["changes"]
    assert change["gpu_hour_price"]["to"] == "0" and "-0" not in str(change)


def test_the_wizards_estimate_follows_the_instance_type_the_duration_and_the_sweep(team):
    """QA: the estimate was recomputed only when focus left Resources. The API panel's refresh (sent on every
    change of the form) now carries it out of band, so it follows every field."""
    import html as html_lib
    import re

    from jobs.forms import wizard as glue

    set_prices(team, instance_prices={"ecs.g6.large": "1.5"})
    web = pf.client_for(team.users["member"])
    body = {**pf.BODY, "JobSpecs": [{**pf.BODY["JobSpecs"][0], "PodCount": 2}]}
    data = {**glue.sections_to_data(spec.inverse(body)), "_workspace": team.alpha.pk}

    def estimate(**changes) -> str:
        html = web.post("/jobs/new/preview", {**data, **changes}, HTTP_HX_REQUEST="true").content.decode()
        found = re.search(r'<p id="cost-estimate"[^>]*hx-swap-oob="true"[^>]*>(.*?)</p>', html, re.S)
        return html_lib.unescape(found.group(1).strip()) if found else "(none)"

    assert estimate(**{"resources-max_duration": ""}) == "Estimated 3.00 CNY per hour."
    assert estimate(**{"resources-max_duration": "2", "resources-max_duration_unit": "hours"}) == \
        "Estimated 3.00 CNY per hour, at most 6.00 CNY."
    assert estimate(**{"resources-max_duration": "", "resources-roles-0-instance_type": "ecs.g6.xlarge"}) == \
        costs.Unpriced().text, "a type with no price: the old figure goes"
    assert estimate(**{"resources-max_duration": "", "resources-roles-0-instance_type": ""}) == "", \
        "no type chosen yet: nothing to say, not \"no price\""
    assert "for each of 3 trials" in estimate(**{"resources-max_duration": "", "sweep": "LR = 0.1, 0.2, 0.3"})
    WorkspaceCost.objects.all().delete()
    assert estimate() == "", "no prices: nothing to say (the element stays, hidden, for the next refresh)"


# -- QA walk: prices kept by date ------------------------------------------------------------------------------


def test_a_run_is_cut_at_each_price_change():
    change = datetime(2026, 12, 10, 12, tzinfo=UTC)
    later = costs.Prices(instance={"ecs.gn6i-c4g1.xlarge": Decimal(20)})
    tables = costs.History(((costs.PRICES_EPOCH, PRICES), (change, later), (change + timedelta(days=1), PRICES)))
    start, end = change - timedelta(days=7), change + timedelta(days=7)
    assert tables.pieces(change - timedelta(hours=1), change + timedelta(hours=2), start, end) == [(0, 1.0), (1, 2.0)]
    assert tables.pieces(change - timedelta(hours=3), change - timedelta(hours=1), start, end) == [(0, 2.0)]
    assert tables.pieces(change, None, start, change + timedelta(hours=30)) == [(1, 24.0), (2, 6.0)], "running"
    assert tables.pieces(change, change, start, end) == [(1, 0.0)], "a run of no length: the table then in force"
    assert tables.pieces(change - timedelta(hours=2), None, change - timedelta(hours=1), change) == [(0, 1.0)]
    job = Job(status="Succeeded", started_at=change - timedelta(hours=1), finished_at=change + timedelta(hours=2),
              body={"JobSpecs": [ecs(2)]})
    assert costs.job_cost(job, tables, now=end).amount == Decimal("24.8") + 2 * Decimal(40)
    unpriced_then = costs.History(((costs.PRICES_EPOCH, costs.Prices()), (change, PRICES)))
    assert costs.job_cost(job, unpriced_then, now=end) is None, "an hour without a price: no cost, not a part"


def test_a_price_change_costs_only_the_hours_after_it_is_saved(team):
    # QA: an admin changed a price mid-month and the whole month, every past job, was re-priced at the new rate:
    # last month's usage report changed after the fact and the budget jumped.
    set_prices(team)  # 12.4 an instance-hour: 24.8 a job of two
    now = datetime.now(UTC)
    ended = ran(team, "ended", started=now - timedelta(hours=5), finished=now - timedelta(hours=3))
    running = ran(team, "running", started=now - timedelta(hours=1))
    before = costs.job_cost(ended).amount
    admin = pf.client_for(team.users["admin"])
    answer = admin.post(f"/workspaces/{team.alpha.pk}/prices", {
        "currency": "CNY", "instance_prices": "ecs.gn6i-c4g1.xlarge 20", "gpu_hour_price": "10",
        "cpu_core_hour_price": "0.25"})
    assert answer.status_code == 302
    team.alpha.refresh_from_db()
    stored = WorkspaceCost.objects.get(workspace=team.alpha)
    change = stored.prices_from
    assert now < change <= datetime.now(UTC), "in force from when it was saved"
    assert costs.job_cost(ended).amount == before == Decimal("49.6"), "a past job keeps its cost"
    later = change + timedelta(hours=2)
    hours_before = (change - running.started_at).total_seconds() / 3600
    assert costs.job_cost(running, now=later).amount == (costs.cost(Decimal("24.8"), hours_before)
                                                         + costs.cost(Decimal(40), 2.0)), "cut at the change"
    event = AuditEvent.objects.get(details__event="costs")
    assert event.details["changes"]["instance_prices"]["to"] == {"ecs.gn6i-c4g1.xlarge": "20"}
    assert event.details["prices_from"] == change.isoformat()
    old = PastPrices.objects.get(workspace=team.alpha)
    assert old.instance_prices == {"ecs.gn6i-c4g1.xlarge": "12.4"} and old.effective_from == costs.PRICES_EPOCH


def test_the_first_prices_apply_to_every_job_and_a_budget_change_starts_no_table(team):
    now = datetime.now(UTC)
    ended = ran(team, "last-week", started=now - timedelta(days=7), finished=now - timedelta(days=7, hours=-2))
    admin = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/prices"
    page = admin.get(url).content.decode()
    assert "No prices yet: the first prices saved apply to every job" in page
    data = {"currency": "CNY", "instance_prices": "ecs.gn6i-c4g1.xlarge 12.4", "monthly_budget": ""}
    assert admin.post(url, data).status_code == 302
    team.alpha.refresh_from_db()
    assert costs.job_cost(ended).amount == Decimal("49.6"), "nothing was priced before: no cost to keep"
    assert not PastPrices.objects.exists()
    assert admin.post(url, {**data, "monthly_budget": "100"}).status_code == 302
    team.alpha.refresh_from_db()
    assert not PastPrices.objects.exists() and costs.row(team.alpha).prices_from == costs.PRICES_EPOCH
    page = admin.get(url).content.decode()
    assert "These are the first prices, saved by admin" in page and 'id="past-prices"' not in page
    # Two changes: the page says since when and lists what they replaced, newest first, with who saved each.
    assert admin.post(url, {**data, "instance_prices": "ecs.gn6i-c4g1.xlarge 15"}).status_code == 302
    team.memberships["member"].role = "admin"  # a second admin makes the next change
    team.memberships["member"].save()
    assert pf.client_for(team.users["member"]).post(url, {**data, "instance_prices": "ecs.gn6i-c4g1.xlarge 20",
                                                          "gpu_hour_price": "3"}).status_code == 302
    page = admin.get(url)
    html = page.content.decode()
    current, past = page.context["current_table"], page.context["past_tables"]
    team.alpha.refresh_from_db()
    assert current.since == costs.row(team.alpha).prices_from and current.set_by == "member"
    assert 'id="prices-since">These prices took effect on' in html
    assert [(table.summary, table.set_by) for table in past] == [
        ("ecs.gn6i-c4g1.xlarge 15", "admin"), ("ecs.gn6i-c4g1.xlarge 12.4", "admin")]
    assert past[0].until == current.since and past[1].until == past[0].since and past[1].since is None
    assert "from the start" in html and "ecs.gn6i-c4g1.xlarge 15" in html
    assert costs.job_cost(ended).amount == Decimal("49.6"), "still the first prices' cost"


def test_a_report_over_many_jobs_and_tables_reads_the_prices_once(team, django_assert_max_num_queries):
    set_prices(team)
    now = datetime(2026, 12, 10, 12, tzinfo=UTC)
    for day in range(3):
        costs.save_prices(team.alpha, {"instance_prices": {"ecs.gn6i-c4g1.xlarge": str(10 + day)},
                                       "gpu_hour_price": "10", "cpu_core_hour_price": "0.25"},
                          team.users["admin"], now=now - timedelta(days=3 - day))
    for number in range(12):
        ran(team, f"job-{number}", started=now - timedelta(days=4, hours=-number * 6),
            finished=now - timedelta(days=4, hours=-number * 6 - 3))
    team.alpha.refresh_from_db()
    with django_assert_max_num_queries(4):  # the prices row, the past tables and the two index walks
        result = usage.report(team.alpha, 7, specs=None, now=now)
    assert result.total.jobs == 12 and result.total.no_price == 0
    rates = [Decimal("12.4"), Decimal(10), Decimal(11), Decimal(12)]
    changes = [costs.PRICES_EPOCH, *(now - timedelta(days=3 - day) for day in range(3))]
    expected = Decimal(0)
    for number in range(12):
        begin = now - timedelta(days=4, hours=-number * 6)
        for hour in range(3):  # whole hours of one table each: no change falls inside an hour here
            at = begin + timedelta(hours=hour)
            expected += 2 * rates[max(i for i, since in enumerate(changes) if since <= at)]
    assert result.total.cost == expected


@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_the_stored_prices_the_first_table_from_the_epoch():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    # Found by what it does, not its number (numbers are re-chained when branches merge).
    ours = next(key for key, migration in executor.loader.disk_migrations.items() if key[0] == "jobs" and any(
        getattr(op, "name", "") == "PastPrices" for op in migration.operations))
    before = [dep for dep in executor.loader.disk_migrations[ours].dependencies if dep[0] == "jobs"]
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        workspace = old.get_model("jobs", "Workspace").objects.create(name="W", backend="local")
        old.get_model("jobs", "WorkspaceCost").objects.create(workspace=workspace,
                                                              instance_prices={"ecs.g6.large": "2"})
        executor = MigrationExecutor(connection)
        executor.migrate([ours])
        new = executor.loader.project_state([ours]).apps
        stored = new.get_model("jobs", "WorkspaceCost").objects.get(workspace_id=workspace.pk)
        assert stored.prices_from == costs.PRICES_EPOCH and stored.instance_prices == {"ecs.g6.large": "2"}
        assert not new.get_model("jobs", "PastPrices").objects.exists()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


# -- QA walk: spot jobs at their bid's ceiling -------------------------------------------------------------------


def spot(bid=None, count=1, spec_name="ecs.gn6i-c4g1.xlarge", strategy="SpotWithPriceLimit"):
    return {**ecs(count, spec_name), "SpotSpec": {"SpotStrategy": strategy, **(bid or {})}}


def test_a_spot_role_costs_its_bids_ceiling_not_the_full_price():
    # QA: a spot job was costed at the instance type's full price. DLC charges the market price (unknown here) up
    # to the bid: the list price x SpotDiscountLimit, or SpotPriceLimit (CNY a minute), never above the list price.
    assert PRICES.hourly([spot({"SpotDiscountLimit": 0.4}, 2)]) == Decimal("12.4") * Decimal("0.4") * 2
    assert PRICES.hourly([spot({"SpotPriceLimit": 0.1})]) == Decimal(6), "0.1 CNY a minute is 6 an hour"
    assert PRICES.hourly([spot({"SpotPriceLimit": 1})]) == Decimal("12.4"), "never above the list price"
    assert PRICES.hourly([spot({"SpotPriceLimit": 0.1}, 1, "ecs.unpriced")]) == Decimal(6), "the bid is a price"
    assert PRICES.hourly([spot({"SpotDiscountLimit": 0.4}, 1, "ecs.unpriced")]) is None, "a share of no price"
    in_usd = costs.Prices(currency="USD", instance=PRICES.instance)
    assert in_usd.hourly([spot({"SpotPriceLimit": 0.1})]) == Decimal("12.4"), "a CNY bid converts to no currency"
    assert in_usd.hourly([spot({"SpotPriceLimit": 0.1}, 1, "ecs.unpriced")]) is None
    assert PRICES.hourly([spot()]) == Decimal("12.4"), "no limit: at most the list price"
    assert PRICES.hourly([spot({"SpotDiscountLimit": 0.4}, strategy="SpotAsPriceGo")]) == Decimal("12.4"), \
        "a bid takes effect only with SpotWithPriceLimit"
    assert PRICES.hourly([{**quota(1), "SpotSpec": {"SpotDiscountLimit": 0.4}}]) == Decimal("22"), "a quota's"
    assert costs.ceiling([ecs(1, "ecs.g6.large", "PS"), spot()]) and not costs.ceiling([ecs(1)])
    assert not costs.ceiling([{**quota(1), "SpotSpec": {}}]) and not costs.ceiling("garbage")
    assert costs.estimate(PRICES, [spot({"SpotDiscountLimit": 0.5})], max_minutes=120).text == (
        "Estimated at most 6.20 CNY per hour, at most 12.40 CNY (spot: at the bid's ceiling; DLC charges the market "
        "price, which may be lower).")


def test_a_spot_jobs_cost_says_at_most_on_the_page_and_in_the_api(team):
    set_prices(team)
    now = datetime.now(UTC)
    job = ran(team, "spot", started=now - timedelta(hours=3), finished=now - timedelta(hours=1),
              roles=[spot({"SpotDiscountLimit": 0.5}, 2)])
    found = costs.job_cost(job)
    assert (found.amount, found.ceiling) == (Decimal("24.8"), True), "2 h x 2 pods x 12.4 x 0.5"
    html = pf.client_for(team.users["viewer"]).get(f"/jobs/{job.pk}").content.decode()
    assert 'id="job-cost">at most 24.80 CNY' in html and "the bid's ceiling" in html
    detail = Api(team.users["viewer"]).get(f"/api/v1/jobs/{job.pk}").json()
    assert detail["cost"] == {"amount": "24.80", "currency": "CNY", "running": False, "ceiling": True}
    ordinary = ran(team, "ordinary", started=now - timedelta(hours=2), finished=now - timedelta(hours=1))
    assert Api(team.users["viewer"]).get(f"/api/v1/jobs/{ordinary.pk}").json()["cost"]["ceiling"] is False
    assert "at most" not in pf.client_for(team.users["viewer"]).get(f"/jobs/{ordinary.pk}").content.decode()


def test_a_price_for_an_instance_type_the_backend_does_not_offer_is_an_error_at_the_field(team, localdlc,
                                                                                         local_creds):
    """QA: a typo (ecs.gn6i-c4g1.xlarg) was saved without a word, and every job on the real type had no price. With
    ListEcsSpecs answering (the real localdlc), a type it does not offer is refused at the field, the input kept;
    a type already priced, or one a job of the workspace ran on (retired since), keeps its price."""
    team.alpha.endpoint = localdlc.endpoint
    team.alpha.save(update_fields=["endpoint"])
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/prices"
    base = {"currency": "CNY", "gpu_hour_price": "", "cpu_core_hour_price": "", "monthly_budget": ""}
    typed = "ecs.gn6i-c4g1.xlarge 12.4\necs.gn6i-c4g1.xlarg 12.4"
    answer = client.post(url, {**base, "instance_prices": typed})
    assert answer.status_code == 200 and not WorkspaceCost.objects.exists()
    [error] = answer.context["form"].errors["instance_prices"]
    assert "ecs.gn6i-c4g1.xlarg is not an instance type ListEcsSpecs offers" in error
    assert answer.context["form"]["instance_prices"].value() == typed, "the input is kept"
    # A type no longer offered that a job ran on, and then one already in the table, are kept.
    ran(team, "old", started=datetime.now(UTC) - timedelta(hours=2), roles=[ecs(1, "ecs.retired.large")])
    assert client.post(url, {**base, "instance_prices": "ecs.retired.large 3"}).status_code == 302
    WorkspaceCost.objects.filter(workspace=team.alpha).update(instance_prices={"ecs.gone.large": "2"})
    kept = client.post(url, {**base, "instance_prices": "ecs.gone.large 2.5\necs.retired.large 3"})
    assert kept.status_code == 302


def test_a_save_from_a_page_opened_before_another_change_is_refused_not_a_silent_revert(team):
    """QA: two tabs of the Prices page; the second tab's save (a budget change) put back the GPU price the first
    had just changed, and started a price table no one meant. A save made from a page opened before another change
    is refused, the typed values kept and the other change named; saved again, it is meant."""
    client = pf.client_for(team.users["admin"])
    url = f"/workspaces/{team.alpha.pk}/prices"
    base = {"currency": "CNY", "instance_prices": "", "gpu_hour_price": "10", "cpu_core_hour_price": "",
            "monthly_budget": ""}
    assert client.post(url, base).status_code == 302
    first, second = (client.get(url).context["form"] for _tab in range(2))

    def posted(form, **typed):
        return {**{name: value or "" for name, value in form.initial.items() if value is not False}, **typed}

    assert client.post(url, posted(first, gpu_hour_price="12")).status_code == 302
    refused = client.post(url, posted(second, monthly_budget="500"))
    assert refused.status_code == 200
    [error] = refused.context["form"].non_field_errors()
    assert "changed since you opened this page" in error and "admin" in error
    assert refused.context["form"]["monthly_budget"].value() == "500", "what was typed is kept"
    stored = WorkspaceCost.objects.get(workspace=team.alpha)
    assert (stored.gpu_hour_price, stored.monthly_budget) == (12, None) and PastPrices.objects.count() == 1
    again = refused.context["form"]
    assert client.post(url, posted(again, **{k: again[k].value() for k in again.fields})).status_code == 302
    # A save that changed nothing is no change the other tab missed.
    third = client.get(url).context["form"]
    assert client.post(url, posted(third)).status_code == 302
    assert client.post(url, posted(third, cpu_core_hour_price="0.5")).status_code == 302


def test_a_months_spend_with_spot_jobs_says_at_most_in_the_budget_its_notice_refusal_and_api(team):
    """QA: the usage page said "at most 24.80 CNY" for a spot job and, beside it, the budget "24.80 CNY spent"; the
    notice, the refusal and the API said spent too. The spend counts a spot job at its bid's ceiling, and says so."""
    set_prices(team, monthly_budget="10", refuse_when_spent=True)
    now = datetime.now(UTC)
    begun = max(costs.month_bounds(now)[0], now - timedelta(hours=3))  # this month's, whatever the day
    ran(team, "spot", started=begun, finished=begun + timedelta(hours=1), roles=[spot({"SpotDiscountLimit": 0.5})])
    found = costs.budget(team.alpha, fresh=True)
    assert (found.spent, found.ceiling) == (Decimal("6.2"), 1)
    assert costs.refusal(team.alpha) is None and costs.notice(team.alpha) == "", "62%: not spent, no notice yet"
    ran(team, "ordinary", started=begun, finished=begun + timedelta(minutes=30), roles=[ecs(1)])
    cache.clear()  # the month's spend is reused for a minute (SPEND_TTL)
    assert "at most 12.40 CNY spent of this workspace's budget" in costs.notice(team.alpha)
    refused = costs.refusal(team.alpha)
    assert "(at most 12.40 of 10.00 CNY: 1 spot job at its bid's ceiling)" in refused
    page = pf.client_for(team.users["viewer"]).get(f"/workspaces/{team.alpha.pk}/usage").content.decode()
    assert 'id="budget-spent">at most 12.40 CNY' in page
    data = Api(team.users["viewer"]).get(f"/api/v1/workspaces/{team.alpha.pk}/usage").json()
    assert (data["budget"]["spent"], data["budget"]["ceiling_jobs"]) == ("12.40", 1)
