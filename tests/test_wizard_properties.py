"""Property tests (hypothesis): no POST data makes a wizard view answer 500, and whatever the pages accept
round-trips through clone's prefill unchanged. The Django test client re-raises any exception a view lets
escape, so a 500 fails the test with its traceback."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jobs import spec
from jobs.forms import wizard as glue
from jobs.models import Job, Membership
from tests.support.wizard import form_data, local_workspace

pytestmark = pytest.mark.integration

FIELD_NAMES = sorted(glue.sections_to_data(spec.defaults()))
ROW_FIELDS = [(glue.LISTS[name], name, field) for name, fields in spec.ROW_FIELDS.items() for field in fields]
SPECIAL = ["_add", "_remove", "_refresh", "_framework_shown", "_validate", "_clone", "_edit", "_workspace",
           "_baseline_name", "_checked-basic", "_checked-resources"]
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
# Text a user can type into a valid form (Django refuses NUL characters in any field, rightly).
TYPED = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
VALUES = st.one_of(
    TEXT,
    st.sampled_from(["", "on", "off", "True", "false", "0", "-1", "1e309", "nan", "9" * 30, "1.5", "quota", "spot",
                     "lingjun", "Ray", "TensorFlow", "Custom", "address", "custom", "public", "private", "upload",
                     "git", "list", "requirements", "bmcpfs", "cpfs", "{", '{"a": 1}', "RayRedisPassword=********",
                     "customPortList=23456", "tags", "roles", "tags-0", "roles-99", "envs-x", "\x00", "a" * 300]),
    st.integers(-10**20, 10**20).map(str),
)
ROW_KEY = st.builds(lambda r, i: f"{r[0]}-{r[1]}-{i}-{r[2]}", st.sampled_from(ROW_FIELDS),
                    st.one_of(st.integers(0, 3), st.integers(0, 10**7)))
KEYS = st.one_of(st.sampled_from(FIELD_NAMES), ROW_KEY, st.sampled_from(SPECIAL), TEXT)
POSTS = st.dictionaries(KEYS, VALUES, max_size=25)


@pytest.fixture
def web(db, localdlc, tmp_path, settings):
    ws = local_workspace(localdlc, tmp_path, settings)
    user = get_user_model().objects.create_user("prop")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    client = Client()
    client.force_login(user)
    return client


FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])


@FAST
@given(data=POSTS)
@example(data={"basic-tags-x-key": "a", "basic-tags-123456789-key": "b", "_add": "tags"})
@example(data={"resources-roles-99999999-role": "Head", "resources-framework": "Ray", "_framework_shown": "PyTorch"})
def test_random_posts_to_the_create_page_never_fail_with_500(web, data):
    answer = web.post("/jobs/new", data)
    assert answer.status_code in (200, 302, 403, 404)


@FAST
@given(data=POSTS, section=st.sampled_from([*glue.BY_SECTION, "nope"]),
       trigger=st.sampled_from(["", "resources-framework", "resources-resource_type", "x"]))
def test_random_posts_to_the_partials_never_fail_with_500(web, data, section, trigger):
    answer = web.post(f"/jobs/new/section/{section}", data, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME=trigger)
    assert answer.status_code in (200, 403, 404)
    answer = web.post("/jobs/new/preview", data, HTTP_HX_REQUEST="true")
    assert answer.status_code in (200, 403, 404)


# Valid forms, varied: (base, changes) drawn from small menus that always satisfy the rules together.
VALID_FORMS = st.tuples(
    st.sampled_from(["public", "quota", "spot"]),
    st.fixed_dictionaries({}, optional={
        "basic__description": TYPED,
        "basic__tags__0__key": st.from_regex(r"[a-z][a-z0-9_.\-]{0,20}", fullmatch=True).filter(
            lambda k: not k.startswith(("aliyun", "acs"))),
        "env": st.tuples(st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True), TYPED),
        "resources__roles__0__count": st.integers(1, 2).map(str),
        "resources__scheduling_policy": st.sampled_from(["intelligent", "centralized", "spread"]),
        "resources__max_duration": st.integers(1, 500).map(str),
        "resources__max_duration_unit": st.sampled_from(["minutes", "hours", "days"]),
        "resources__retention": st.integers(1, 72).map(str),
        "resources__advanced": st.sampled_from(["", "ReleaseResourcePolicy=pod-exit",
                                                '{"EnableNvidiaGDRCopy": "true"}']),
        "ram_role__mode": st.sampled_from(["none", "default"]),
        "fault_tolerance__enabled": st.just("on"),
        "environment__command": TYPED.filter(lambda t: t.strip()),
    }),
)


@FAST
@given(form=VALID_FORMS)
def test_every_accepted_form_round_trips_through_clone_unchanged(web, form):
    base, changes = form
    if "env" in changes:
        changes["environment__envs__0__key"], changes["environment__envs__0__value"] = changes.pop("env")
    answer = web.post("/jobs/new", form_data(base, **changes))
    assert answer.status_code == 302, re.findall(r'<div class="error"[^>]*>(.*?)</div>', answer.content.decode(), re.S)
    job = Job.objects.order_by("-pk").first()
    assert spec.validate(job.body, spec.Context(hints=job.hints, reserved_tags=1)) == {}
    # The stored body and hints are enough to give the user back exactly what they submitted.
    assert spec.build(spec.inverse(job.body, job.hints), workspace_id=job.body.get("WorkspaceId")) == job.body
