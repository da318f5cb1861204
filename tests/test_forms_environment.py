"""The environment section's variable rows (jobs.forms.environment): the Secret tick and the id of a secret's value
field, which static/js/wizard.js computes too (tests/test_browser_wizard_secrets.py drives both in Chromium)."""

from __future__ import annotations

import re

from jobs.forms import wizard as glue
from jobs.forms.environment import DatasetForm, EnvForm, secret_value_name
from tests.support.wizard import form_data


def test_the_secret_value_id_tags_the_name_with_32_bit_fnv_1a_as_wizard_js_does():
    # FNV-1a's published test vectors: wizard.js's nameTag must give the same, or a typed secret is lost on a swap.
    assert secret_value_name("p", "") == "p-value-811c9dc5"
    assert secret_value_name("p", "a") == "p-value-e40c292c"
    assert secret_value_name("environment-envs-3", " foobar ") == "environment-envs-3-value-bf9cf968"


def test_ticking_secret_asks_the_server_nothing_and_a_ticked_row_renders_no_value():
    plain = EnvForm({"e-key": "WANDB_API_KEY", "e-value": "abc"}, prefix="e")
    html = str(plain["secret"])
    assert "hx-post" not in html  # the page switches the value input itself (static/js/wizard.js)
    assert 'value="abc"' in str(plain["value"]) and 'id="id_e-value"' in str(plain["value"])
    ticked = EnvForm({"e-key": "WANDB_API_KEY", "e-value": "abc", "e-secret": "on"}, prefix="e")
    value = str(ticked["value"])
    assert 'type="password"' in value and "abc" not in value and 'hx-preserve="true"' in value
    assert f'id="id_{secret_value_name("e", "WANDB_API_KEY")}"' in value


def access_options(form: DatasetForm) -> list[tuple[str, str, bool]]:
    """The Access select's options: (value, label, selected)."""
    html = str(form["read_only"])
    return [(m[2], m[3], "selected" in m[1])
            for m in re.finditer(r'<option([^>]*value="([a-z]*)"[^>]*)>([^<]*)</option>', html)]


def test_a_public_dataset_offers_only_read_only_access_so_the_browser_selects_it():
    """Audit: picking a public dataset left Access on "Dataset default", which the rules refuse."""
    custom = DatasetForm({"d-kind": "custom", "d-read_only": ""}, prefix="d")
    assert access_options(custom) == [("", "Dataset default", True), ("true", "Read-only (RO)", False),
                                      ("false", "Read-write (RW)", False)]
    public = DatasetForm({"d-kind": "public", "d-read_only": ""}, prefix="d")
    # One option and none marked: a browser selects the only one, so the next post says read-only.
    assert access_options(public) == [("true", "Read-only (RO)", False)]
    read_write = DatasetForm({"d-kind": "public", "d-read_only": "false"}, prefix="d")
    # Read-write chosen before the type changed stays shown by its name (the rule's message goes at it).
    assert access_options(read_write) == [("true", "Read-only (RO)", False), ("false", "Read-write (RW)", True)]


def test_the_dataset_type_re_renders_its_section_and_the_rule_still_refuses_default_access():
    wizard = glue.Wizard(form_data(environment__datasets__0__kind="public", environment__datasets__0__id="d-1",
                                   environment__datasets__0__read_only="", environment__datasets__0__mount_path="/d"))
    row = next(v for v in wizard.views() if v.name == "environment").lists["datasets"].rows[0]
    kind = str(row.f["kind"].bf)
    assert 'hx-post="/jobs/new/section/environment"' in kind and 'hx-target="#sec-environment"' in kind
    assert "hx-post" not in str(row.f["read_only"].bf)
    assert glue.row_dependent("environment-datasets-0-kind") and not glue.row_dependent("environment-datasets-0-id")
    # The server rule is unchanged: a post that still says "Dataset default" (no JavaScript) is refused at Access.
    assert wizard.errors()["environment.datasets[0].read_only"] == ["Public datasets can only be mounted read-only."]
