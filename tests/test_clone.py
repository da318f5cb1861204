"""Clone (issue #5) and edit-and-resubmit through the real pages: fully populated source jobs are created
through the wizard, cloned with `?clone=<id>`, and every field of the clone page is checked against the one
policy table (jobs.clone.POLICY): copied, reset or re-prompted. The form data is read from the page the way
a browser would post it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from jobs import clone, dlc, secretbox, spec
from jobs import status as st
from jobs.forms import wizard as glue
from jobs.models import Job, Membership
from tests.support.wizard import form_data, local_workspace, page_form_data

pytestmark = pytest.mark.integration

URL = "/jobs/new"
REGISTRY_SECRET = "pw-REGISTRY-0xC0FFEE"
RAY_SECRET = "pw-RAY-0xBEEF"
WANDB_SECRET = "wandb-SECRET-0xFACE"
ADVANCED_SECRET = "adv-SECRET-0xD00D"  # a WandbApiKey in AdvancedSettings, as a job made outside the console has
ARN = "acs:ram::1234567890:role/train"


def rows(prefix: str, *items: dict[str, str]) -> dict[str, str]:
    return {f"{prefix}__{i}__{k}": v for i, item in enumerate(items) for k, v in item.items()}


FULL = {
    # General computing quota, PyTorch, address image with credentials, every list filled.
    "quota": dict(
        basic__name="full-quota", basic__description="every field set",
        **rows("basic__tags", {"key": "team", "value": "vision,nlp"}, {"key": "cost", "value": "c1"}),
        environment__registry_username="robot", environment__registry_password=REGISTRY_SECRET,
        **rows("environment__datasets",
               {"kind": "custom", "id": "d-1", "version": "v2", "read_only": "true", "mount_path": "/mnt/d1"},
               {"kind": "public", "id": "d-pub", "version": "", "read_only": "true", "mount_path": "/mnt/pub"}),
        **rows("environment__storages",
               {"type": "oss", "uri": "oss://bucket.oss-cn-hangzhou.aliyuncs.com/data/", "mount_path": "/mnt/oss",
                "options": '{"mountType":"ossfs"}'},
               {"type": "nas", "uri": "nas://31a8e4.cn-hangzhou/share", "mount_path": "/mnt/nas",
                "options": '{"nconnect":"4"}'}),
        environment__command="python /mnt/code/train.py --epochs 3",
        **rows("environment__envs", {"key": "WANDB_MODE", "value": "offline"}, {"key": "SEED", "value": "7"}),
        environment__libs_mode="requirements", environment__requirements_dir="/mnt/code/requirements.txt",
        environment__code_mode="git", environment__code_source_id="code-42", environment__code_branch="main",
        environment__code_commit="abc1234", environment__code_mount_path="/mnt/code",
        resources__priority="7",
        **rows("resources__roles",
               {"role": "Worker", "count": "2", "cpu": "4", "gpu": "1", "memory_gib": "16", "shared_memory_gib": "4",
                "node_names": "n1,n2", "instance_type": ""},
               {"role": "Master", "count": "1", "cpu": "2", "gpu": "0", "memory_gib": "8", "shared_memory_gib": "1",
                "node_names": "n3", "instance_type": ""}),
        resources__node_scheduling="on", resources__idle_resources="on", resources__cpu_affinity="on",
        resources__scheduling_policy="spread", resources__max_duration="36", resources__max_duration_unit="hours",
        resources__retention="90", resources__retention_unit="minutes",
        resources__dsw="on",
        resources__advanced="createSvcForAllWorkers=true,customPortList=10000;10001-10010,"
                            "ReleaseResourcePolicy=pod-exit",
        vpc__vpc_id="vpc-abc", vpc__switch_id="vsw-abc", vpc__security_group_id="sg-abc",
        vpc__extended_cidrs="192.168.0.0/16, 10.0.0.0/8", vpc__gateway="private",
        fault_tolerance__enabled="on", fault_tolerance__args="--enable-log-hang-detection true",
        ram_role__mode="custom", ram_role__role_arn=ARN,
    ),
    # Preemptible Ray by discount, custom image, listed libraries, uploaded code, RayRedisPassword.
    "spot": dict(
        basic__name="full-ray",
        environment__image_type="custom", environment__image="registry.example.com/custom/ray:2.9",
        environment__libs_mode="list", environment__libs="numpy pandas",
        environment__code_mode="upload", environment__code_upload_uri="oss://bucket.oss-cn-hangzhou.aliyuncs.com/c/",
        environment__code_mount_path="/mnt/up", environment__command="python /mnt/up/run.py",
        **rows("environment__envs", {"key": "WANDB_API_KEY", "value": WANDB_SECRET, "secret": "on"}),
        resources__framework="Ray", _framework_shown="Ray", resources__spot_discount="40",
        **rows("resources__roles", {"role": "Head", "count": "1", "instance_type": "ecs.g6.large"},
               {"role": "Worker-cpu", "count": "2", "instance_type": "ecs.c6.large"}),
        resources__advanced=f"RayRedisAddress=redis.internal:6379,RayRedisPassword={RAY_SECRET},"
                            "RaySubmitterBackoffLimit=3",
        ram_role__mode="default",
    ),
    # Lingjun quota PyTorch with the sanity check, official image, a BMCPFS mount.
    "lingjun": dict(
        basic__name="full-lingjun",
        environment__image_type="official",
        environment__image="dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/pytorch-training:2.3-gpu-py311-cu121-"
                           "ubuntu22.04",
        **rows("environment__storages", {"type": "bmcpfs", "uri": "bmcpfs://bmcpfs-01/data",
                                         "mount_path": "/mnt/bm", "options": ""}),
        resources__resource_type="lingjun", resources__roles__0__gpu="8",
        fault_tolerance__sanity_check="on", fault_tolerance__sanity_args="--sanity-check-timing=AfterJobFaultTolerant",
    ),
    # Preemptible by price.
    "price": dict(basic__name="full-price", resources__bid_method="price", resources__spot_price="0.011"),
}
BASE_OF = {"quota": "quota", "spot": "spot", "lingjun": "quota", "price": "spot"}


@pytest.fixture
def ws(db, localdlc, tmp_path, settings):
    return local_workspace(localdlc, tmp_path, settings)


@pytest.fixture
def user(ws):
    user = get_user_model().objects.create_user("cloner")
    Membership.objects.create(user=user, workspace=ws, role=Membership.MEMBER)
    return user


@pytest.fixture
def web(client, user):
    client.force_login(user)
    return client


def create(web, kind: str) -> Job:
    changes = dict(FULL[kind])
    shown = changes.pop("_framework_shown", None)
    data = form_data(BASE_OF[kind], **changes)
    if shown:
        data["_framework_shown"] = shown
    answer = web.post(URL, data)
    assert answer.status_code == 302, answer.content.decode()[:3000]
    return Job.objects.order_by("-pk").first()


@pytest.fixture
def sources(web):
    return {kind: create(web, kind) for kind in FULL}


def clone_page(web, job: Job) -> str:
    answer = web.get(f"{URL}?clone={job.pk}")
    assert answer.status_code == 200
    return answer.content.decode()


def section_keys(path: str, data: dict[str, str]) -> list[str]:
    """Form keys a policy path covers: "basic.name" -> ["basic-name"], "basic.tags[].key" -> every row's."""
    if "[]" in path:
        head, name = path.split("[].")
        pattern = re.compile(re.escape(glue.field_name(head)) + r"-\d+-" + re.escape(name))
        return sorted(k for k in data if pattern.fullmatch(k))
    return [glue.field_name(path)]


