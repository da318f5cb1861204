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
    # QA: PATH = 1, 2 left every trial without `sh`; RANK overrode the rank DLC gives each pod.
    ("PATH = 1, 2", "PATH is a reserved variable (needed by the pod's shell, Python or GPUs)"),
    ("CUDA_VISIBLE_DEVICES = 0, 1", "CUDA_VISIBLE_DEVICES is a reserved variable (needed by the pod's shell"),
    ("NVIDIA_VISIBLE_DEVICES = 0, 1", "NVIDIA_VISIBLE_DEVICES is a reserved variable (needed by the pod's shell"),
    ("LD_PRELOAD = a, b", "LD_PRELOAD is a reserved variable"),
    ("RANK = 0, 1", "RANK is a reserved variable (set by DLC in every pod)"),
    ("LOCAL_RANK = 0, 1", "LOCAL_RANK is a reserved variable"),
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


def test_every_reserved_name_of_the_spec_is_refused_and_a_lowercase_one_is_not():
    # One list (jobs.spec.RESERVED_ENVS): the sweep box, the API and the job's own variables read the same one.
    for name in spec.RESERVED_ENVS:
        assert "reserved variable" in sweeps.name_problem(name)
    assert sweeps.name_problem("path") is None and sweeps.name_problem("RANKING") is None


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


# --- random search ---------------------------------------------------------------------------------------------

RANDOM_TEXT = "LR = loguniform(1e-5, 1e-1)\nDROPOUT = uniform(0.0, 0.5)\nLAYERS = int(2, 8)\nBS = 32, 64"


def random_search(text: str = RANDOM_TEXT, trials="20", seed="1234", **kwargs):
    found, errors = sweeps.parse_form(text, trials, seed, limit=50, **kwargs)
    assert errors == {}, errors
    return found


def test_each_distribution_and_a_list_parse_to_their_specs_as_typed():
    found = random_search()
    assert isinstance(found, sweeps.RandomSearch) and found.method == "random"
    assert (found.count, found.seed, found.size) == (20, 1234, 20)
    assert found.parameters == (
        sweeps.Param("LR", distribution="loguniform", low="1e-5", high="1e-1"),
        sweeps.Param("DROPOUT", distribution="uniform", low="0.0", high="0.5"),
        sweeps.Param("LAYERS", distribution="int", low="2", high="8"),
        sweeps.Param("BS", values=("32", "64")))
    assert found.as_text() == RANDOM_TEXT
    assert sweeps.parse_form("A = int( -3 ,3 )", "2", "1", limit=50)[0].parameters[0].text == "int(-3, 3)"


def test_lists_only_stay_a_grid_and_ignore_trials_and_seed():
    found, errors = sweeps.parse_form("LR = 0.1, 0.2", "not a number", "-5", limit=50)
    assert errors == {} and isinstance(found, sweeps.Grid) and found.size == 2
    assert found.fields() == {"method": "grid", "parameters": [["LR", ["0.1", "0.2"]]],
                              "specs": [["LR", "0.1, 0.2"]], "trials_asked": None, "seed": None}


def sample_of(param_text: str, seed: int = 7, trials: int = 50) -> list[str]:
    found = random_search(f"X = {param_text}\nPAD = uniform(0, 1)", trials=str(trials), seed=str(seed))
    return [t["X"] for t in found.trials()]


def test_sampling_is_deterministic_with_a_seed_and_changes_with_it():
    first = random_search().trials()
    assert first == random_search().trials() and len(first) == 20
    assert first != random_search(seed="1235").trials()
    # The stdlib's generator, not a fake: trial 1 is random.Random(seed)'s first draws, one per parameter in order.
    import math
    import random
    rng = random.Random(1234)
    lr = math.exp(rng.uniform(math.log(1e-5), math.log(1e-1)))
    dropout = rng.uniform(0.0, 0.5)
    assert first[0] == {"LR": f"{lr:.4g}", "DROPOUT": f"{dropout:.4g}", "LAYERS": str(rng.randint(2, 8)),
                        "BS": rng.choice(("32", "64"))}


