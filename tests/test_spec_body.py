"""validate(body), the API's check of a CreateJob body (jobs.spec.body_check, wire, paths): what it checks is what is
sent, and each error names the real mistake at the field (or variable, or tag) that holds it. Pure Python.

Each case comes from the audit of the API's create-job checks; its message before the fix is in the comment."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from jobs import spec

PUBLIC = {"DisplayName": "dry-run", "JobType": "PyTorchJob", "UserCommand": "echo hi",
          "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1,
                        "EcsSpec": "ecs.g6.large"}]}
QUOTA = {"DisplayName": "q", "JobType": "PyTorchJob", "UserCommand": "echo hi", "ResourceId": "quota-gen",
         "JobSpecs": [{"Type": "Worker", "Image": "registry.example.com/a:1", "PodCount": 1,
                       "ResourceConfig": {"CPU": "4", "Memory": "8Gi"}}]}
BID = {"SpotStrategy": "SpotWithPriceLimit", "SpotDiscountLimit": 0.5}


def with_role(body: dict, **fields: Any) -> dict:
    body = copy.deepcopy(body)
    body["JobSpecs"][0].update(fields)
    return body


# ---- 1. what is validated is what is sent ---------------------------------------------------------------------


@pytest.mark.parametrize("spot", [{}, {"SpotStrategy": "", "SpotDiscountLimit": None}, {"SpotStrategy": None}])
def test_an_empty_spot_spec_is_a_spot_role_without_a_bid_not_a_public_job(spot):
    # Was valid (checked as a public job) while the body sent kept the SpotSpec, which DLC refused or ran as spot.
    body = with_role(PUBLIC, SpotSpec=spot)
    assert spec.validate(body) == {"JobSpecs[0].SpotSpec": ["Choose a bid method: by discount or by price."]}


def test_an_empty_spot_spec_on_a_quota_job_or_a_second_role_is_refused_not_sent():
    assert spec.validate(with_role(QUOTA, SpotSpec={})) == {
        "JobSpecs[0].SpotSpec": ["A bid is only used with preemptible resources."]}
    two = with_role(PUBLIC, SpotSpec=BID)
    two["JobSpecs"].append({**two["JobSpecs"][0], "Type": "Master", "SpotSpec": {}})
    errors = spec.validate(two)
    assert errors and all(p.startswith("JobSpecs[1].SpotSpec") for p in errors), errors
    assert {m for ms in errors.values() for m in ms} == {
        "Every role must use the same bid, and spot roles need a SpotSpec."}


def test_a_null_spot_spec_means_no_spot_spec():
    assert spec.validate(with_role(PUBLIC, SpotSpec=None)) == {}
    assert spec.sendable(with_role(PUBLIC, SpotSpec=None)) == PUBLIC


def test_the_sendable_body_is_the_checked_one_without_the_empty_values():
    body = {**with_role(PUBLIC, ImageConfig={}, SpotSpec=BID), "Description": "", "DataSources": [],
            "Envs": {"EMPTY": "", "A": "1"}, "Settings": {"Tags": {}, "AdvancedSettings": {}},
            "CodeSource": None, "UserVpc": {}}
    assert spec.validate(body) == {}
    sent = spec.sendable(body)
    assert sent == {**with_role(PUBLIC, SpotSpec=BID), "Envs": {"EMPTY": "", "A": "1"}}
    assert spec.validate(sent) == {} and spec.sendable(sent) == sent
    assert spec.build(spec.inverse(sent)) == sent, "what is sent is what the wizard would build"


# ---- 2. a known constraint's message only for the difference it describes -------------------------------------


def test_a_requirements_txt_path_is_told_to_send_its_folder():
    # Was "Send either ThirdpartyLibs or ThirdpartyLibDir, not both."
    errors = spec.validate({**PUBLIC, "ThirdpartyLibDir": "/mnt/code/requirements.txt"})
    assert errors == {"ThirdpartyLibDir": ['ThirdpartyLibDir is the folder that holds requirements.txt: send '
                                           '"/mnt/code".']}
    assert spec.validate({**PUBLIC, "ThirdpartyLibDir": "/mnt/code"}) == {}


def test_several_requirements_in_one_item_are_told_to_go_one_per_item():
    # Was "Send either ThirdpartyLibs or ThirdpartyLibDir, not both." at [0] and [1].
    errors = spec.validate({**PUBLIC, "ThirdpartyLibs": ["torch>=2", "numpy pandas==2.2"]})
    assert errors == {"ThirdpartyLibs[1]": ['One requirement per list item: send "numpy", "pandas==2.2" as separate '
                                            'items.']}
    assert spec.validate({**PUBLIC, "ThirdpartyLibs": ["torch >= 2.0", "numpy"]}) == {}, "spaces inside one is fine"


def test_both_library_fields_still_get_their_own_message():
    errors = spec.validate({**PUBLIC, "ThirdpartyLibs": ["numpy"], "ThirdpartyLibDir": "/mnt/x"})
    assert any("choose one library mode" in m for m in errors["ThirdpartyLibDir"]), errors


def test_node_names_with_spaces_are_told_the_format():
    # Was "Node-specific scheduling is on for every role or for none."
    body = with_role(QUOTA, AssignNodeSpec={"EnableAssignNode": True, "NodeNames": "n1, n2"})
    assert spec.validate(body) == {"JobSpecs[0].AssignNodeSpec.NodeNames": [
        'NodeNames is one text of node names separated by commas, without spaces: send "n1,n2".']}
    ok = with_role(QUOTA, AssignNodeSpec={"EnableAssignNode": True, "NodeNames": "n1,n2"})
    assert spec.validate(ok) == {}


def test_node_scheduling_on_one_role_only_still_says_every_role_or_none():
    body = with_role(QUOTA, AssignNodeSpec={"EnableAssignNode": True, "NodeNames": "n1"})
    body["JobSpecs"].append({**copy.deepcopy(QUOTA["JobSpecs"][0]), "Type": "Master",
                             "AssignNodeSpec": {"EnableAssignNode": False, "NodeNames": "n2"}})
    errors = spec.validate(body)
    assert "Node-specific scheduling is on for every role or for none." in errors[
        "JobSpecs[1].AssignNodeSpec.EnableAssignNode"], errors


@pytest.mark.parametrize("access", ["ro", "X", "read-only"])
def test_a_mount_access_the_wizard_never_sends_names_the_allowed_values(access):
    # "ro" was "A data source has either DataSourceId (dataset) or Uri (storage)…"
    body = {**PUBLIC, "DataSources": [{"DataSourceId": "d-1", "MountAccess": access, "MountPath": "/mnt/d"}]}
    assert spec.validate(body) == {"DataSources[0].MountAccess": [
        "MountAccess is 'RO' (read-only) or 'RW' (read-write), or left out for the dataset's default."]}


def test_data_sources_in_the_wrong_order_still_say_datasets_come_first():
    body = {**PUBLIC, "DataSources": [{"Uri": "oss://bucket/x", "MountPath": "/mnt/s"},
                                      {"DataSourceId": "d-1", "MountPath": "/mnt/d"}]}
    errors = spec.validate(body)
    assert errors and all(m == ["A data source has either DataSourceId (dataset) or Uri (storage); datasets come "
                                "before storage mounts."] for m in errors.values()), errors


def test_a_trimmed_mount_path_says_trimmed_not_data_source_kinds():
    body = {**PUBLIC, "DataSources": [{"DataSourceId": "d-1", "MountPath": "/mnt/d "}]}
    assert spec.validate(body) == {"DataSources[0].MountPath": [
        'Ends with a space, which the console\'s form trims: send "/mnt/d".']}


def test_a_second_roles_image_still_must_match_but_a_first_roles_trim_says_trim():
    two = copy.deepcopy(PUBLIC)
    two["JobSpecs"].append({**two["JobSpecs"][0], "Type": "Master", "Image": "other:1"})
    assert spec.validate(two)["JobSpecs[1].Image"] == ["Every role must use the same image."]
    errors = spec.validate(with_role(PUBLIC, Image="registry.example.com/a:1 "))
    assert errors == {"JobSpecs[0].Image": ['Ends with a space, which the console\'s form trims: send '
                                            '"registry.example.com/a:1".']}


# ---- 3. errors name the variable or tag ------------------------------------------------------------------------


def test_a_bad_variable_name_is_reported_at_that_variable():
    # Was one error at "Envs", naming none of them.
    errors = spec.validate({**PUBLIC, "Envs": {"GOOD": "1", "9BAD": "2", "X": "3", "KÉ": "4"}})
    said = ["Variable names may contain only ASCII letters (a-z, A-Z), digits and '_', not starting with a digit."]
    assert errors == {"Envs.9BAD": said, "Envs.KÉ": said}, "an accented letter is no ASCII letter, as it says"


def test_a_bad_tag_is_reported_at_that_tag():
    errors = spec.validate({**PUBLIC, "Settings": {"Tags": {"good": "1", "bad key": "2", "k3": "http://x"}}})
    assert set(errors) == {"Settings.Tags.bad key", "Settings.Tags.k3"}, errors
    assert "only ASCII letters" in errors["Settings.Tags.bad key"][0]


@pytest.mark.parametrize("where", ["Envs", "Tags"])
def test_a_name_with_spaces_around_it_is_told_to_send_it_trimmed(where):
    # Was "This console cannot reproduce this value here; it would be dropped." plus "Missing: …".
    body = {**PUBLIC, "Envs": {" K ": "1"}} if where == "Envs" else {**PUBLIC, "Settings": {"Tags": {"team ": "cv"}}}
    path = "Envs. K " if where == "Envs" else "Settings.Tags.team "
    errors = spec.validate(body)
    assert list(errors) == [path], errors
    assert "which the console's form trims: send" in errors[path][0] and "name" in errors[path][0]


def test_wire_path_of_a_row_names_its_key_and_falls_back_to_the_map():
    sections = spec.inverse({**PUBLIC, "Envs": {"A": "1", "B": "2"}, "Settings": {"Tags": {"team": "cv"}}})
    assert spec.wire_path("environment.envs[1].key", sections) == "Envs.B"
    assert spec.wire_path("environment.envs[1].value", sections) == "Envs.B"
    assert spec.wire_path("basic.tags[0].value", sections) == "Settings.Tags.team"
    assert spec.wire_path("environment.envs[5].key", sections) == "Envs"
    assert spec.wire_path("environment.envs", sections) == "Envs"
    assert spec.field_for_path("Envs.B", sections) == "environment.envs"


# ---- 4. confusing messages -------------------------------------------------------------------------------------


def test_a_ray_runtime_env_that_is_no_object_says_so():
    # Was "RayRuntimeEnv must not be empty."
    ray = copy.deepcopy(PUBLIC)
    ray["JobType"] = "RayJob"
    ray["JobSpecs"] = [{**ray["JobSpecs"][0], "Type": "Head"}, {**ray["JobSpecs"][0], "Type": "Worker"}]
    assert spec.validate({**ray, "Settings": {"AdvancedSettings": {"RayRuntimeEnv": {"pip": ["numpy"]}}}}) == {}
    errors = spec.validate({**ray, "Settings": {"AdvancedSettings": {"RayRuntimeEnv": 5}}})
    assert errors == {"Settings.AdvancedSettings": [
        'RayRuntimeEnv must be an object such as {"pip": ["numpy"]} (or its JSON text).']}


def test_an_unknown_oversold_type_names_the_value_to_send():
    # Was "Must be on or off."
    errors = spec.validate({**QUOTA, "Settings": {"OversoldType": "ForceQuotaOverSold"}})
    assert errors == {"Settings.OversoldType": [
        "OversoldType is 'AcceptQuotaOverSold' (use the quota's idle resources) or left out."]}
    assert spec.validate({**QUOTA, "Settings": {"OversoldType": "AcceptQuotaOverSold"}}) == {}


@pytest.mark.parametrize("strategy", ["Auto", "intelligent", "spread", "centralized"])
def test_an_unknown_scheduling_strategy_names_the_wire_values(strategy):
    # Was "Choose one of: intelligent, centralized, spread." (the wizard's words): sending one of them was refused
    # again ("intelligent": "it would be dropped"; "spread": "it would be sent as \"Spread\"").
    assert spec.validate({**PUBLIC, "SchedulingStrategy": strategy}) == {"SchedulingStrategy": [
        "SchedulingStrategy is 'Binpack' (Centralized) or 'Spread' (Spread), or left out for Intelligent (the "
        "default)."]}
    for sent in ("Binpack", "Spread"):
        assert spec.validate({**PUBLIC, "SchedulingStrategy": sent}) == {}


@pytest.mark.parametrize("route", ["public", "private", "eth9"])
def test_an_unknown_default_route_names_the_wire_values(route):
    # Was "Choose one of: public, private." (the wizard's words), which the API refused again.
    vpc = {"VpcId": "vpc-1", "SecurityGroupId": "sg-1"}
    assert spec.validate({**PUBLIC, "UserVpc": {**vpc, "DefaultRoute": route}}) == {"UserVpc.DefaultRoute": [
        "DefaultRoute is 'eth0' (public gateway) or 'eth1' (private gateway), or left out."]}
    for sent in ("eth0", "eth1"):
        assert spec.validate({**PUBLIC, "UserVpc": {**vpc, "DefaultRoute": sent}}) == {}


def test_credential_inject_off_says_to_leave_credential_config_out():
    errors = spec.validate({**PUBLIC, "CredentialConfig": {"EnableCredentialInject": False}})
    assert errors == {"CredentialConfig.EnableCredentialInject": [
        'For no RAM role leave CredentialConfig out; {"EnableCredentialInject": true} is the PAI default role.']}


def test_a_discount_of_the_wrong_type_is_one_error_not_also_a_missing_bid():
    # Was the type error plus "Choose a bid method" at JobSpecs[0].SpotSpec.
    body = with_role(PUBLIC, SpotSpec={"SpotStrategy": "SpotWithPriceLimit", "SpotDiscountLimit": "0.5"})
    assert spec.validate(body) == {"JobSpecs[0].SpotSpec.SpotDiscountLimit": ["Must be a number."]}


@pytest.mark.parametrize("strategy", ["SpotAsPriceGo", None])
def test_spot_strategy_names_the_one_value(strategy):
    errors = spec.validate(with_role(PUBLIC, SpotSpec={**BID, "SpotStrategy": strategy}))
    assert errors == {"JobSpecs[0].SpotSpec.SpotStrategy": [
        "SpotStrategy must be 'SpotWithPriceLimit'; the bid only takes effect with it."]}


def test_the_wizards_bodies_are_sent_as_built():
    """sendable() only leaves out what build() never puts in: every valid table case's body goes out unchanged."""
    from tests.test_spec import CASES, _apply

    valid = [case for case in CASES if not case.paths]
    assert len(valid) >= 30
    for case in valid:
        body = spec.build(_apply(case), include_secrets=True)
        assert spec.sendable(body) == body, case.id
