"""jobs.sweeps without a request: the sweep text's rules, trial names and order, and each trial's body checked
with the workspace's rules (the first refused trial is the error)."""

from __future__ import annotations

import pytest

from jobs import catalog as C
from jobs import spec, sweeps
from jobs.forms import wizard as glue
from tests.support.wizard import form_data


def parse(text: str, **kwargs):
    return sweeps.parse(text, limit=50, **kwargs)


def only_error(text: str, **kwargs) -> str:
    grid, errors = parse(text, **kwargs)
    assert grid is None and len(errors) == 1, errors
    return errors[0]


def test_empty_text_is_no_sweep():
    assert parse("") == (None, [])
    assert parse("  \n\n# a comment only\n") == (None, [])


def test_parse_trims_and_keeps_the_order_typed():
    grid, errors = parse("  LR =0.001 , 0.01,0.1 \n\n# batch\nBS= 32,64")
    assert errors == []
    assert grid.parameters == (("LR", ("0.001", "0.01", "0.1")), ("BS", ("32", "64")))
    assert grid.size == 6 and grid.names == ["LR", "BS"]
    assert sweeps.Grid.from_json(grid.as_json()) == grid
    assert grid.as_text() == "LR = 0.001, 0.01, 0.1\nBS = 32, 64"


def test_trials_are_in_product_order_last_parameter_fastest():
    grid, _ = parse("LR = a, b\nBS = 1, 2, 3")
    assert grid.trials() == [
        {"LR": "a", "BS": "1"}, {"LR": "a", "BS": "2"}, {"LR": "a", "BS": "3"},
        {"LR": "b", "BS": "1"}, {"LR": "b", "BS": "2"}, {"LR": "b", "BS": "3"},
    ]


@pytest.mark.parametrize(("text", "expected"), [
    ("LR 0.1, 0.2", "no '='"),
    ("= 0.1, 0.2", "name is missing"),
    ("1LR = 0.1, 0.2", "not an environment variable name"),
    ("LR-X = 0.1, 0.2", "not an environment variable name"),
    ("LR =", "at least one value"),
    ("LR =   ", "at least one value"),
    ("LR = 0.1,,0.2", "empty value"),
    ("LR = 0.1, 0.2,", "empty value"),
    ("LR = 0.1, 0.2, 0.1", "0.1 more than once"),
    ("LR = 0.1, 0.2\nLR = 0.3", "LR is named twice"),
    ("WANDB_API_KEY = a, b", "looks like the name of a secret"),
    ("DB_PASSWORD = a, b", "looks like the name of a secret"),
])
def test_each_rule_of_a_line_is_an_error_naming_the_line(text, expected):
    error = only_error(text)
    assert expected in error and error.startswith("Line ")


def test_the_env_name_rule_is_the_specs():
    # The same names the spec's environment-variable rule refuses (jobs.spec.rules).
    for name in ("1A", "A-B", "A B", "é"):
        errors = spec.validate_sections({**spec.defaults(), "environment": {
            **spec.defaults()["environment"], "envs": [{"key": name, "value": "v", "secret": False}]}})
        assert "environment.envs[0].key" in errors
        assert "not an environment variable name" in sweeps.name_problem(name)
    assert sweeps.name_problem("_lr2") is None


def test_a_name_already_among_the_jobs_variables_is_an_error_naming_it():
    error = only_error("MODE = a, b", env_names={"MODE": "offline", "X": "1"})
    assert "MODE is already one of the job's environment variables" in error


def test_trial_count_between_two_and_the_limit_and_the_count_is_said():
    assert "at least 2 trials" in only_error("LR = 0.1") and "make 1" in only_error("LR = 0.1")
    grid, errors = sweeps.parse("A = 1, 2, 3, 4, 5\nB = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10", limit=50)
    assert errors == [] and grid.size == 50
    _grid, errors = sweeps.parse("A = 1, 2, 3, 4, 5\nB = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11", limit=50)
    assert errors == ["These values make 55 trials; a sweep may have at most 50."]
    _grid, errors = sweeps.parse("A = 1, 2\nB = 1, 2", limit=3)
    assert "make 4 trials" in errors[0] and "at most 3" in errors[0]


def test_the_limit_comes_from_settings(settings):
    settings.DLC_SWEEP_MAX_TRIALS = 3
    assert sweeps.max_trials() == 3
    assert "at most 3" in sweeps.parse("A = 1, 2\nB = 1, 2")[1][0]


def test_at_most_eight_parameters():
    nine = "\n".join(f"P{i} = 1" for i in range(9))
    assert any("at most 8 parameters; this one has 9" in e for e in parse(nine)[1])
    eight = "\n".join(f"P{i} = 1" for i in range(7)) + "\nP7 = 1, 2"
    assert parse(eight)[1] == []