def test_each_distribution_stays_within_its_bounds_and_int_includes_both_ends():
    ints = {int(v) for v in sample_of("int(2, 4)", trials=50)}
    assert ints == {2, 3, 4}
    floats = [float(v) for v in sample_of("uniform(-0.5, 0.5)")]
    assert all(-0.5 <= v <= 0.5 for v in floats) and len(set(floats)) > 40
    logs = [float(v) for v in sample_of("loguniform(1e-6, 1)")]
    assert all(1e-6 <= v <= 1 for v in logs)
    # Log-uniform: about as many below 1e-3 as above (uniform would put ~0.1% below).
    assert 10 < sum(v < 1e-3 for v in logs) < 40
    assert set(sample_of("a, b, c")) == {"a", "b", "c"}


def test_floats_have_four_significant_digits_ints_are_ints():
    assert sweeps.fmt(0.000316227766) == "0.0003162" and sweeps.fmt(1.5e-05) == "1.5e-05"
    assert sweeps.fmt(0.123456) == "0.1235" and sweeps.fmt(12345.6) == "1.235e+04"
    for value in sample_of("uniform(0.0001, 1000)"):
        assert value == f"{float(value):.4g}" and len(value.replace(".", "").split("e")[0].lstrip("0")) <= 4
    assert all(v.lstrip("-").isdigit() for v in sample_of("int(-5, 5)"))


def test_trials_are_distinct_when_the_space_allows():
    # 3 x 2 = 6 combinations, 6 trials: all distinct (without resampling, 6 draws repeat one almost surely).
    found = random_search("A = int(1, 3)\nB = x, y", trials="6", seed="3")
    combos = [tuple(t.values()) for t in found.trials()]
    assert len(set(combos)) == 6 and found.space == 6


def test_a_repeat_is_allowed_after_the_resample_tries():
    # With RESAMPLE_TRIES (100) draws a 2-value space repeats with odds 2**-100: ask for one draw to see the repeat.
    def repeats(tries: int) -> int:
        found = 0
        for seed in range(20):
            a = [t["A"] for t in random_search("A = int(1, 2)\nB = x", trials="2", seed=str(seed)).trials(tries)]
            found += a[0] == a[1]
        return found

    assert repeats(1) > 0
    assert repeats(sweeps.RESAMPLE_TRIES) == 0


def test_a_list_whose_values_have_parentheses_stays_a_list():
    grid, errors = parse("ACT = relu(x), gelu(x)")
    assert errors == [] and grid.parameters == (("ACT", ("relu(x)", "gelu(x)")),)


def test_a_space_smaller_than_the_trials_is_refused_naming_its_size():
    found, errors = sweeps.parse_form("A = int(1, 3)\nB = x, y", "7", "1", limit=50)
    assert found is None
    assert errors == {sweeps.TRIALS_FIELD: ["These parameters have only 6 combinations, fewer than the 7 trials "
                                            "asked: ask at most 6, or widen the parameters."]}
    # A continuous distribution has countless combinations.
    assert random_search("A = uniform(0, 1)\nB = x", trials="50").space is None


def field_error(text: str, trials="5", seed="1", field=sweeps.FIELD) -> str:
    found, errors = sweeps.parse_form(text, trials, seed, limit=50)
    assert found is None and len(errors.get(field, [])) == 1, errors
    return errors[field][0]


@pytest.mark.parametrize(("text", "expected"), [
    ("LR = normal(0, 1)", "LR = normal(...): unknown distribution; use uniform(low, high), loguniform(low, high) "
                          "or int(low, high)"),
    ("LR = uniform(0)", "LR = uniform(...) takes two bounds"),
    ("LR = uniform(0, 1, 2)", "LR = uniform(...) takes two bounds"),
    ("LR = uniform(a, 1)", "LR = uniform(...): the bounds must be numbers, not 'a'"),
    ("LR = uniform(0, nan)", "the bounds must be numbers, not 'nan'"),
    ("LR = loguniform(1e-5, inf)", "the bounds must be numbers, not 'inf'"),
    ("LR = uniform(0.5, 0.5)", "LR = uniform(0.5, 0.5): low must be below high."),
    ("LR = uniform(1, 0)", "low must be below high"),
    ("LR = int(8, 2)", "LR = int(8, 2): low must be below high."),
    # Its width overflows: every sample was the high bound, so all trials ran one value.
    ("LR = uniform(-1e308, 1e308)", "LR = uniform(-1e308, 1e308): the range is too wide to sample"),
    ("LR = loguniform(0, 1)", "LR = loguniform(0, 1): low must be above 0"),
    ("LR = loguniform(-1, 1)", "low must be above 0"),
    ("N = int(2.5, 8)", "N = int(...): the bounds must be whole numbers (both included), not '2.5'"),
    ("N = int(2, 8.0)", "not '8.0'"),
    ("N = int(2, 1e3)", "not '1e3'"),
    # More digits than int() converts (4,300) was a ValueError, so a 500: a field error instead.
    ("N = int(0, " + "9" * 5000 + ")", "N = int(...): the bounds may have at most 18 digits."),
    ("1N = int(2, 8)", "not an environment variable name"),
    ("HF_TOKEN = uniform(0, 1)", "looks like the name of a secret"),
    ("N = int(1, 2)\nN = int(3, 4)", "N is named twice"),
])
def test_each_rule_of_a_distribution_is_an_error_naming_its_line(text, expected):
    error = field_error(text)
    assert expected in error and error.startswith("Line "), error


