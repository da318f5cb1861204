"""The wizard pages through Django's test client: a real localdlc process answers ListEcsSpecs through the
SDK; the database is the test database. No browser: these check what the server renders and saves."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from jobs import secretbox
from jobs.models import Job, Membership, Workspace, WorkspacePolicy
from tests.support.wizard import form_data, local_workspace, page_form_data

pytestmark = pytest.mark.integration

URL = "/jobs/new"


@pytest.fixture
def ws(db, localdlc, tmp_path, settings):
    return local_workspace(localdlc, tmp_path, settings)


@pytest.fixture
def user(ws):
    user = get_user_model().objects.create_user("wiz", password="pw-not-used-here")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    return user


@pytest.fixture
def web(client, user):
    client.force_login(user)
    return client


def ids_in_order(html: str, prefix: str = "sec-") -> list[str]:
    return re.findall(rf'<section id="{prefix}([a-z_]+)"', html)


def test_page_shows_the_six_sections_in_console_order_with_index_and_api_panel(web):
    html = web.get(URL).content.decode()
    assert ids_in_order(html) == ["basic", "environment", "resources", "vpc", "fault_tolerance", "ram_role"]
    index = re.findall(r'<a href="#sec-([a-z_]+)" data-section', html)
    assert index == ids_in_order(html)
    assert 'id="api-panel"' in html and 'id="api-json"' in html and 'id="api-sdk"' in html
    # ListEcsSpecs fed the instance type chooser, with CPU, memory and GPU in each label.
    assert re.search(r'<option value="ecs.g6.large">ecs.g6.large · 2 vCPU · 8 GiB · no GPU</option>', html)
    assert "Tesla-T4" in html
    # Defaults of the console: General Computing, Intelligent scheduling, 30 days, no RAM role.
    assert re.search(r'value="general"[^>]*checked', html)
    assert re.search(r'value="intelligent"[^>]*checked', html)
    assert 'name="resources-max_duration" value="30"' in html
    assert re.search(r'name="ram_role-mode" value="none"[^>]*checked', html)


def test_a_valid_post_saves_the_body_hints_and_sealed_password_and_redirects(web, ws):
    data = form_data(environment__registry_username="robot", environment__registry_password="s3cret pw ",
                     basic__tags__0__key="team", basic__tags__0__value="vision")
    answer = web.post(URL, data)
    job = Job.objects.get()
    assert answer.status_code == 302 and answer["Location"] == job.get_absolute_url()
    assert job.workspace == ws and job.display_name == "train-1"
    assert job.body["WorkspaceId"] == "ws-wizard"
    assert job.body["JobSpecs"][0]["ImageConfig"] == {"Username": "robot"}
    assert "s3cret" not in str(job.body) and "s3cret" not in str(job.hints)
    assert "s3cret" not in job.sealed_secrets
    assert secretbox.unseal(job.sealed_secrets) == {"registry_password": "s3cret pw "}
    assert job.hints["image_type"] == "address" and job.hints["secrets"] == ["registry_password"]
    assert job.body["Settings"]["Tags"] == {"team": "vision"}


def test_an_invalid_post_keeps_every_value_and_shows_errors_at_fields_and_in_a_summary(web):
    data = form_data(basic__name="bad name!", basic__tags__0__key="aliyun:x", basic__tags__0__value="v",
                     basic__tags__1__key="ok", basic__tags__1__value="two",
                     environment__registry_username="robot", environment__registry_password="hunter22",
                     resources__roles__0__count="0", environment__envs__0__key="1BAD", environment__envs__0__value="x")
    answer = web.post(URL, data)
    html = answer.content.decode()
    assert answer.status_code == 200 and Job.objects.count() == 0
    # Errors at their fields, each field marked invalid and described by its error.
    for name, message in [
        ("basic-name", "may contain only ASCII letters (a-z, A-Z), digits"),
        ("basic-tags-0-key", "must not start with &#x27;aliyun&#x27;"),
        ("resources-roles-0-count", "at least 1"),
        ("environment-envs-0-key", "not starting with a digit"),
    ]:
        block = re.search(rf'<div class="field[^"]*invalid" id="f-{name}">(.*?)</div>\s*</div>', html, re.S)
        assert block and message in block.group(1), name
        assert re.search(rf'name="{name}"[^>]*aria-invalid="true"', html)
    # The summary links to each field by id.
    summary = re.search(r'id="error-summary">(.*?)</div>', html, re.S).group(1)
    for anchor in ("id_basic-name", "id_basic-tags-0-key", "id_resources-roles-0-count", "id_environment-envs-0-key"):
        assert f'href="#{anchor}"' in summary
    # Every value kept, dynamic rows included; the password is not, and the page says so.
    for name, value in [("basic-name", "bad name!"), ("basic-tags-1-key", "ok"), ("basic-tags-1-value", "two"),
                        ("environment-envs-0-value", "x"), ("environment-registry_username", "robot")]:
        assert f'name="{name}" value="{value}"' in html, name
    assert "hunter22" not in html
    assert "Type the registry password again" in html


def test_rows_are_added_and_removed_without_javascript(web):
    data = form_data(basic__tags__0__key="a", basic__tags__0__value="1", basic__tags__1__key="b",
                     basic__tags__1__value="2", basic__tags__2__key="c", basic__tags__2__value="3")
    html = web.post(URL, {**data, "_remove": "tags-1"}).content.decode()
    assert re.findall(r'name="basic-tags-\d-key" value="(\w)"', html) == ["a", "c"]
    assert Job.objects.count() == 0
    assert "error-summary" not in html, "editing rows is not submitting: no errors yet"
    html = web.post(URL, {**data, "_add": "envs"}).content.decode()
    assert 'name="environment-envs-0-key"' in html
    html = web.post(URL, {**form_data(), "_add": "roles"}).content.decode()
    assert re.findall(r'<option value="(\w+)" selected>', html).count("Master") == 1


def test_after_remove_the_focus_goes_to_the_next_rows_remove_else_to_add(web):
    """A removed button is gone from the new section; keyboard users would land on <body>. The next row's Remove
    takes that button's id (HTMX refocuses by id) and is autofocused, or Add is when the last row went."""
    url = reverse("wizard_section", args=["basic"])
    data = form_data(basic__tags__0__key="a", basic__tags__0__value="1", basic__tags__1__key="b",
                     basic__tags__1__value="2", basic__tags__2__key="c", basic__tags__2__value="3")
    html = web.post(url, {**data, "_remove": "tags-1"}, HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'<button[^>]*\bid="(remove-tags-\d|add-tags)"[^>]*\bautofocus', html) == ["remove-tags-1"]
    assert re.search(r'id="remove-tags-1"\s[^>]*aria-label="Remove Tag 2"', html)
    html = web.post(url, {**data, "_remove": "tags-2"}, HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'<button[^>]*\bid="(remove-tags-\d|add-tags)"[^>]*\bautofocus', html) == ["add-tags"]
    assert "autofocus" not in web.post(url, {**data, "_add": "tags"}, HTTP_HX_REQUEST="true").content.decode()