def value(data: dict[str, str], key: str) -> str | bool:
    """A posted value as the form reads it: checkboxes (also carried as hidden "True"/"False") are booleans."""
    section, _, name = key.partition("-")
    module = glue.BY_SECTION.get(section)
    if module and type(module.Form.base_fields.get(name)).__name__ == "BooleanField":
        return data.get(key, "").lower() in ("on", "true")
    return data.get(key, "")


def advanced(data: dict[str, str]) -> dict:
    return spec.parse_advanced(data.get("resources-advanced", ""))[0] or {}


def test_the_policy_table_covers_every_wizard_field_exactly_once():
    expected = {f"{s}.{f}" for s, fields in spec.FIELDS.items() for f in fields}
    expected |= {f"{s}.{name}[].{f}" for s, fields in spec.FIELDS.items() for name in fields
                 if name in spec.ROW_FIELDS for f in spec.ROW_FIELDS[name]}
    plain = {p for p in clone.POLICY if not p.startswith("job.") and p.count(".") == 1 or "[]" in p}
    assert plain == expected
    assert {kind for kind, _why in clone.POLICY.values()} == {clone.COPY, clone.RESET, clone.REPROMPT}
    # Secrets are exactly the re-prompted entries.
    assert {p for p, (kind, _) in clone.POLICY.items() if kind == clone.REPROMPT} == {
        "environment.registry_password", "resources.advanced.RayRedisPassword", "environment.envs.secret_value",
        "resources.advanced.secret_named"}