def test_a_distribution_may_not_redefine_a_job_variable():
    _found, errors = sweeps.parse_form("MODE = uniform(0, 1)", "5", "1", env_names={"MODE": "x"}, limit=50)
    assert "MODE is already one of the job's environment variables" in errors[sweeps.FIELD][0]


@pytest.mark.parametrize(("trials", "expected"), [
    ("", "Give the number of trials of the random search: 2 to 50."),
    (None, "Give the number of trials of the random search: 2 to 50."),
    ("1", "A random search runs 2 to 50 trials, not 1."),
    ("51", "A random search runs 2 to 50 trials, not 51."),
    ("2.5", "The number of trials is a whole number, 2 to 50."),
    ("ten", "The number of trials is a whole number, 2 to 50."),
    (True, "The number of trials is a whole number, 2 to 50."),
])
def test_trials_are_required_for_a_random_search_between_two_and_the_limit(trials, expected):
    assert field_error("LR = uniform(0, 1)", trials=trials, field=sweeps.TRIALS_FIELD) == expected


def test_the_trials_limit_comes_from_settings(settings):
    settings.DLC_SWEEP_MAX_TRIALS = 3
    _found, errors = sweeps.parse_form("LR = uniform(0, 1)", "4", "1")
    assert errors == {sweeps.TRIALS_FIELD: ["A random search runs 2 to 3 trials, not 4."]}


@pytest.mark.parametrize("seed", ["-1", "x", "1.5", str(2**63)])
def test_a_bad_seed_is_an_error_at_the_seed(seed):
    assert "The seed is a whole number from 0" in field_error("LR = uniform(0, 1)", seed=seed,
                                                              field=sweeps.SEED_FIELD)


def test_an_empty_seed_draws_one_that_is_kept():
    seeds = {random_search(seed="").seed for _ in range(5)}
    assert len(seeds) > 1 and all(0 <= s < sweeps.NEW_SEED_BELOW for s in seeds)


def test_all_problems_are_reported_at_once_each_at_its_field():
    _found, errors = sweeps.parse_form("A = int(1.5, 2)\nB = a, a", "0", "x", limit=50)
    assert [e.split(":")[0] for e in errors[sweeps.FIELD]] == ["Line 1", "Line 2"]
    assert set(errors) == {sweeps.FIELD, sweeps.TRIALS_FIELD, sweeps.SEED_FIELD}
    assert "at most 8 parameters" in " ".join(sweeps.parse_form(
        "\n".join(f"P{i} = uniform(0, 1)" for i in range(9)), "5", "1", limit=50)[1][sweeps.FIELD])


def test_a_random_search_row_comes_back_the_same():
    from jobs.models import Sweep

    found = random_search()
    row = Sweep(name="x", **found.fields())
    assert row.names == ["LR", "DROPOUT", "LAYERS", "BS"] and row.is_random
    assert row.spec_lines == [("LR", "loguniform(1e-5, 1e-1)"), ("DROPOUT", "uniform(0.0, 0.5)"),
                              ("LAYERS", "int(2, 8)"), ("BS", "32, 64")]
    assert sweeps.search_of(row) == found and sweeps.search_of(row).trials() == found.trials()