def test_changing_the_framework_brings_its_roles_and_keeps_the_instance_type(web):
    data = form_data(resources__framework="TensorFlow")  # the page was showing PyTorch
    html = web.post(reverse("wizard_section", args=["resources"]), data, HTTP_HX_REQUEST="true",
                    HTTP_HX_TRIGGER_NAME="resources-framework").content.decode()
    assert html.lstrip().startswith('<section id="sec-resources"')
    options = re.search(r'<select name="resources-roles-0-role"[^>]*>(.*?)</select>', html, re.S).group(1)
    assert re.findall(r'value="(\w+)"', options) == ["Worker", "PS", "Chief", "Evaluator", "GraphLearn"]
    assert '<option value="ecs.g6.large" selected>' in html
    # Cross-section effects arrive out of band: none for a framework switch to TensorFlow in environment? The
    # environment section is re-rendered too, since Ray's RayRuntimeEnv notes live there.
    assert 'id="sec-environment" class="wizard-section card" aria-labelledby="h-environment" hx-swap-oob="true"' in html
    ray = web.post(reverse("wizard_section", args=["resources"]), form_data(resources__framework="Ray"),
                   HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'name="resources-roles-\d-role"[^>]*value="(\w+)"', ray) == ["Head", "Worker"]


def test_dependent_fields_follow_the_source_and_hidden_values_never_reach_the_body(web):
    url = reverse("wizard_section", args=["resources"])
    public = web.post(url, form_data(), HTTP_HX_REQUEST="true").content.decode()
    assert 'name="resources-priority" id=' not in public and 'type="hidden" name="resources-priority"' in public
    quota = web.post(url, form_data("quota"), HTTP_HX_REQUEST="true").content.decode()
    for name in ("resources-quota_id", "resources-priority", "resources-node_scheduling", "resources-idle_resources",
                 "resources-cpu_affinity", "resources-roles-0-cpu", "resources-roles-0-memory_gib"):
        assert f'id="f-{name}"' in quota, name
    assert 'id="f-resources-roles-0-instance_type"' not in quota
    spot = web.post(url, form_data("spot"), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="f-resources-spot_discount"' in spot and 'id="f-resources-spot_price"' not in spot
    # A priority typed under a quota, then the source switched to public: kept on the page, not in the body.
    web.post(URL, form_data(resources__priority="7", resources__dsw="on"))
    job = Job.objects.get()
    assert "Priority" not in job.body and "EnableDSWDev" not in str(job.body)


def test_choosing_lingjun_preemptible_resources_offers_only_the_discount_bid_and_says_the_vswitch_is_required(web):
    """Audit: Lingjun spot offered "By price" (always refused) and the vSwitch help said "Optional" (required there).
    Picking the source re-renders the VPC section too, so its help follows without a page load."""
    url = reverse("wizard_section", args=["resources"])
    data = form_data("spot", resources__resource_type="lingjun", resources__bid_method="")
    html = web.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-source").content.decode()
    assert re.findall(r'name="resources-bid_method" value="(\w+)"', html) == ["discount"]
    vpc = re.search(r'<section id="sec-vpc"[^>]*hx-swap-oob="true".*?</section>', html, re.S).group(0)
    assert re.search(r'id="f-vpc-switch_id">.*?<div class="help">Required for Lingjun preemptible resources.</div>',
                     vpc, re.S)
    general = web.post(url, form_data("spot", resources__bid_method=""), HTTP_HX_REQUEST="true",
                       HTTP_HX_TRIGGER_NAME="resources-source").content.decode()
    assert re.findall(r'name="resources-bid_method" value="(\w+)"', general) == ["discount", "price"]
    assert "Optional" not in general and "Lingjun preemptible resources require one." in general
    # Without JavaScript, a bid by price posted for Lingjun is still refused at its field (the safety net).
    refused = web.post(URL, form_data("spot", resources__resource_type="lingjun", resources__bid_method="price",
                                      resources__spot_price="1", vpc__vpc_id="vpc-a", vpc__switch_id="vsw-a",
                                      vpc__security_group_id="sg-a")).content.decode()
    assert re.search(r'id="f-resources-bid_method">.*?only support bidding by discount', refused, re.S)
    assert Job.objects.count() == 0


def test_choosing_a_public_dataset_limits_access_to_read_only_and_refreshes_the_api_panel(web):
    """Audit: a public dataset kept Access on "Dataset default", which the server refuses."""
    url = reverse("wizard_section", args=["environment"])
    data = form_data(environment__datasets__0__kind="public", environment__datasets__0__id="d-pub",
                     environment__datasets__0__read_only="", environment__datasets__0__mount_path="/mnt/pub")
    answer = web.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="environment-datasets-0-kind")
    html = answer.content.decode()
    access = re.search(r'<select name="environment-datasets-0-read_only"[^>]*>(.*?)</select>', html, re.S).group(1)
    assert re.findall(r'<option value="(\w*)"', access) == ["true"]
    assert 'class="error"' not in html, "nobody touched Access yet"
    # The swap changes what the form posts: the API panel is asked to refresh after it.
    assert answer["HX-Trigger"] == "wizard-changed"
    kind = re.search(r'<select name="environment-datasets-0-kind"[^>]*>', html).group(0)
    assert f'hx-post="{url}"' in kind
    # Without JavaScript: Submit before "Apply choices" is refused at Access, and the page offers read-only only.
    refused = web.post(URL, data).content.decode()
    assert re.search(r'id="f-environment-datasets-0-read_only">.*?only be mounted read-only', refused, re.S)
    access = re.search(r'<select name="environment-datasets-0-read_only"[^>]*>(.*?)</select>', refused, re.S)
    assert re.findall(r'<option value="(\w*)"', access.group(1)) == ["true"]
    web.post(URL, {**data, "environment-datasets-0-read_only": "true"})
    assert Job.objects.get().body["DataSources"][0]["MountAccess"] == "RO"