def test_a_huge_text_is_refused_before_it_is_parsed():
    assert "too long" in only_error("A = " + ", ".join(str(i) for i in range(5000)))


def test_every_problem_is_reported_at_once():
    _grid, errors = parse("1X = a, b\nY = \nZ = a, a")
    assert [e.split(":")[0] for e in errors] == ["Line 1", "Line 2", "Line 3"]


@pytest.mark.parametrize(("base", "number", "total", "expected"), [
    ("lr-grid", 1, 8, "lr-grid-01"),
    ("lr-grid", 12, 50, "lr-grid-12"),
    ("lr-grid", 7, 120, "lr-grid-007"),
    ("", 1, 2, "sweep-01"),
])
def test_trial_names(base, number, total, expected):
    assert sweeps.trial_name(base, number, total) == expected


def test_a_long_name_is_cut_to_stay_within_the_specs_length():
    name = sweeps.trial_name("x" * C.MAX_NAME_LENGTH, 3, 8)
    assert len(name) == C.MAX_NAME_LENGTH and name.endswith("x-03")
    body = {"DisplayName": name}
    assert spec.validate_sections({**spec.defaults(), "basic": {**spec.defaults()["basic"], "name": name}}) \
        .get("basic.name") is None, body


def wizard_body(**changes) -> tuple[dict, glue.Wizard]:
    wizard = glue.Wizard(form_data(**changes))
    assert wizard.errors() == {}, wizard.errors()
    return wizard.body("ws-1"), wizard


def test_trial_bodies_add_the_parameters_to_the_jobs_variables_and_name_each_trial():
    body, _ = wizard_body(basic__name="lr-grid", environment__envs__0__key="MODE", environment__envs__0__value="x")
    grid, _ = parse("LR = 0.1, 0.2\nBS = 32, 64")
    found = sweeps.trials(body, grid)
    assert [t.number for t in found] == [1, 2, 3, 4]
    assert [t.body["DisplayName"] for t in found] == ["lr-grid-01", "lr-grid-02", "lr-grid-03", "lr-grid-04"]
    assert found[2].body["Envs"] == {"MODE": "x", "LR": "0.2", "BS": "32"}
    assert found[2].values == {"LR": "0.2", "BS": "32"}
    assert body["Envs"] == {"MODE": "x"} and body["DisplayName"] == "lr-grid"  # the job's own body untouched
    assert sweeps.describe(found[2].values) == "LR=0.2, BS=32"


def test_check_passes_a_valid_grid_and_each_trial_passes_spec_validate():
    body, wizard = wizard_body(basic__name="ok")
    grid, found, errors = sweeps.check("LR = 1, 2", body, context=wizard.context, hints=wizard.hints())
    assert errors == [] and grid.size == 2 and len(found) == 2
    for trial in found:
        assert spec.validate({k: v for k, v in trial.body.items() if k != "WorkspaceId"}, wizard.context) == {}


def test_the_first_refused_trial_is_the_error_env_var_count_limit():
    envs = {f"environment__envs__{i}__key": f"V{i}" for i in range(C.MAX_ENVS - 1)}
    envs.update({f"environment__envs__{i}__value": "1" for i in range(C.MAX_ENVS - 1)})
    body, wizard = wizard_body(**envs)
    _grid, found, errors = sweeps.check("A = 1, 2", body, context=wizard.context, hints=wizard.hints())
    assert found and errors == []  # 19 + 1 = 20 variables: allowed
    grid, found, errors = sweeps.check("A = 1, 2\nB = x, y", body, context=wizard.context, hints=wizard.hints())
    assert grid is None and found == []
    assert errors == [f"Trial 1 (A=1, B=x) would be refused: Envs: At most {C.MAX_ENVS} environment variables "
                      "are allowed."]


def test_the_first_failing_trial_is_named_not_the_first_trial():
    body, wizard = wizard_body()
    found = sweeps.trials(body, sweeps.parse("A = 1, 2")[0])
    found[1].body["DisplayName"] = "bad name!"
    problem = sweeps.first_trial_error(found, wizard.context, wizard.hints())
    assert problem.startswith("Trial 2 (A=2) would be refused: DisplayName:"), problem


def test_a_template_lock_on_the_variables_refuses_a_sweep():
    body, wizard = wizard_body()
    _grid, found, errors = sweeps.check("A = 1, 2", body, context=wizard.context, locked={"environment.envs"})
    assert found == [] and "locks the environment variables" in errors[0]


def test_stop_summary_counts_each_outcome():
    from jobs.jobpage import stop_outcome

    outcomes = [stop_outcome("stopping", None, 1), stop_outcome("stopping", None, 2),
                stop_outcome("not-permitted", None, 3)]
    assert sweeps.stop_summary(outcomes) == "2 × Stop requested, 1 × Not permitted"