def test_random_trial_bodies_carry_the_sampled_values():
    body, wizard = wizard_body(basic__name="rs")
    found, all_trials, errors = sweeps.check_form("LR = loguniform(1e-5, 1e-1)\nBS = 32, 64", body,
                                                  context=wizard.context, hints=wizard.hints(), trials="3", seed="9")
    assert errors == {} and [t.body["DisplayName"] for t in all_trials] == ["rs-01", "rs-02", "rs-03"]
    assert [t.values for t in all_trials] == found.trials()
    assert all(t.body["Envs"] == t.values for t in all_trials)


def test_a_narrow_range_gets_the_digits_to_keep_its_samples_apart_and_inside():
    # At 4 significant digits uniform(0.999, 0.9999) has ten values and loguniform(0.00010001, 0.00010002)
    # one, "0.0001", below its low bound.
    ema = sample_of("uniform(0.999, 0.9999)")
    assert all(0.999 <= float(v) <= 0.9999 for v in ema) and len(set(ema)) > 40
    narrow = sample_of("loguniform(0.00010001, 0.00010002)")
    assert all(0.00010001 <= float(v) <= 0.00010002 for v in narrow) and len(set(narrow)) > 40
    assert sweeps.digits_for(1e-5, 1e-1) == 4 and sweeps.digits_for(-0.5, 0.5) == 4


# --- ranking: by the best or the last value, ties sharing a place -----------------------------------------------


def _row(number: int, status: str = "Succeeded") -> sweeps.TrialRow:
    return sweeps.TrialRow(number, [], {"pk": 100 + number, "status": status}, "—", "")


def _scalar(last: float, low: float, high: float):
    from jobs.models import JobScalar

    return JobScalar(name="loss", last=last, min=low, max=high, count=3, last_step=30)


def test_trials_rank_by_their_best_value_by_default_and_by_the_last_one_when_asked():
    rows = [_row(1), _row(2)]
    # Trial 1 reached 0.1 and ended at 0.5 (overfitting); trial 2 went no lower than its last 0.3.
    values = {101: {"loss": _scalar(0.5, 0.1, 0.9)}, 102: {"loss": _scalar(0.3, 0.3, 0.8)}}
    board = sweeps.leaderboard(rows, values, "loss")
    assert (board.goal, board.value, [r.number for r in board.rows]) == ("min", "best", [1, 2])
    assert [r.metrics for r in board.rows] == [["0.1"], ["0.3"]], "the ranked column shows what it is ranked by"
    assert board.query == "?rank=loss&goal=min" and board.as_json() == {
        "metric": "loss", "goal": "min", "value": "best", "order": [1, 2]}
    assert [(v, chosen) for v, _q, chosen in board.value_choices()] == [("best", True), ("last", False)]
    last = sweeps.leaderboard(rows, values, "loss", "min", "last")
    assert [r.number for r in last.rows] == [2, 1] and [r.metrics for r in last.rows] == [["0.3"], ["0.5"]]
    assert last.query == "?rank=loss&goal=min&value=last" and last.other_goal == "?rank=loss&goal=max&value=last"
    assert last.choices() == [("loss", "?rank=loss&goal=min&value=last", True)], "the value is kept"
    # max: the best is the highest each reached
    assert [r.number for r in sweeps.leaderboard(rows, values, "loss", "max").rows] == [1, 2]
    assert sweeps.score(values[101]["loss"], "max", "best") == 0.9


def test_ties_share_a_place_in_trial_order_and_every_first_is_best_tied():
    rows = [_row(n) for n in (1, 2, 3, 4, 5)]
    values = {101: {"loss": _scalar(0.4, 0.4, 1)}, 102: {"loss": _scalar(0.2, 0.2, 1)},
              103: {"loss": _scalar(0.3, 0.3, 1)}, 104: {"loss": _scalar(0.2, 0.2, 1)},
              105: {"loss": _scalar(0.3, 0.3, 1)}}
    board = sweeps.leaderboard(rows, values, "loss")
    assert [(r.number, r.rank, r.best, r.tied) for r in board.rows] == [
        (2, 1, True, True), (4, 1, True, True), (3, 3, False, True), (5, 3, False, True), (1, 5, False, False)]
    assert board.tied
    alone = sweeps.leaderboard(rows, values, "loss", "max", "last")
    assert [(r.number, r.rank, r.best, r.tied) for r in alone.rows] == [
        (1, 1, True, False), (3, 2, False, True), (5, 2, False, True), (2, 4, False, True), (4, 4, False, True)]
    assert not alone.tied


