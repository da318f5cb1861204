"""The environment section's variable rows (jobs.forms.environment): the Secret tick and the id of a secret's value
field, which static/js/wizard.js computes too (tests/test_browser_wizard_secrets.py drives both in Chromium)."""

from __future__ import annotations

from jobs.forms.environment import EnvForm, secret_value_name


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