def test_a_choice_that_no_longer_offers_a_kept_value_shows_its_message_at_once_in_a_checked_section(web):
    """QA: a bid by price, or a read-write dataset, chosen before Lingjun spot or a public dataset was chosen stayed
    shown without a word until its section was checked again, when nothing counted as touched (after a Submit's
    page, a clone). In a checked section the choice's re-render says so at the kept value; unchecked, nothing yet."""
    url = reverse("wizard_section", args=["resources"])
    data = form_data("spot", resources__resource_type="lingjun", resources__bid_method="price",
                     resources__spot_price="1")
    lingjun = web.post(url, {**data, "_checked-resources": "1"}, HTTP_HX_REQUEST="true",
                       HTTP_HX_TRIGGER_NAME="resources-resource_type").content.decode()
    assert re.search(r'id="err-resources-bid_method"><div>Lingjun preemptible resources only support bidding by '
                     r'discount.</div>', lingjun)
    unchecked = web.post(url, data, HTTP_HX_REQUEST="true",
                         HTTP_HX_TRIGGER_NAME="resources-resource_type").content.decode()
    assert 'class="error"' not in unchecked
    general = web.post(url, {**data, "resources-resource_type": "general", "_checked-resources": "1"},
                       HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-resource_type").content.decode()
    assert "err-resources-bid_method" not in general

    url = reverse("wizard_section", args=["environment"])
    data = {**form_data(environment__datasets__0__kind="public", environment__datasets__0__id="d-pub",
                        environment__datasets__0__read_only="false", environment__datasets__0__mount_path="/mnt/p"),
            "_checked-environment": "1"}
    public = web.post(url, data, HTTP_HX_REQUEST="true",
                      HTTP_HX_TRIGGER_NAME="environment-datasets-0-kind").content.decode()
    assert re.search(r'id="err-environment-datasets-0-read_only"><div>Public datasets can only be mounted '
                     r'read-only.</div>', public)
    custom = web.post(url, {**data, "environment-datasets-0-kind": "custom"}, HTTP_HX_REQUEST="true",
                      HTTP_HX_TRIGGER_NAME="environment-datasets-0-kind").content.decode()
    assert 'class="error"' not in custom


def test_leaving_a_section_validates_it_and_only_it(web):
    url = reverse("wizard_section", args=["basic"])
    data = form_data(basic__name="", environment__command="")
    html = web.post(url, {**data, "_validate": "basic"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Enter a job name." in html
    assert '<input type="hidden" name="_checked-basic" value="1">' in html
    assert "Enter a startup command" not in html, "other sections wait until the user leaves them"
    untouched = web.post(reverse("wizard_section", args=["environment"]), data, HTTP_HX_REQUEST="true")
    assert "Enter a startup command" not in untouched.content.decode()


@pytest.mark.parametrize("section, button, name", [("environment", "_add", "datasets"), ("basic", "_add", "tags"),
                                                   ("resources", "resources-framework", "TensorFlow")])
def test_an_add_or_a_choice_inside_a_section_shows_no_errors_of_fields_nobody_touched(web, section, button, name):
    """In a browser, htmx adds the section's hx-vals (`_validate`, for its focusout) to the requests of the buttons
    and choices inside it: the Add of a fresh page posted `_validate` and showed every error of the section."""
    url = reverse("wizard_section", args=[section])
    data = form_data(basic__name="", environment__image="", environment__command="", resources__roles__0__count="")
    data = {**data, "_validate": section}
    html = web.post(url, {**data, button: name}, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME=button).content.decode()
    assert 'class="error"' not in html and "aria-invalid" not in html
    left = web.post(url, data, HTTP_HX_REQUEST="true").content.decode()  # the section's own focusout: no name
    assert 'class="error"' in left and 'aria-invalid="true"' in left
    # Each swap would announce a role=alert error again: fields point at theirs (aria-describedby) instead.
    assert 'role="alert"' not in left


def test_the_api_panel_shows_json_sdk_and_params_file_with_secrets_masked(web):
    data = form_data(environment__registry_username="robot", environment__registry_password="pw-XYZ")
    html = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true").content.decode()
    json_text = re.search(r'<pre class="code" id="api-json">(.*?)</pre>', html, re.S).group(1)
    assert "&quot;Password&quot;: &quot;********&quot;" in json_text and "pw-XYZ" not in html
    assert "CreateJobRequest" in html and "DLC_REGISTRY_PASSWORD" in html
    assert 'id="api-params-none"' in html, "a public job has no params-file form"
    # Said as the job page and its export say it (jobs.export.params_file_problem), not a rule it may not break.
    reason = re.search(r'id="api-params-none">(.*?)</p>', html, re.S).group(1)
    assert "instance type (EcsSpec)" in reason or "registry credentials (ImageConfig)" in reason, reason
    # The params file has no key for the maximum duration, so only a job without one can be written as one.
    quota = web.post(reverse("wizard_preview"), form_data("quota", resources__max_duration=""),
                     HTTP_HX_REQUEST="true").content.decode()
    params = re.search(r'<pre class="code" id="api-params">(.*?)</pre>', quota, re.S).group(1)
    assert "name=train-quota" in params and "worker_cpu=4" in params and "resource_id=quota-abc" in params


def test_instance_type_chooser_falls_back_to_free_text_when_dlc_is_unreachable(web, ws):
    Workspace.objects.filter(pk=ws.pk).update(endpoint="127.0.0.1:9")  # nothing listens on port 9
    html = web.get(URL).content.decode()
    assert 'id="catalog-error"' in html and "Could not list instance types:" in html
    assert "DLC endpoint cannot be reached as configured (ask an admin); you can still type" in html
    assert re.search(r'<input type="text" name="resources-roles-0-instance_type"', html)
    answer = web.post(URL, form_data(resources__roles__0__instance_type="ecs.g6.large"))
    assert answer.status_code == 302, "the public-resource limit becomes a note, not a blocker"


def test_viewers_may_not_create_and_strangers_see_nothing(client, ws):
    viewer = get_user_model().objects.create_user("viewer")
    Membership.objects.create(user=viewer, workspace=ws, role=Membership.VIEWER)
    client.force_login(viewer)
    assert client.get(URL).status_code == 403
    assert client.post(URL, form_data()).status_code == 403
    assert Job.objects.count() == 0


def test_without_javascript_the_apply_button_shows_the_fields_a_choice_needs(web):
    html = web.get(URL).content.decode()
    assert '<noscript><p class="apply"><button type="submit" name="_refresh"' in html
    html = web.post(URL, {**form_data("quota"), "_refresh": "resources"}).content.decode()
    assert 'id="f-resources-quota_id"' in html and 'id="f-resources-roles-0-cpu"' in html
    assert Job.objects.count() == 0 and "error-summary" not in html


def test_notes_from_spec_appear_at_their_fields(web):
    url = reverse("wizard_section", args=["resources"])
    data = form_data("quota", resources__resource_type="lingjun", environment__image_type="custom",
                     resources__retention="2", fault_tolerance__enabled="on")
    html = web.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-resource_type")
    html = html.content.decode()
    env = re.search(r'<section id="sec-environment".*?</section>', html, re.S).group(0)
    assert re.search(r'id="f-environment-image_type">.*?install the RDMA drivers', env, re.S), \
        "the environment section comes along (out of band) with the Lingjun + custom image note"
    assert re.search(r'id="f-resources-retention">.*?deleted jobs cannot be restored', html, re.S)
    ft = re.search(r'<section id="sec-fault_tolerance".*?</section>', html, re.S).group(0)
    assert "1 CPU core and 1 GiB of memory" in ft and 'name="fault_tolerance-sanity_check"' in ft
    page = web.get(URL).content.decode()
    assert re.search(r'id="f-vpc-vpc_id">.*?Without a VPC the job uses the public network', page, re.S)


def test_instance_types_are_cached_per_workspace(web, localdlc):
    before = localdlc.stats()["calls"].get("ListEcsSpecs", 0)
    web.get(URL)
    web.get(URL)
    web.post(reverse("wizard_preview"), form_data(), HTTP_HX_REQUEST="true")
    assert localdlc.stats()["calls"].get("ListEcsSpecs", 0) - before == 1


def test_a_secret_env_is_sealed_never_stored_and_never_sent_back_to_the_page(web, ws):
    secret = "wandb-VIEW-0xD00D"
    data = form_data(environment__envs__0__key="WANDB_API_KEY", environment__envs__0__value=secret,
                     environment__envs__0__secret="on", environment__envs__1__key="EPOCHS",
                     environment__envs__1__value="3")
    # Every page a POST renders (a section, the API panel, the whole page with an error) hides the value.
    section = web.post(reverse("wizard_section", args=["environment"]), {**data, "_add": "envs"},
                       HTTP_HX_REQUEST="true").content.decode()
    preview = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true").content.decode()
    refused = web.post(URL, {**data, "basic-name": ""}).content.decode()
    for html in (section, preview, refused):
        assert secret not in html
    assert re.search(r'<input type="password" name="environment-envs-0-value"[^>]*hx-preserve', section)
    assert re.search(r'name="environment-envs-0-secret"[^>]*checked', section)
    assert "&quot;WANDB_API_KEY&quot;: &quot;********&quot;" in preview
    assert "os.environ[&#x27;WANDB_API_KEY&#x27;]" in preview
    assert "Value of WANDB_API_KEY" in refused  # typed on a page that came back: asked again
    answer = web.post(URL, data)
    assert answer.status_code == 302
    job = Job.objects.get()
    assert job.body["Envs"] == {"WANDB_API_KEY": "********", "EPOCHS": "3"}
    assert secret not in str(job.body) and secret not in str(job.hints) and secret not in job.sealed_secrets
    assert secretbox.unseal(job.sealed_secrets) == {"env:WANDB_API_KEY": secret}


def test_a_plain_env_named_like_a_secret_gets_the_tick_secret_note(web):
    data = form_data(environment__envs__0__key="HF_TOKEN", environment__envs__0__value="hf_x",
                     environment__envs__1__key="TOKENIZERS_PARALLELISM", environment__envs__1__value="false")
    html = web.post(reverse("wizard_section", args=["environment"]), data, HTTP_HX_REQUEST="true").content.decode()
    assert html.count("looks like a secret, so its value is kept like one") == 1


@pytest.mark.parametrize("name", ["HF_TOKEN", "HFTOKEN"])  # HFTOKEN: once hidden on the page only, stored plain
def test_a_plain_env_named_like_a_secret_is_sealed_like_the_api_does_and_masked_in_the_preview(web, name):
    plain = "hf-PLAIN-0xBEEF"
    data = form_data(environment__envs__0__key=name, environment__envs__0__value=plain,
                     environment__envs__1__key="TOKENIZERS_PARALLELISM", environment__envs__1__value="false")
    preview = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true").content.decode()
    assert plain not in preview and f"&quot;{name}&quot;: &quot;********&quot;" in preview
    answer = web.post(URL, data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    job = Job.objects.get()
    assert job.body["Envs"] == {name: "********", "TOKENIZERS_PARALLELISM": "false"}
    assert secretbox.unseal(job.sealed_secrets) == {f"env:{name}": plain}


# --- one submission per form (the token), defaults under a policy, what a re-render shows, one problem count -----


def token_of(html: str) -> str:
    return re.search(r'<input type="hidden" name="_submission" value="([0-9a-f-]{36})">', html).group(1)


def test_the_same_form_posted_twice_makes_one_job_and_the_second_post_is_sent_to_it(web, ws):
    answer = web.get(URL)
    # The browser may keep the page for Back (no no-store), but asks again on a new visit (a new token).
    assert answer["Cache-Control"] in ("private, no-cache", "no-cache, private")
    page = answer.content.decode()
    assert token_of(web.get(URL).content.decode()) != token_of(page)
    data = {**form_data(environment__command="python fixed.py"), "_submission": token_of(page)}
    first = web.post(URL, data)
    job = Job.objects.get()
    assert first.status_code == 302 and first["Location"] == job.get_absolute_url()
    assert str(job.idempotency_tag) == data["_submission"], "the page's token is the job's tag, sent to DLC"
    again = web.post(URL, data, follow=True)  # Back, then Submit again
    assert Job.objects.count() == 1
    assert again.redirect_chain == [(job.get_absolute_url(), 302)]
    assert "This form was already submitted: here is its job." in again.content.decode()
    # A page that came back with an error keeps its token, so the post that finally succeeds is the one.
    refused = web.post(URL, {**form_data(basic__name=""), "_submission": token_of(web.get(URL).content.decode())})
    kept = token_of(refused.content.decode())
    assert web.post(URL, {**form_data(basic__name="train-2"), "_submission": kept}).status_code == 302
    assert Job.objects.get(display_name="train-2").idempotency_tag.hex == kept.replace("-", "")


def test_a_token_that_is_no_uuid4_or_is_another_users_gets_a_fresh_tag(web, ws, client):
    other = get_user_model().objects.create_user("other", password="pw-not-used-here")
    Membership.objects.create(user=other, workspace=ws, role=Membership.MEMBER)
    theirs = Client()
    theirs.force_login(other)
    token = token_of(theirs.get(URL).content.decode())
    assert theirs.post(URL, {**form_data(basic__name="theirs"), "_submission": token}).status_code == 302
    mine = web.post(URL, {**form_data(basic__name="mine"), "_submission": token})
    job = Job.objects.get(display_name="mine")
    assert mine["Location"] == job.get_absolute_url(), "not sent to another user's job"
    assert str(job.idempotency_tag) != token and job.idempotency_tag.version == 4
    for bad in ("not-a-uuid", "00000000-0000-1000-8000-000000000000", ""):  # junk, a uuid1, none
        answer = web.post(URL, {**form_data(basic__name=f"junk-{Job.objects.count()}"), "_submission": bad})
        assert answer.status_code == 302
    assert Job.objects.filter(owner__username="wiz").count() == 4
    assert all(j.idempotency_tag.version == 4 for j in Job.objects.all())


def test_the_same_sweep_form_posted_twice_makes_one_sweep(web, ws):
    from jobs.models import Sweep

    token = token_of(web.get(URL).content.decode())
    data = {**form_data(basic__name="grid", environment__command="echo $LR"), "sweep": "LR = 0.1, 0.2",
            "_submission": token}
    sweep_url = web.post(URL, data)["Location"]
    sweep = Sweep.objects.get()
    assert sweep_url == sweep.get_absolute_url() and Job.objects.count() == 2
    again = web.post(URL, data, follow=True)
    assert again.redirect_chain == [(sweep_url, 302)] and Sweep.objects.count() == 1 and Job.objects.count() == 2
    assert "This form was already submitted: here is its sweep." in again.content.decode()
    # Posted again as one job (the sweep text removed after Back): still this form's submission.
    assert web.post(URL, {**data, "sweep": ""})["Location"] == sweep_url and Job.objects.count() == 2


def test_a_clone_posted_twice_makes_one_job_with_the_edit(web, ws):
    web.post(URL, form_data(basic__name="source", environment__command="python broken.py"))
    source = Job.objects.get()
    page = web.get(f"{URL}?clone={source.pk}").content.decode()
    data = {**page_form_data(page), "environment-command": "python fixed.py"}
    for _ in range(2):
        web.post(URL, data)
    clones = Job.objects.exclude(pk=source.pk)
    assert clones.count() == 1 and clones.get().body["UserCommand"] == "python fixed.py"


def test_the_form_posts_to_a_url_other_than_its_pages_and_a_get_there_opens_the_wizard(web, ws):
    """QA: without JavaScript (or the back/forward cache), Back after Submit showed a new page with a new token, and
    its Submit made a second job: the form posted to /jobs/new, the page's own URL, and a browser drops its cached
    copy of a URL that a form posts to (RFC 9111, 4.4), so Back asked the server for a new page
    (tests/test_browser_wizard.py shows it in Chromium)."""
    form_url = reverse("job_create_form")
    web.post(URL, form_data(basic__name="source"))
    source = Job.objects.get()
    for page_url in (URL, f"{URL}?clone={source.pk}", f"{URL}?_workspace={ws.pk}"):
        page = web.get(page_url).content.decode()
        assert re.search(r'<form method="post" action="([^"]*)" id="wizard-form"', page)[1] == form_url != page_url
    # Without JavaScript, Apply choices re-renders the page from the same URL, token kept.
    applied = web.post(form_url, {**page_form_data(page), "_refresh": "environment"})
    assert applied.status_code == 200 and token_of(applied.content.decode()) == token_of(page)
    data = {**form_data(basic__name="posted-there"), "_submission": token_of(page)}
    job_url = web.post(form_url, data)["Location"]
    assert job_url == Job.objects.get(display_name="posted-there").get_absolute_url()
    assert web.post(form_url, data)["Location"] == job_url and Job.objects.count() == 2
    # A reloaded or bookmarked address of the form's target opens the wizard it names.
    assert web.get(f"{form_url}?clone={source.pk}")["Location"] == f"{URL}?clone={source.pk}"
    assert web.get(form_url)["Location"] == URL


def sign_in(browser: Client, username: str, next_url: str = "") -> Client:
    """The sign-in form, CSRF checked: a sign-in gives the client a new CSRF token, as it gives a browser one."""
    page = browser.get(f"/accounts/login/?next={next_url}" if next_url else "/accounts/login/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
    return browser.post("/accounts/login/", {"csrfmiddlewaretoken": token, "username": username,
                                             "password": "pw-not-used-here", "next": next_url})


def end_session(browser: Client) -> None:
    from django.contrib.sessions.models import Session

    assert Session.objects.filter(session_key=browser.cookies["sessionid"].value).delete()[0] == 1


def test_a_form_sent_after_the_session_ended_goes_to_sign_in_says_so_and_comes_back_to_its_page(web, ws, user):
    """The session ends (expired, or ended on the server) while a clone's page is open, then Submit: the sign-in
    page says the form was not sent and its input not kept, and signing in opens the same clone page again. The
    old page, sent once more after that sign-in (Back), is refused by the CSRF check with a page that says so and
    links to the form's page: never a 500 or Django's dead-end CSRF page, never a job."""
    from jobs.wizard import SESSION_ENDED

    web.post(URL, form_data(basic__name="source"))
    source = Job.objects.get()
    page_url = f"{URL}?clone={source.pk}"
    browser = Client(enforce_csrf_checks=True)
    assert sign_in(browser, "wiz").status_code == 302
    page = browser.get(page_url).content.decode()
    data = {**page_form_data(page), "environment-command": "python fixed.py"}
    end_session(browser)
    # next= is the form's page: the Referer's path and query when it is the wizard's, else from the hidden fields.
    login = f"/accounts/login/?next=/jobs/new%3Fclone%3D{source.pk}"
    referred = browser.post(reverse("job_create_form"), data, HTTP_REFERER=f"http://elsewhere.example{page_url}&x=2")
    assert referred["Location"] == f"{login}%26x%3D2", "its path and query, never its host"
    answer = browser.post(reverse("job_create_form"), data)
    assert answer.status_code == 302 and answer["Location"] == login
    assert SESSION_ENDED in browser.get(answer["Location"]).content.decode()
    assert Job.objects.count() == 1
    back = sign_in(browser, "wiz", page_url)
    assert back["Location"] == page_url and "Clone job" in browser.get(page_url).content.decode()
    stale = browser.post(reverse("job_create_form"), data, HTTP_REFERER=f"http://testserver{page_url}")
    html = stale.content.decode()
    assert stale.status_code == 403 and "This form was not sent" in html and "CSRF" in html
    assert f'<a href="{page_url}" id="open-again">' in html
    assert Job.objects.count() == 1


def test_a_wizard_request_of_htmx_after_the_session_ended_goes_to_sign_in_and_says_so(web, ws, user):
    from jobs.wizard import SESSION_ENDED

    browser = Client(enforce_csrf_checks=True)
    sign_in(browser, "wiz")
    data = page_form_data(browser.get(f"{URL}?_workspace={ws.pk}").content.decode())
    end_session(browser)
    for url in (reverse("wizard_section", args=["basic"]), reverse("wizard_preview")):
        answer = browser.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=f"http://testserver{URL}?x=1")
        assert answer["HX-Redirect"] == "/accounts/login/?next=/jobs/new%3Fx%3D1", "the page's, not the fragment's"
        assert SESSION_ENDED in browser.get(answer["HX-Redirect"]).content.decode()


def test_a_new_jobs_maximum_duration_starts_within_the_policy_cap(web, ws):
    WorkspacePolicy.objects.create(workspace=ws, max_duration_minutes=7 * 1440)
    html = web.get(URL).content.decode()
    assert 'name="resources-max_duration" value="7"' in html
    assert re.search(r'name="resources-max_duration_unit"[^>]*>.*?<option value="days" selected>', html, re.S)
    answer = web.post(URL, page_form_data(html) | form_data() | {"resources-max_duration": "7"})
    assert answer.status_code == 302, "the default is allowed"


def section_errors(html: str, name: str) -> list[str]:
    block = re.search(rf'<section id="sec-{name}".*?</section>', html, re.S).group(0)
    return re.findall(r'<div class="error"[^>]*>(.*?)</div>', block, re.S)


def test_a_choice_re_renders_its_section_without_painting_untouched_fields(web, ws):
    WorkspacePolicy.objects.create(workspace=ws, max_gpus=1)
    url = reverse("wizard_section", args=["resources"])
    # The user had left Resources once (it is checked) with nothing wrong, then picks Quota.
    data = {**form_data("quota", resources__quota_id="", resources__roles__0__cpu=""), "_checked-resources": "1",
            "_touched": "resources-source"}
    html = web.post(url, data, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-source").content.decode()
    assert section_errors(html, "resources") == [], "the quota and CPU fields it brought are not mistakes yet"
    # Leaving the section shows them; a later choice keeps showing what was shown, and what the user typed.
    left = web.post(url, {**data, "_validate": "resources"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Choose a resource quota." in " ".join(section_errors(left, "resources"))
    shown = re.findall(r'<input type="hidden" name="_shown" value="([^"]+)">', left)
    assert "resources.quota_id" in shown
    again = web.post(url, {**data, "_shown": shown, "_touched": "resources-source resources-priority",
                           "resources-priority": "12"},
                     HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-node_scheduling").content.decode()
    messages = " ".join(section_errors(again, "resources"))
    assert "Choose a resource quota." in messages and "Priority must be from 1" in messages
    # Preemptible without an instance type: no GPU-policy message (the instance type's own "choose" says it).
    spot = {**form_data("spot", resources__roles__0__instance_type=""), "_checked-resources": "1"}
    html = web.post(url, spot, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER_NAME="resources-source").content.decode()
    assert section_errors(html, "resources") == []
    left = web.post(url, {**spot, "_validate": "resources"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Choose an instance type." in " ".join(section_errors(left, "resources"))
    assert "GPU count of an instance type is unknown" not in left


def test_the_panel_the_badges_and_the_summary_state_one_count(web, ws):
    data = form_data(basic__name="bad name!", environment__command="", resources__roles__0__count="0",
                     resources__max_duration="-1", sweep="LR = ", run_after="nope")
    html = web.post(URL, data).content.decode()
    heading = int(re.search(r'<h2>(\d+) problems? to fix before submitting</h2>', html).group(1))
    summary = re.search(r'id="error-summary">(.*?)</div>', html, re.S).group(1)
    badges = [int(n) for n in re.findall(r'<span class="badge danger" title="problems in [^"]*">(\d+)</span>', html)]
    panel = int(re.search(r'(\d+) problems? left: DLC would refuse', html).group(1))
    live = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true").content.decode()
    assert len(badges) >= 5, "errors in Basic, Environment, Resources, the sweep box and Run after"
    assert heading == summary.count("<li>") == sum(badges) == panel
    assert int(re.search(r'(\d+) problems? left', live).group(1)) == panel


def test_a_blank_create_page_offers_the_workspaces_templates_and_a_pick_starts_from_one(web, ws, user):
    from jobs import spec, templates_lib
    from tests import portal_fixtures as pf

    assert 'id="template-picker"' not in web.get(URL).content.decode(), "no templates, no picker"
    for name in ("zeta-nightly", "alpha-eval"):
        templates_lib.save(ws, user, name, spec.inverse(pf.BODY))
    html = web.get(URL).content.decode()
    picker = re.search(r'<form method="get" action="/jobs/new" class="inline" id="template-picker">.*?</form>',
                       html, re.S).group(0)
    assert re.findall(r'<option value="\d+">([^<]+)</option>', picker) == ["alpha-eval", "zeta-nightly"]
    alpha = re.search(r'<option value="(\d+)">alpha-eval<', picker).group(1)
    started = web.get(URL, {"template": alpha}).content.decode()
    assert "Started from the template" in started and "alpha-eval" in started
    assert 'id="template-picker"' not in started, "a page started from a template offers no other"


def test_edit_and_resubmit_of_a_job_that_resets_nothing_shows_the_refusal_and_no_empty_card(web, ws, user):
    from tests import portal_fixtures as pf

    refused = Job.objects.create(workspace=ws, owner=user, display_name=pf.BODY["DisplayName"], status="SubmitFailed",
                                 body=pf.BODY, submit_error={"Code": "InvalidParameter.PodCount", "Message": "<= 64"})
    html = web.get(URL, {"edit": refused.pk}).content.decode()
    assert re.search(r'id="refusal".*InvalidParameter\.PodCount</span>: &lt;= 64', html, re.S)
    assert not re.search(r'id="clone-info">\s*</div>', html), "a card with nothing in it"


UNSTORABLE = {  # as typed into the box: JSON text whose escapes or numbers no field can store or send
    "lone surrogate": ('{"RayRedisAddress": "\\ud800"}', "lone surrogate"),
    "NUL": ('{"RayRedisAddress": "a\\u0000"}', "NUL character"),
    "600 levels": ('{"RayRuntimeEnv": ' + "[" * 600 + "]" * 600 + "}", "Nested too deeply"),
    "NaN": ('{"RayRedisAddress": NaN}', "NaN"),
}
OSS = {"environment-storages-0-type": "oss", "environment-storages-0-uri": "oss://bucket.oss-cn-hangzhou.aliyuncs.com/d",
       "environment-storages-0-mount_path": "/mnt/data"}


@pytest.mark.parametrize("box", ["resources-advanced", "environment-storages-0-options"])
@pytest.mark.parametrize("case", list(UNSTORABLE))
def test_unstorable_json_in_the_advanced_boxes_is_an_error_at_the_box_on_every_wizard_url(web, box, case):
    """The submit (the form's POST URL), the live API panel and the section a user leaves all answer 200 and say
    what is wrong at the box: never a 500 from a value the database, a page or DLC cannot take, never a job."""
    text, words = UNSTORABLE[case]
    section = box.split("-")[0]
    data = form_data(**({k.replace("-", "__"): v for k, v in OSS.items()} if "storages" in box else {}))
    data[box] = text
    submitted = web.post(reverse("job_create_form"), data)
    assert submitted.status_code == 200 and not Job.objects.exists()
    left = web.post(reverse("wizard_section", args=[section]), {**data, "_validate": section}, HTTP_HX_REQUEST="true")
    assert left.status_code == 200
    for html in (submitted.content.decode(), left.content.decode()):
        at_box = re.search(rf'<div class="error" id="err-{box}">(.*?)</div>\s*</div>', html, re.S)
        assert at_box and words in at_box.group(1), case
    preview = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true")
    assert preview.status_code == 200
    assert re.search(r"(\d+) problems? left: DLC would refuse", preview.content.decode()), "the panel counts it"