def test_a_value_that_cannot_be_used_is_an_error_at_value():
    rows = [_row(1), _row(2)]
    values = {101: {"loss": _scalar(0.5, 0.1, 0.9)}}
    board = sweeps.leaderboard(rows, values, "loss", "min", "mean")
    assert board.error == "Rank loss by each trial's best or last value, not 'mean'." and board.error_field == "value"
    assert board.rank == "" and all(r.rank is None for r in board.rows)
    assert sweeps.leaderboard(rows, values, "acc").error_field == "rank"
    assert sweeps.leaderboard(rows, values, "loss", "up").error_field == "goal"


@pytest.fixture
def team(db):
    from tests import portal_fixtures as pf

    return pf.make_team()


def test_the_page_the_api_and_the_compare_link_rank_alike(team):
    """A tie for the first place: both marked "Best (tied)" on the page, both first in the API's order (which
    says the value used) and in the compare link; ?value=last re-ranks all three alike."""
    from jobs.models import Job, JobScalar, Sweep
    from tests import portal_fixtures as pf
    from tests.support.api import Api

    payload = {"Job": {**pf.BODY, "DisplayName": "tie"}, "Parameters": {"Q": ["a", "b", "c"]}}
    assert Api(team.users["member"]).post(f"/api/v1/sweeps?workspace={team.alpha.pk}", payload).status_code == 201
    sweep = Sweep.objects.get()
    jobs = [t.job for t in sweep.trials.select_related("job").order_by("number")]
    Job.objects.filter(pk__in=[j.pk for j in jobs]).update(status="Succeeded")
    for job, (last, low) in zip(jobs, [(0.5, 0.2), (0.2, 0.2), (0.1, 0.1)], strict=True):
        JobScalar.objects.create(job=job, pod_id="p", name="loss", points=[], last=last, min=low, max=1, count=3,
                                 last_step=30)
    # best: 3 reached 0.1, first alone; 1 and 2 share the second place at 0.2
    html = pf.client_for(team.users["viewer"]).get(f"{sweep.get_absolute_url()}?rank=loss").content.decode()
    assert 'id="best-trial">Best</span> 1' in html and "Best (tied)" not in html
    # QA: only the first place said "tied"; the shared second place showed a bare "2"
    assert html.count('<td class="rank">2 <span class="muted tied">(tied)</span></td>') == 2
    assert 'id="rank-value-best"' in html and f'href="/sweeps/{sweep.pk}?rank=loss&amp;goal=min&amp;value=last"' in html
    got = Api(team.users["viewer"]).get(f"/api/v1/sweeps/{sweep.pk}", rank="loss").json()
    assert got["ranking"] == {"metric": "loss", "goal": "min", "value": "best", "order": [3, 1, 2]}
    assert [(t["number"], t["rank"], t["ranked_value"]) for t in got["trials"]] == [(1, 2, 0.2), (2, 2, 0.2),
                                                                                    (3, 1, 0.1)]
    # last: 3 ended at 0.1, 2 at 0.2, 1 at 0.5; make 2 and 3 tie
    JobScalar.objects.filter(job=jobs[1]).update(last=0.1)
    html = pf.client_for(team.users["viewer"]).get(f"{sweep.get_absolute_url()}?rank=loss&value=last",
                                                   HTTP_HX_REQUEST="true").content.decode()
    assert html.count("Best (tied)</span> 1") == 2 and 'aria-pressed="true" id="rank-value-last"' in html
    link = html.split('id="compare-trials" href="')[1].split('"')[0]
    assert link.replace("&amp;", "&") == f"/jobs/compare?ids={jobs[1].pk}&ids={jobs[2].pk}&ids={jobs[0].pk}"
    got = Api(team.users["viewer"]).get(f"/api/v1/sweeps/{sweep.pk}", rank="loss", value="last").json()
    assert got["ranking"]["order"] == [2, 3, 1] and [t["best"] for t in got["trials"]] == [False, True, True]
    bad = Api(team.users["viewer"]).get(f"/api/v1/sweeps/{sweep.pk}", rank="loss", value="mean")
    assert bad.status_code == 400 and "best or last value" in bad.json()["errors"]["value"][0]
    assert Api(team.users["viewer"]).get(f"/api/v1/sweeps/{sweep.pk}").json()["ranking"] is None