def test_clone_walks_every_field_copy_reset_or_reprompt_as_the_table_says(web, ws, sources):
    # An imported-style body may carry the console's idempotency tag; the clone must not reuse it.
    quota = sources["quota"]
    quota.body["Settings"]["Tags"][dlc.IDEMPOTENCY_TAG_KEY] = str(quota.idempotency_tag)
    # ... and an advanced setting named like a secret, which nothing seals.
    quota.body["Settings"]["AdvancedSettings"]["WandbApiKey"] = ADVANCED_SECRET
    quota.save()
    defaults = glue.sections_to_data(spec.defaults())
    taken = set(Job.objects.values_list("display_name", flat=True))
    covered: set[str] = set()
    pages = {}
    for kind, job in sources.items():
        html = clone_page(web, job)
        pages[kind] = html
        page = page_form_data(html)
        source = glue.sections_to_data(spec.inverse(job.body, job.hints))
        assert REGISTRY_SECRET not in html and RAY_SECRET not in html and WANDB_SECRET not in html
        assert ADVANCED_SECRET not in html
        named = [k for k in advanced(source) if k != "RayRedisPassword" and spec.looks_like_secret(k)]
        for path, (policy, _why) in clone.POLICY.items():
            if path == "basic.name":
                assert page["basic-name"] == clone.copy_name(source["basic-name"], taken), kind
                covered.add(path)
            elif path == "basic.workspace_id" or path == "job.idempotency_tag":
                continue  # checked on the submitted clone below
            elif path == "job.run_after":
                continue  # the sources wait for nothing: tests/test_dependencies.py clones one that does
            elif path == "job.notes":
                continue  # nothing on the clone page: tests/test_notes.py checks a clone has none
            elif path == f"basic.tags.{dlc.IDEMPOTENCY_TAG_KEY}":
                keys = [v for k, v in page.items() if re.fullmatch(r"basic-tags-\d+-key", k)]
                assert dlc.IDEMPOTENCY_TAG_KEY not in keys
                if dlc.IDEMPOTENCY_TAG_KEY in (job.body.get("Settings") or {}).get("Tags", {}):
                    covered.add(path)
            elif path == "basic.tags" or path.startswith("basic.tags[]"):
                src = [(source[f"basic-tags-{i}-key"], source[f"basic-tags-{i}-value"]) for i in range(10)
                       if f"basic-tags-{i}-key" in source and source[f"basic-tags-{i}-key"] != dlc.IDEMPOTENCY_TAG_KEY]
                got = [(page[f"basic-tags-{i}-key"], page[f"basic-tags-{i}-value"]) for i in range(10)
                       if f"basic-tags-{i}-key" in page]
                assert got == src, kind
                covered |= {path} if src else set()
            elif path == "environment.registry_password":
                assert page.get("environment-registry_password", "") == ""
                if job.hints.get("secrets") and "registry_password" in job.hints["secrets"]:
                    assert 'id="reprompt-password"' in html and "Type again" in html
                    covered.add(path)
            elif path == "resources.advanced.RayRedisPassword":
                if "RayRedisPassword" in advanced(source):
                    assert advanced(page)["RayRedisPassword"] == spec.SECRET_PLACEHOLDER
                    assert "RayRedisPassword (advanced framework configuration)" in html
                    covered.add(path)
            elif path == "resources.advanced.secret_named":
                assert not set(named) & set(advanced(page)), kind
                if named:
                    assert 'id="reprompt-advanced"' in html and "Type WandbApiKey (advanced framework " \
                        "configuration) again" in html
                    covered.add(path)
            elif path == "environment.envs.secret_value":
                ticked = [k for k, v in page.items() if re.fullmatch(r"environment-envs-\d+-secret", k) and v == "on"]
                assert all(page.get(k.replace("-secret", "-value"), "") == "" for k in ticked), kind
                if ticked:
                    assert "Value of WANDB_API_KEY" in html and "Type again" in html
                    covered.add(path)
            elif path == "resources.advanced.customPortList":
                assert "customPortList" not in advanced(page)
                if "customPortList" in advanced(source):
                    assert "customPortList" in html and "Reset by the clone policy" in html
                    covered.add(path)
            elif path == "resources.advanced":
                keep = {k: v for k, v in advanced(source).items()
                        if k not in ("customPortList", "RayRedisPassword", *named)}
                got = {k: v for k, v in advanced(page).items() if k != "RayRedisPassword"}
                assert got == keep, kind
                covered |= {path} if keep else set()
            else:
                assert policy == clone.COPY, path
                keys = section_keys(path, source) if "[]" in path else [glue.field_name(path)]
                if path in ("environment.datasets", "environment.storages", "environment.envs", "resources.roles"):
                    prefix = glue.field_name(path) + "-"
                    count = len({k.split("-")[2] for k in source if k.startswith(prefix)})
                    assert count == len({k.split("-")[2] for k in page if k.startswith(prefix)}), (kind, path)
                    covered |= {path} if count else set()
                    continue
                for key in keys:
                    assert value(page, key) == value(source, key), (kind, key, page.get(key), source.get(key))
                    if source.get(key, "") not in ("", defaults.get(key, "")):
                        covered.add(path)
    uncovered = {p for p in clone.POLICY if not p.startswith("job.") and p != "basic.workspace_id"} - covered
    assert not uncovered, f"no source job sets: {sorted(uncovered)}"


def test_clone_submits_a_new_job_with_fresh_identity_and_only_the_users_changes(web, ws, sources):
    source = sources["quota"]
    html = clone_page(web, source)
    data = page_form_data(html)
    # Type the re-prompted secret, change two things; the diff must show exactly those two.
    data["environment-registry_password"] = "new-registry-pw"
    data["resources-priority"] = "9"
    cost = next(k for k, v in data.items() if re.fullmatch(r"basic-tags-\d+-key", k) and v == "cost")
    data[cost.replace("-key", "-value")] = "c2"
    preview = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true").content.decode()
    # The diff box is swapped out of band, before the estimate's paragraph (jobs/wizard/_preview_response.html).
    diff = re.search(r'<div id="clone-diff".*?</div>\s*(?=<p id="cost-estimate"|$)', preview, re.S).group(0)
    changed = re.findall(r'<tr><th scope="row">(.*?)</th><td class="before">(.*?)</td><td class="after">(.*?)</td>',
                         diff)
    assert changed == [("Tag cost", "c1", "c2"), ("Resources › Priority", "7", "9")]
    assert "new-registry-pw" not in preview and REGISTRY_SECRET not in preview
    # Before any change the diff is empty (the reset name is reported by the policy box, not as a change).
    untouched = web.post(reverse("wizard_preview"), page_form_data(html), HTTP_HX_REQUEST="true").content.decode()
    assert "Nothing changed yet" in untouched

    answer = web.post(URL, data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    new = Job.objects.order_by("-pk").first()
    assert new.pk != source.pk and new.cloned_from == source and list(source.clones.all()) == [new]
    assert new.idempotency_tag != source.idempotency_tag
    assert new.display_name == "full-quota-copy" and new.body["WorkspaceId"] == ws.dlc_workspace_id
    assert secretbox.unseal(new.sealed_secrets) == {"registry_password": "new-registry-pw"}
    assert "new-registry-pw" not in str(new.body) and REGISTRY_SECRET not in str(new.body)
    # The body differs from the source's in exactly: the name, the two changes, and the reset port list.
    lost: list[str] = []
    clone._compare(source.body, new.body, "", lost)
    assert sorted(lost) == ["DisplayName", "Priority", "Settings.AdvancedSettings.customPortList",
                            "Settings.Tags.cost"]
    assert new.body["Priority"] == 9 and new.body["Settings"]["Tags"]["cost"] == "c2"


def test_a_ray_clone_needs_its_secrets_typed_again_and_then_seals_them(web, sources):
    source = sources["spot"]
    assert source.body["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER}
    assert WANDB_SECRET not in str(source.body) and WANDB_SECRET in str(secretbox.unseal(source.sealed_secrets))
    data = page_form_data(clone_page(web, source))
    assert data["environment-envs-0-secret"] == "on" and data.get("environment-envs-0-value", "") == ""
    refused = web.post(URL, data).content.decode()
    assert "Type RayRedisPassword again" in refused and "Type the value of WANDB_API_KEY again" in refused
    data["resources-advanced"] = data["resources-advanced"].replace(spec.SECRET_PLACEHOLDER, "typed-again")
    data["environment-envs-0-value"] = "wandb-typed-again"
    answer = web.post(URL, data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    new = Job.objects.order_by("-pk").first()
    assert secretbox.unseal(new.sealed_secrets) == {"RayRedisPassword": "typed-again",
                                                    "env:WANDB_API_KEY": "wandb-typed-again"}
    assert "typed-again" not in str(new.body) and new.body["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER}
    assert new.body["JobSpecs"] == source.body["JobSpecs"]


def test_unticking_secret_on_a_copied_secret_variable_does_not_send_it_empty(web, sources):
    # The source's value was never copied: an unticked row left empty would silently run with WANDB_API_KEY="".
    source = sources["spot"]
    data = page_form_data(clone_page(web, source))
    data["resources-advanced"] = data["resources-advanced"].replace(spec.SECRET_PLACEHOLDER, "typed-again")
    del data["environment-envs-0-secret"]
    refused = web.post(URL, data)
    assert refused.status_code == 200 and "Type the value of WANDB_API_KEY again" in refused.content.decode()
    assert Job.objects.count() == len(sources)
    data["environment-envs-0-value"] = "now-plain"  # typed, unticked: sealed all the same (named like a secret)
    assert web.post(URL, data).status_code == 302
    new = Job.objects.order_by("-pk").first()
    assert new.body["Envs"] == {"WANDB_API_KEY": spec.SECRET_PLACEHOLDER}
    assert secretbox.unseal(new.sealed_secrets)["env:WANDB_API_KEY"] == "now-plain"


def test_a_secret_variable_typed_on_a_page_that_comes_back_is_never_echoed_and_asked_again(web, sources):
    data = page_form_data(clone_page(web, sources["spot"]))
    data["environment-envs-0-value"] = "wandb-typed-once"
    data["basic-name"] = ""  # an error elsewhere: the page comes back
    html = web.post(URL, data).content.decode()
    assert "wandb-typed-once" not in html
    assert "Value of WANDB_API_KEY" in html  # the "Type again" list links to the field
    back = page_form_data(html)
    assert back["environment-envs-0-secret"] == "on" and back.get("environment-envs-0-value", "") == ""


def test_copy_names_are_unique_and_fit_the_name_limit():
    assert clone.copy_name("train", []) == "train-copy"
    assert clone.copy_name("train", ["train-copy"]) == "train-copy-2"
    assert clone.copy_name("train-copy", ["train-copy", "train-copy-2"]) == "train-copy-3"
    long = "n" * 256
    name = clone.copy_name(long, [long[:251] + "-copy"])
    assert len(name) == 256 and name.endswith("-copy-2")


def test_an_imported_job_clones_too_and_what_cannot_be_copied_is_listed(web, ws):
    imported = Job.objects.create(
        workspace=ws, display_name="from-console", job_type="PyTorchJob", imported=True, hints={},
        status="Succeeded", dlc_job_id="dlc-imported-1",
        body={"DisplayName": "from-console", "JobType": "PyTorchJob", "UserCommand": "echo hi",
              "Accessibility": "PUBLIC",
              "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1,
                            "EcsSpec": "ecs.g6.large", "ImageConfig": {"Username": "u", "Password": "leaked"}}],
              "Settings": {"Tags": {"team": "x", dlc.IDEMPOTENCY_TAG_KEY: "someone-elses"}}},
    )
    html = clone_page(web, imported)
    page = page_form_data(html)
    assert "leaked" not in html and "someone-elses" not in html
    assert page["basic-name"] == "from-console-copy" and page["environment-image_type"] == "address"
    assert page["environment-registry_username"] == "u" and page["resources-roles-0-instance_type"] == "ecs.g6.large"
    assert re.search(r'Not copied.*?<li class="mono">Accessibility</li>', html, re.S)
    page["environment-registry_password"] = "fresh"
    assert web.post(URL, page).status_code == 302
    new = Job.objects.order_by("-pk").first()
    assert new.cloned_from == imported and new.body["Settings"]["Tags"] == {"team": "x"}


def test_advanced_settings_named_like_secrets_are_not_copied_and_are_asked_for_again(web, ws):
    """A job imported from DLC may carry e.g. WandbApiKey or HfToken in AdvancedSettings. Nothing seals them, so
    the clone drops their values (never on the page, in the diff or in the new job) and says to type them again;
    the source job keeps them (what DLC was sent is not changed)."""
    body = {"DisplayName": "imported-adv", "JobType": "PyTorchJob", "UserCommand": "echo hi",
            "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1,
                          "EcsSpec": "ecs.g6.large"}],
            "Settings": {"AdvancedSettings": {"WandbApiKey": ADVANCED_SECRET, "HfToken": "hf-" + ADVANCED_SECRET,
                                              "ReleaseResourcePolicy": "pod-exit"}}}
    imported = Job.objects.create(workspace=ws, display_name="imported-adv", job_type="PyTorchJob", imported=True,
                                  hints={}, status="Succeeded", dlc_job_id="dlc-imported-adv", body=body)
    html = clone_page(web, imported)
    assert ADVANCED_SECRET not in html
    note = re.search(r'<div class="note warn" id="reprompt-advanced">(.*?)</div>', html, re.S).group(1)
    assert note.startswith("Type HfToken and WandbApiKey (advanced framework configuration) again"), note
    data = page_form_data(html)
    assert advanced(data) == {"ReleaseResourcePolicy": "pod-exit"}

    data["resources-advanced"] = "ReleaseResourcePolicy=pod-exit,EnableResourcePreCheck=true"
    preview = web.post(reverse("wizard_preview"), data, HTTP_HX_REQUEST="true").content.decode()
    assert ADVANCED_SECRET not in preview and "Advanced" in preview
    answer = web.post(URL, data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    new = Job.objects.order_by("-pk").first()
    assert new.cloned_from == imported and ADVANCED_SECRET not in str(new.body)
    imported.refresh_from_db()
    assert imported.body == body

    # The API's clone asks for RayRedisPassword only when the source had one, not for a dropped WandbApiKey.
    from jobs.api_jobs import clone_body

    cloned, reprompts = clone_body(imported)
    assert reprompts == [] and ADVANCED_SECRET not in str(cloned)


def test_clone_needs_view_on_the_source_and_create_in_its_workspace(client, ws, sources):
    source = sources["price"]
    viewer = get_user_model().objects.create_user("viewer")
    Membership.objects.create(user=viewer, workspace=ws, role=Membership.VIEWER)
    client.force_login(viewer)
    assert client.get(f"{URL}?clone={source.pk}").status_code == 403
    stranger = get_user_model().objects.create_user("stranger")
    client.force_login(stranger)
    assert client.get(f"{URL}?clone={source.pk}").status_code == 404
    assert client.post(URL, {**form_data(), "_clone": str(source.pk)}).status_code == 404
    assert client.get(f"{URL}?clone=not-a-number").status_code == 404


def test_edit_and_resubmit_reopens_a_failed_job_with_every_value_and_creates_a_new_job(web, sources):
    failed = sources["quota"]
    Job.objects.filter(pk=failed.pk).update(status=st.SUBMIT_FAILED,
                                            submit_error={"Code": "InvalidParameter", "Message": "bad <PodCount>"})
    html = web.get(f"{URL}?edit={failed.pk}").content.decode()
    refusal = re.search(r'<div class="card note warn" id="refusal".*?</div>', html, re.S).group(0)
    assert "Why DLC refused it" in refusal and "InvalidParameter" in refusal and "bad &lt;PodCount&gt;" in refusal
    data = page_form_data(html)
    assert data["basic-name"] == "full-quota", "a resubmission keeps its name"
    assert "customPortList=10000;10001-10010" in data["resources-advanced"], "the failed job never held ports"
    assert REGISTRY_SECRET not in html and data.get("environment-registry_password", "") == ""
    source = glue.sections_to_data(spec.inverse(failed.body, failed.hints))
    # Every value is back; only the CSRF token, the (empty) password, the sanity check parameters (not
    # offered on general computing, and empty), the (empty) sweep, early-stopping and run-after boxes differ from
    # the stored job's.
    skip = {"csrfmiddlewaretoken", "environment-registry_password", "fault_tolerance-sanity_args", "sweep",
            "sweep_trials", "sweep_seed", "sweep_stop_metric", "sweep_stop_goal", "sweep_stop_after",
            "sweep_stop_step", "run_after", "run_after_when"}
    assert {k: v for k, v in data.items() if not k.startswith("_") and k not in skip} == {
        k: v for k, v in source.items() if not k.startswith("_") and k not in skip}
    data["environment-registry_password"] = "again"
    assert web.post(URL, data).status_code == 302
    new = Job.objects.order_by("-pk").first()
    assert new.pk != failed.pk and new.cloned_from == failed and new.status == st.SUBMITTING
    assert new.body == failed.body
    running = sources["price"]
    answer = web.get(f"{URL}?edit={running.pk}")
    assert answer.status_code == 302 and answer["Location"].endswith(f"?clone={running.pk}")


def test_edit_of_a_failed_job_whose_secret_env_is_still_sealed_keeps_it_without_showing_it(web, sources):
    # Today a failed submit clears its sealed secrets; a row that still holds them (a submit that failed before
    # clearing, or a future retry policy) lends them to its edit, never to a clone.
    failed = sources["spot"]
    assert failed.sealed_secrets
    Job.objects.filter(pk=failed.pk).update(status=st.SUBMIT_FAILED)
    html = web.get(f"{URL}?edit={failed.pk}").content.decode()
    assert WANDB_SECRET not in html and 'id="kept-secrets"' in html and "Value of WANDB_API_KEY" in html
    data = page_form_data(html)
    assert data.get("environment-envs-0-value", "") == ""
    data["resources-advanced"] = data["resources-advanced"].replace(spec.SECRET_PLACEHOLDER, "typed-again")
    answer = web.post(URL, data)
    assert answer.status_code == 302, answer.content.decode()[:2000]
    new = Job.objects.order_by("-pk").first()
    assert secretbox.unseal(new.sealed_secrets)["env:WANDB_API_KEY"] == WANDB_SECRET
    # A clone of the same job asks for it.
    clone_html = clone_page(web, failed)
    assert 'id="kept-secrets"' not in clone_html and "Value of WANDB_API_KEY" in clone_html


def test_only_the_owner_of_a_failed_job_gets_its_sealed_secret_env_in_an_edit(web, sources, ws):
    # Another member may edit and resubmit the job, but with a command of their own and someone else's key the
    # pod's log would show it: they must type the value.
    failed = sources["spot"]
    other = get_user_model().objects.create_user("key-owner")
    Membership.objects.create(user=other, workspace=ws, role=Membership.MEMBER)
    Job.objects.filter(pk=failed.pk).update(status=st.SUBMIT_FAILED, owner=other)
    html = web.get(f"{URL}?edit={failed.pk}").content.decode()
    assert 'id="kept-secrets"' not in html and "Value of WANDB_API_KEY" in html
    data = page_form_data(html)
    data["resources-advanced"] = data["resources-advanced"].replace(spec.SECRET_PLACEHOLDER, "typed-again")
    data["environment-command"] = "echo $WANDB_API_KEY"
    refused = web.post(URL, data)
    assert refused.status_code == 200 and "Type the value of WANDB_API_KEY again" in refused.content.decode()
    assert not Job.objects.filter(cloned_from=failed).exists()
