"""Hyperparameter sweeps (grid or random search): the wizard's "Sweep" text -> a search -> one CreateJob body
per trial. Plain functions, no request: jobs.wizard and the API (jobs.api_sweeps) call them, jobs.sweep_views shows
the result.

The text has one parameter per line, `NAME = v1, v2, v3` (a list of values) or `NAME = uniform(0, 0.5)`,
`loguniform(1e-5, 1e-1)`, `int(2, 8)` (a distribution); blank lines and lines starting with `#` are skipped.
Each trial gets each parameter as an environment variable (the command reads `$NAME`).
- Only lists: a grid, in itertools.product order, so trial 1 takes every parameter's first value and the last
  parameter changes fastest.
- Any distribution: a random search of a given number of trials, each sampling every parameter independently
  (a list: a uniform choice) with random.Random(seed), so the seed (stored) reproduces the sweep.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
import random
import re
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.conf import settings

from jobs import catalog as C
from jobs import spec

FIELD = "sweep"
MAX_PARAMETERS = 8
MIN_TRIALS = 2
MAX_TEXT = 10_000  # characters: 8 lines of 50 values with room to spare
TRIALS_FIELD = "sweep_trials"
SEED_FIELD = "sweep_seed"
GRID, RANDOM = "grid", "random"
DISTRIBUTIONS = ("uniform", "loguniform", "int")
MAX_SEED = 2**63 - 1  # a BigIntegerField
NEW_SEED_BELOW = 10**6  # a seed drawn for the user: short enough to read on the page and type again
RESAMPLE_TRIES = 100  # draws of a trial that repeats an earlier one before the repeat is allowed
# `name(a, b)`, with no parenthesis inside: `relu(x), gelu(x)` stays a list of two values.
_CALL_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)")
_INT_RE = re.compile(r"[+-]?[0-9]+")
MAX_INT_DIGITS = 18  # an int(low, high) bound: within a 64-bit integer
SHOWN_VALUE = 60  # characters of a parameter value an error message repeats
ENVS_LOCK = "environment.envs"  # a template's lock of the environment variables (jobs.portal_wizard.locks)


@dataclass(frozen=True)
class Grid:
    """The parameters in the order typed: [(name, [values])]."""

    parameters: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.parameters]

    @property
    def size(self) -> int:
        return math.prod(len(values) for _, values in self.parameters)

    def trials(self) -> list[dict[str, str]]:
        """Each trial's values {name: value}, in itertools.product order."""
        names = self.names
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(v for _, v in self.parameters))]

    @classmethod
    def from_json(cls, parameters: object) -> Grid:
        """A Sweep row's `parameters` back; anything malformed is left out."""
        out = []
        for item in parameters if isinstance(parameters, list) else []:
            if isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
                out.append((str(item[0]), tuple(str(v) for v in item[1])))
        return cls(tuple(out))

    def as_json(self) -> list[list]:
        return [[name, list(values)] for name, values in self.parameters]

    def as_text(self) -> str:
        return "\n".join(f"{name} = {', '.join(values)}" for name, values in self.parameters)

    method = GRID

    def specs(self) -> list[tuple[str, str]]:
        """(name, spec as typed) of each parameter: the page's and the API's view, one shape for both methods."""
        return [(name, ", ".join(values)) for name, values in self.parameters]

    def fields(self) -> dict[str, Any]:
        """The Sweep row's fields that describe the search."""
        return {"method": GRID, "parameters": self.as_json(), "specs": [list(p) for p in self.specs()],
                "trials_asked": None, "seed": None}


def fmt(x: float, digits: int = 4) -> str:
    """A sampled float as the environment variable's text: 4 significant digits (0.0003162, 1.5e-05)."""
    return f"{x:.{digits}g}"


def digits_for(low: float, high: float) -> int:
    """Significant digits that keep a range's samples apart: 4, more for a range narrow beside its values
    (uniform(0.999, 0.9999) needs 6; at 4 every sample would be one of ten values, or a bound's neighbour)."""
    span, size = high - low, max(abs(low), abs(high))
    if not (span > 0 and math.isfinite(span)) or size == 0:
        return 4
    return min(17, max(4, math.ceil(math.log10(size / span)) + 3))


@dataclass(frozen=True)
class Param:
    """One parameter of a random search: a uniform choice among `values` (the list form), or a `distribution`
    between the bounds `low` and `high`, kept as typed so the text and the page show what the user wrote (int:
    both ends included)."""

    name: str
    values: tuple[str, ...] = ()
    distribution: str = ""
    low: str = ""
    high: str = ""

    @property
    def text(self) -> str:
        return f"{self.distribution}({self.low}, {self.high})" if self.distribution else ", ".join(self.values)

    @property
    def size(self) -> int | None:
        """How many values it can take; None for a continuous distribution."""
        if not self.distribution:
            return len(self.values)
        if self.distribution == "int":
            return int(self.high) - int(self.low) + 1
        return None

    def sample(self, rng: random.Random) -> str:
        if not self.distribution:
            return rng.choice(self.values)
        if self.distribution == "int":
            return str(rng.randint(int(self.low), int(self.high)))
        low, high = float(self.low), float(self.high)
        if self.distribution == "loguniform":
            value = math.exp(rng.uniform(math.log(low), math.log(high)))
        else:
            value = rng.uniform(low, high)
        text = fmt(value, digits_for(low, high))
        # Rounding may step past a bound typed with more digits: the bound as typed is the nearest value inside.
        return self.low if float(text) < low else self.high if float(text) > high else text


@dataclass(frozen=True)
class RandomSearch:
    """`count` trials, each sampling every parameter independently with random.Random(seed): the same parameters,
    count and seed give the same trials."""

    parameters: tuple[Param, ...]
    count: int
    seed: int
    method = RANDOM

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parameters]

    @property
    def size(self) -> int:
        return self.count

    @property
    def space(self) -> int | None:
        """How many distinct combinations there are; None when a continuous distribution makes them countless."""
        sizes = [p.size for p in self.parameters]
        return None if None in sizes else math.prod(sizes)

    def trials(self, tries: int = RESAMPLE_TRIES) -> list[dict[str, str]]:
        """Each trial's values {name: value}. A combination already drawn is drawn again, up to `tries` draws in
        all, then kept: a space barely larger than `count` may repeat one rather than loop for long."""
        rng = random.Random(self.seed)
        seen: set[tuple[str, ...]] = set()
        out = []
        for _ in range(self.count):
            for _try in range(max(1, tries)):
                combo = tuple(p.sample(rng) for p in self.parameters)
                if combo not in seen:
                    break
            seen.add(combo)
            out.append(dict(zip(self.names, combo, strict=True)))
        return out

    def specs(self) -> list[tuple[str, str]]:
        return [(p.name, p.text) for p in self.parameters]

    def as_text(self) -> str:
        return "\n".join(f"{name} = {text}" for name, text in self.specs())

    def fields(self) -> dict[str, Any]:
        # `parameters` keeps the grid's shape ([[name, [values]]]; a distribution has none) so the names and the
        # trials table read both methods alike; `specs` is what reproduces the search.
        return {"method": RANDOM, "parameters": [[p.name, list(p.values)] for p in self.parameters],
                "specs": [list(p) for p in self.specs()], "trials_asked": self.count, "seed": self.seed}


Search = Grid | RandomSearch


def search_of(sweep) -> Search:
    """A Sweep row's search back (what "Clone as sweep" and the API show); a spec that no longer parses is left
    out."""
    if getattr(sweep, "method", GRID) != RANDOM:
        return Grid.from_json(sweep.parameters)
    found = []
    for item in sweep.specs if isinstance(sweep.specs, list) else []:
        if isinstance(item, list) and len(item) == 2:
            param, problem = parse_param(str(item[0]), str(item[1]), set(), set())
            if param is not None and not problem:
                found.append(param)
    return RandomSearch(tuple(found), int(sweep.trials_asked or 0), int(sweep.seed or 0))


def max_trials() -> int:
    return int(getattr(settings, "DLC_SWEEP_MAX_TRIALS", 50))


@dataclass(frozen=True)
class Wording:
    """How a front end (the wizard's text, the API's JSON) words the parts of the shared rules that are its own."""

    how_values: str  # how to give a parameter its values
    empty_value: str  # where an empty value comes from
    single_job: str  # how to submit a single job instead


TEXT = Wording("(NAME = value1, value2)", " (two commas in a row, or one at an end)",
               "clear the sweep to submit a single job")


def parse(text: str | None, *, env_names: Iterable[str] = (), limit: int | None = None,
          trials: str | int | None = None, seed: str | int | None = None) -> tuple[Search | None, list[str]]:
    """(search, errors) of the sweep text; (None, []) when it is empty (a single job, no sweep). The errors of
    every field in one list: parse_form keys them by field.

    `env_names`: the job's own environment variables, which a parameter may not redefine.
    """
    found, errors = parse_form(text, trials, seed, env_names=env_names, limit=limit)
    return found, flat(errors)


def flat(errors: Mapping[str, list[str]]) -> list[str]:
    return [m for key in (FIELD, TRIALS_FIELD, SEED_FIELD) for m in errors.get(key, [])]


def parse_form(text: str | None, trials: str | int | None = None, seed: str | int | None = None, *,
               env_names: Iterable[str] = (), limit: int | None = None) -> tuple[Search | None, dict[str, list[str]]]:
    """(search, errors keyed FIELD / TRIALS_FIELD / SEED_FIELD) of the wizard's sweep text, Trials and Seed; (None,
    {}) without a sweep. Trials and Seed count only for a random search (a line that is a distribution)."""
    if len(str(text or "")) > MAX_TEXT:
        return None, {FIELD: [f"The sweep text is too long: at most {MAX_TEXT:,} characters."]}
    lines = [line.strip() for line in str(text or "").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        return None, {}
    errors: list[str] = []
    taken = {str(n).strip() for n in env_names}
    parameters: list[Param] = []
    seen: set[str] = set()
    method = GRID
    for number, line in enumerate(lines, 1):
        where = f"Line {number}"
        name, equals, rest = line.partition("=")
        name = name.strip()
        if not equals:
            errors.append(f"{where}: write one parameter per line as NAME = value1, value2 (no '=' in {line!r}).")
            continue
        if is_call(rest):
            method = RANDOM
        param, problem = parse_param(name, rest, taken, seen)
        seen.add(name)
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        parameters.append(param)
    return search_from(parameters, len(seen), errors, method=method, trials=trials, seed=seed, limit=limit)


def is_call(rest: str) -> bool:
    """Whether a parameter's text is a distribution, `name(...)`, rather than a list of values."""
    return _CALL_RE.fullmatch(rest.strip()) is not None


def parse_param(name: str, rest: str, env_names: set[str], seen: set[str], wording: Wording = TEXT) \
        -> tuple[Param | None, str | None]:
    """(param, None) of one line's `NAME` and its text after '=', or (None, why not)."""
    call = _CALL_RE.fullmatch(rest.strip())
    if call is None:
        values = [v.strip() for v in rest.split(",")]
        values = [] if values == [""] else values
        problem = parameter_problem(name, values, env_names, seen, wording)
        return (None, problem) if problem else (Param(name, tuple(values)), None)
    problem = name_problem(name, env_names, seen)
    if problem:
        return None, problem
    function, bounds = call.group(1), [b.strip() for b in call.group(2).split(",")]
    if function in DISTRIBUTIONS and len(bounds) != 2:
        return None, f"{name} = {function}(...) takes two bounds: {function}(low, high)."
    return distribution(name, function, *(bounds + ["", ""])[:2], wording=wording)


def distribution(name: str, function: str, low: str, high: str, wording: Wording = TEXT) \
        -> tuple[Param | None, str | None]:
    """(param, None) of a distribution and its bounds as typed, or (None, why not): the rules of the text and the
    API's {"Distribution": ..., "Min": ..., "Max": ...} alike."""
    if function not in DISTRIBUTIONS:
        return None, (f"{name} = {function[:40]}(...): unknown distribution; use uniform(low, high), "
                      f"loguniform(low, high) or int(low, high), or a list of values {wording.how_values}.")
    low, high = str(low).strip(), str(high).strip()
    if function == "int":
        bad = [b for b in (low, high) if not _INT_RE.fullmatch(b)]
        if bad:
            return None, f"{name} = int(...): the bounds must be whole numbers (both included), not {bad[0]!r}."
        # int() refuses texts of more than 4,300 digits (a ValueError, so a 500): no sweep needs such a bound.
        if any(len(b.lstrip("+-")) > MAX_INT_DIGITS for b in (low, high)):
            return None, f"{name} = int(...): the bounds may have at most {MAX_INT_DIGITS} digits."
    else:
        bad = [b for b in (low, high) if not _is_number(b)]
        if bad:
            return None, f"{name} = {function}(...): the bounds must be numbers, not {bad[0]!r}."
    as_number = int if function == "int" else float
    if not as_number(low) < as_number(high):
        return None, f"{name} = {function}({low}, {high}): low must be below high."
    if function == "uniform" and not math.isfinite(float(high) - float(low)):
        # random.uniform adds (high - low) x a fraction to low: an infinite width would make every trial `high`.
        return None, (f"{name} = uniform({low}, {high}): the range is too wide to sample (high - low is beyond the "
                      "largest number); narrow it, or use loguniform for a range spanning orders of magnitude.")
    if function == "loguniform" and float(low) <= 0:
        return None, (f"{name} = loguniform({low}, {high}): low must be above 0 (a log scale has no zero or negative "
                      "values).")
    return Param(name, distribution=function, low=low, high=high), None


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def search_from(parameters: list[Param], named: int, errors: list[str], *, method: str,
                trials: str | int | None = None, seed: str | int | None = None, limit: int | None = None,
                wording: Wording = TEXT) -> tuple[Search | None, dict[str, list[str]]]:
    """(search, errors keyed FIELD / TRIALS_FIELD / SEED_FIELD) once each parameter is checked: the rules of the
    whole search. A grid ignores `trials` and `seed`; `seed` None or empty draws one (stored, so the sweep can be
    reproduced)."""
    if method == GRID:
        if any(p.distribution for p in parameters):
            raise ValueError("a grid takes lists of values only")
        grid, problems = grid_of([(p.name, p.values) for p in parameters], named, errors, limit=limit,
                                 wording=wording)
        return grid, ({FIELD: problems} if problems else {})
    limit = max_trials() if limit is None else limit
    out: dict[str, list[str]] = {}
    errors = list(errors)
    if named > MAX_PARAMETERS:
        errors.append(f"A sweep may have at most {MAX_PARAMETERS} parameters; this one has {named}.")
    if errors:
        out[FIELD] = errors
    count, problem = trials_of(trials, limit)
    if problem:
        out[TRIALS_FIELD] = [problem]
    number, problem = seed_of(seed)
    if problem:
        out[SEED_FIELD] = [problem]
    if out:
        return None, out
    found = RandomSearch(tuple(parameters), count, number)
    if found.space is not None and found.space < count:
        return None, {TRIALS_FIELD: [
            f"These parameters have only {found.space} combination{'s' if found.space != 1 else ''}, fewer than "
            f"the {count} trials asked: ask at most {found.space}, or widen the parameters."]}
    return found, {}


def _whole(value: str | int | None) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip() if isinstance(value, str) else ""
    return int(text) if _INT_RE.fullmatch(text) and len(text) < 30 else None


def trials_of(value: str | int | None, limit: int) -> tuple[int | None, str | None]:
    """(trials, None) of a random search's number of trials, or (None, why not)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, f"Give the number of trials of the random search: {MIN_TRIALS} to {limit}."
    count = _whole(value)
    if count is None:
        return None, f"The number of trials is a whole number, {MIN_TRIALS} to {limit}."
    if not MIN_TRIALS <= count <= limit:
        return None, f"A random search runs {MIN_TRIALS} to {limit} trials, not {count}."
    return count, None


def seed_of(value: str | int | None) -> tuple[int | None, str | None]:
    """(seed, None) of the seed given, a new one when none is; or (None, why not)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return random.SystemRandom().randrange(NEW_SEED_BELOW), None
    number = _whole(value)
    if number is None or not 0 <= number <= MAX_SEED:
        return None, f"The seed is a whole number from 0 to {MAX_SEED}, or empty for a new one."
    return number, None


def parameter_problem(name: str, values: list[str], env_names: set[str], seen: set[str],
                      wording: Wording = TEXT) -> str | None:
    """Why one parameter (its name, its values) cannot be used, or None."""
    problem = name_problem(name, env_names, seen)
    if problem:
        return problem
    if not values:
        return f"give {name} at least one value {wording.how_values}."
    if "" in values:
        return f"{name} has an empty value{wording.empty_value}."
    twice = sorted(v for v, n in Counter(values).items() if n > 1)
    if twice:
        return f"{name} lists {', '.join(twice)} more than once; each value runs once."
    return None


def grid_of(parameters: list[tuple[str, tuple[str, ...]]], named: int, errors: list[str], *,
            limit: int | None = None, wording: Wording = TEXT) -> tuple[Grid | None, list[str]]:
    """(grid, errors) once each parameter is checked: `named` parameters were given, `errors` found so far. The
    rules of the whole grid: at most MAX_PARAMETERS, and between MIN_TRIALS and `limit` trials."""
    limit = max_trials() if limit is None else limit
    errors = list(errors)
    if named > MAX_PARAMETERS:
        errors.append(f"A sweep may have at most {MAX_PARAMETERS} parameters; this one has {named}.")
    if errors:
        return None, errors
    grid = Grid(tuple(parameters))
    if grid.size < MIN_TRIALS:
        errors.append(f"A sweep needs at least {MIN_TRIALS} trials; these values make {grid.size}. "
                      f"Give a parameter a second value, or {wording.single_job}.")
    elif grid.size > limit:
        errors.append(f"These values make {grid.size} trials; a sweep may have at most {limit}.")
    return (None, errors) if errors else (grid, [])


def name_problem(name: str, env_names: set[str] = frozenset(), seen: set[str] = frozenset()) -> str | None:
    """Why a parameter name cannot be used, or None."""
    if not name:
        return "the parameter name is missing before '='."
    if not spec.ENV_NAME_RE.fullmatch(name):
        return f"{name!r} is not an environment variable name: {spec.ENV_NAME_CHARSET}."
    if name in seen:
        return f"{name} is named twice; put all its values on one line."
    if name in env_names:
        return f"{name} is already one of the job's environment variables; remove it there or rename the parameter."
    if name in spec.RESERVED_ENVS:
        return (f"{name} is a reserved variable ({spec.RESERVED_ENVS[name]}): every trial would override it; "
                "name the parameter otherwise.")
    if spec.looks_like_secret(name):
        return (f"{name} looks like the name of a secret; sweep values are stored and shown in plain text, "
                "so use a secret environment variable for it instead.")
    return None


def trial_name(base: str, number: int, total: int) -> str:
    """`<base>-01`: the trial's DisplayName, the base cut so the whole stays within the spec's length."""
    width = max(2, len(str(total)))
    suffix = f"-{number:0{width}d}"
    base = "".join(ch if spec.JOB_NAME_RE.fullmatch(ch) else "-" for ch in base) or "sweep"
    return base[: C.MAX_NAME_LENGTH - len(suffix)] + suffix


@dataclass(frozen=True)
class Trial:
    number: int  # 1-based
    values: dict[str, str]
    body: dict[str, Any]


def trials(body: Mapping[str, Any], grid: Search) -> list[Trial]:
    """One CreateJob body per trial: the job's body with its own DisplayName and the parameters added to Envs."""
    base = str(body.get("DisplayName") or "")
    out = []
    combos = grid.trials()
    for number, values in enumerate(combos, 1):
        trial = copy.deepcopy(dict(body))
        trial["DisplayName"] = trial_name(base, number, len(combos))
        envs = trial.get("Envs") if isinstance(trial.get("Envs"), dict) else {}
        trial["Envs"] = {**envs, **values}
        out.append(Trial(number, values, trial))
    return out


def describe(values: Mapping[str, str]) -> str:
    """`LR=0.01, BS=32`."""
    return ", ".join(f"{k}={v}" for k, v in values.items())


def first_trial_error(all_trials: list[Trial], context: spec.Context | None, hints: Mapping | None = None) \
        -> str | None:
    """The first trial whose body the workspace's rules refuse (as the API's submit_body checks a body), in words;
    None when every trial passes."""
    context = dataclasses.replace(context or spec.Context(), hints=dict(hints or {}))
    for trial in all_trials:
        wire = {k: v for k, v in trial.body.items() if k != "WorkspaceId"}
        errors = spec.validate(wire, context)
        if errors:
            path, messages = next(iter(errors.items()))
            where = f" {path}:" if path else ""
            # Each value cut: a value of 100,000 characters (too long for a job) is not said back whole.
            shown = {k: v if len(v) <= SHOWN_VALUE else f"{v[:SHOWN_VALUE]}…" for k, v in trial.values.items()}
            return f"Trial {trial.number} ({describe(shown)}) would be refused:{where} {messages[0]}"
    return None


def check(text: str | None, body: Mapping[str, Any], *, context: spec.Context | None, hints: Mapping | None = None,
          locked: Iterable[str] = (), trials: str | int | None = None, seed: str | int | None = None) \
        -> tuple[Search | None, list[Trial], list[str]]:
    """(search, trials, errors) for the sweep text and the job's (valid) body; (None, [], []) without a sweep."""
    found, all_trials, errors = check_form(text, body, context=context, hints=hints, locked=locked, trials=trials,
                                           seed=seed)
    return found, all_trials, flat(errors)


def check_form(text: str | None, body: Mapping[str, Any], *, context: spec.Context | None,
               hints: Mapping | None = None, locked: Iterable[str] = (), trials: str | int | None = None,
               seed: str | int | None = None) -> tuple[Search | None, list[Trial], dict[str, list[str]]]:
    """check, with the errors keyed by field (FIELD, TRIALS_FIELD, SEED_FIELD)."""
    envs = body.get("Envs") if isinstance(body.get("Envs"), dict) else {}
    found, errors = parse_form(text, trials, seed, env_names=envs)
    if errors or found is None:
        return None, [], errors
    found, all_trials, problems = check_trials(found, body, context=context, hints=hints, locked=locked)
    return found, all_trials, ({FIELD: problems} if problems else {})


def check_trials(grid: Search, body: Mapping[str, Any], *, context: spec.Context | None, hints: Mapping | None = None,
                 locked: Iterable[str] = ()) -> tuple[Search | None, list[Trial], list[str]]:
    """(search, trials, errors) of a checked search on the job's (valid) body: a template's lock, each trial's body."""
    if ENVS_LOCK in set(locked):
        return None, [], ["The template locks the environment variables, so a sweep cannot add its parameters."]
    found = trials(body, grid)
    problem = first_trial_error(found, context, hints)
    return (None, [], [problem]) if problem else (grid, found, [])


def trial_tag(token: uuid.UUID, number: int) -> uuid.UUID:
    """The idempotency tag of a sweep's trial `number` made from the wizard's submission token: derived, so a
    second post of the form finds the sweep (trial 1) and no trial can take another trial's tag."""
    return uuid.uuid5(token, f"trial-{number}")


def launch(*, workspace, owner, name: str, grid: Search, found: list[Trial], hints: dict, secrets: dict[str, str],
           cloned_from=None, run_after=None, run_after_when: str = "succeeded", token: uuid.UUID | None = None,
           early=None):
    """Save the Sweep and its trial jobs in one transaction: each job through save_and_enqueue (audited, and
    enqueued on commit), so no worker starts a trial of a sweep that is not all saved. With `run_after` every trial
    waits for that one upstream job (jobs.dependencies). With the wizard's submission `token`, each trial's tag is
    trial_tag(token, number), so the same form posted again collides (IntegrityError) instead of a second sweep.
    `early`: the sweep's median early stopping (jobs.early_stop.Settings), None for none."""
    from django.db import transaction

    from jobs import secretbox
    from jobs.api_jobs import take_secrets
    from jobs.models import Sweep, SweepTrial
    from jobs.views import save_and_enqueue

    with transaction.atomic():
        sweep = Sweep.objects.create(workspace=workspace, owner=owner, name=name, **grid.fields(),
                                     **(early.fields() if early is not None else {}))
        for trial in found:
            # A value named like a secret is sealed, as for a single job; every trial gets the same secrets.
            body, named = take_secrets(trial.body)
            job = save_and_enqueue(workspace=workspace, owner=owner, body=body, hints=hints,
                                   sealed_secrets=secretbox.seal({**named, **secrets}), cloned_from=cloned_from,
                                   run_after=run_after, run_after_when=run_after_when,
                                   idempotency_tag=trial_tag(token, trial.number) if token else None)
            SweepTrial.objects.create(sweep=sweep, job=job, number=trial.number, values=trial.values)
    return sweep



# --- the sweep page --------------------------------------------------------------------------------------

COMPARE_MAX = 6  # trials the "Compare trials" link takes (the compare page's limit)
# An ended trial's log is archived (and its metrics read) within seconds; past this the archive is left to the
# re-enqueue sweep and the page stops waiting for it.
ARCHIVE_WAIT = timedelta(minutes=10)


@dataclass
class TrialRow:
    number: int
    values: list[str]  # in the sweep's parameter order
    row: dict  # jobs.listing.Row: name, url, status badge, duration
    started: str
    started_iso: str
    # Leaderboard.names' values ("" if none): the last, the ranked metric's the one it is ranked by
    metrics: list[str] = dataclasses.field(default_factory=list)
    rank: int | None = None  # 1 = best, when the trials are ranked and this one is
    best: bool = False  # in the first place (with others, when `tied`)
    tied: bool = False  # its place is shared with another trial (any place)
    archiving: bool = False  # ended, its metrics still to come from the log archive (see `polling`)
    stop_reason: str = ""  # why early stopping stopped it (jobs.early_stop.reason_of), "" if it did not
    job: Any = dataclasses.field(default=None, repr=False)  # the Job, for a running trial's live values
    live: bool = False  # its metrics are its values so far, read from its running pod's log (metric_values)


def trial_rows(sweep) -> list[TrialRow]:
    """The trials table: one query for the trials, their jobs and owners."""
    from django.utils import timezone

    from jobs import listing

    found = list(sweep.trials.select_related("job", "job__owner").order_by("number"))
    rows = {row["pk"]: row for row in listing.rows([t.job for t in found])}
    names = sweep.names
    out = []
    now = timezone.now()
    for trial in found:
        job = trial.job
        started = timezone.localtime(job.started_at) if job.started_at else None
        out.append(TrialRow(trial.number, [str((trial.values or {}).get(n, "")) for n in names], rows[trial.job_id],
                            f"{started:%Y-%m-%d %H:%M:%S}" if started else "—",
                            started.isoformat() if started else "", archiving=awaiting_archive(job, now),
                            stop_reason=trial.stopped_early, job=job))
    return out


def awaiting_archive(job: Any, now: datetime) -> bool:
    """Whether a trial's job ended a moment ago and its metrics are still to be read from its log archive (the
    page and the API's ranking wait for them; an archive that never came, past ARCHIVE_WAIT, is not waited for)."""
    return (job.logs_archived_at is None and not job.is_active and bool(job.dlc_job_id)
            and job.finished_at is not None and job.finished_at > now - ARCHIVE_WAIT)


def metric_values(rows: list[TrialRow], reads: int | None = None) -> dict[int, Mapping[str, Any]]:
    """Each trial's metrics by job id, for `leaderboard`: an ended trial's stored rows (jobs.scalars.last_values,
    one query), a running one's values so far (jobs.scalars.sampled: as last read from its log, the stalest few
    read again now); each row that shows values so far is marked `live`."""
    from jobs import scalars

    values: dict[int, Mapping[str, Any]] = dict(scalars.last_values(r.row["pk"] for r in rows))
    live = scalars.sampled([r.job for r in rows if r.job is not None and r.row["pk"] not in values], reads)
    values.update(live)
    for r in rows:
        r.live = r.row["pk"] in live
    return values


def tally(rows: list[TrialRow]) -> list[tuple[str, str, int]]:
    """(label, tone, count) per status, in order of first appearance."""
    counts: dict[str, list] = {}
    for r in rows:
        entry = counts.setdefault(r.row["status"], [r.row["label"], r.row["tone"], 0])
        entry[2] += 1
    return [tuple(v) for v in counts.values()]


def any_active(rows: list[TrialRow]) -> bool:
    from jobs import status as st

    return any(st.is_active(r.row["status"]) for r in rows)


def polling(rows: list[TrialRow]) -> bool:
    """Whether the trials table asks for itself again: while a trial runs, and after the last one ended until its
    metrics are read from its archived log (a few seconds later), else the page would stop on "no metrics yet"."""
    return any_active(rows) or any(r.archiving for r in rows)


def stop_summary(outcomes: list) -> str:
    """jobpage.StopOutcome per trial in one line: "2 × Stop requested, 1 × Already finished"."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.text] = counts.get(outcome.text, 0) + 1
    return ", ".join(f"{n} × {text}" for text, n in counts.items())


# --- the trials' training metrics (jobs.scalars) -----------------------------------------------------------------

METRIC_COLUMNS = 4
GOALS = ("min", "max")
# Metrics whose lower value is the better one, by a word in their name; any other is ranked highest first.
LOWER_IS_BETTER = ("loss", "error", "perplexity")
# ... or by a whole word of it (`val_mse`, `eval/wer`): as parts of other words these would mislead (`power`).
LOWER_IS_BETTER_WORDS = frozenset({"err", "mse", "rmse", "mae", "nll", "ppl", "wer", "cer", "fid", "regret"})


def default_goal(name: str) -> str:
    lower = name.lower()
    if any(word in lower for word in LOWER_IS_BETTER) or LOWER_IS_BETTER_WORDS & set(re.split(r"[^a-z0-9]+", lower)):
        return "min"
    return "max"


VALUES = ("best", "last")
DEFAULT_VALUE = "best"  # as Katib ranks trials: by the best value the objective reached, not where it ended


def score(found: Any, goal: str, value: str) -> float:
    """The number a trial is ranked by: of its metric's summary (a JobScalar or a scalars.Summary), the best value
    it reached (the lowest for goal min, the highest for max) or its last one. The page, the API and the compare
    link all rank with this."""
    if value == "last":
        return found.last
    return found.min if goal == "min" else found.max


@dataclass
class Leaderboard:
    rows: list[TrialRow]  # ranked: the ranked trials best first, then the others in trial order
    names: list[str]  # the metric columns, most common among the trials first
    all_names: list[str]  # every metric a trial has (what one may rank by)
    rank: str = ""
    goal: str = ""
    value: str = DEFAULT_VALUE  # best | last: which of each trial's values ranks it
    error: str = ""
    error_field: str = ""  # the query parameter the error is about: rank | goal | value
    asked: tuple[str, str, str] = ("", "", "")  # rank, goal and value as the request gave them (poll_query)

    def _query(self, rank: str, goal: str, value: str) -> str:
        # The default value stays out of the query, so links made before it existed keep their meaning.
        query = {"rank": rank, "goal": goal} | ({"value": value} if value != DEFAULT_VALUE else {})
        return f"?{urlencode(query)}"

    @property
    def query(self) -> str:
        """The ranking's query string, "" when not ranked."""
        return self._query(self.rank, self.goal, self.value) if self.rank else ""

    @property
    def poll_query(self) -> str:
        """The query the table's poll asks with: the ranking as asked, even when it cannot be applied yet. The
        ranked metric may come only later (an ended trial's values are read from its archived log seconds after it
        ends): polling with `query` ("" then) would drop the ranking for good while the address still asks for it."""
        if self.rank:
            return self.query
        asked = {k: v for k, v in zip(("rank", "goal", "value"), self.asked, strict=True) if v}
        return f"?{urlencode(asked)}" if self.error and asked else ""

    def choices(self) -> list[tuple[str, str, bool]]:
        """(name, query, chosen) of each metric to rank by, at its default goal (and the value chosen)."""
        return [(n, self._query(n, default_goal(n), self.value), n == self.rank) for n in self.names]

    @property
    def other_goal(self) -> str:
        """The query of the chosen metric ranked the other way."""
        return self._query(self.rank, "max" if self.goal == "min" else "min", self.value)

    def value_choices(self) -> list[tuple[str, str, bool]]:
        """(value, query, chosen) of "best" and "last" for the chosen metric and goal."""
        return [(v, self._query(self.rank, self.goal, v), v == self.value) for v in VALUES]

    @property
    def tied(self) -> bool:
        """Whether more than one trial shares the first place."""
        return sum(1 for r in self.rows if r.best) > 1

    def as_json(self) -> dict[str, Any]:
        """What the API says of the ranking: the metric, goal and value used, and the trials' order."""
        return {"metric": self.rank, "goal": self.goal, "value": self.value,
                "order": [r.number for r in self.rows if r.rank is not None]}


def leaderboard(rows: list[TrialRow], values: Mapping[int, Mapping[str, Any]], rank: str | None = None,
                goal: str | None = None, value: str | None = None) -> Leaderboard:
    """The trials with their metrics' values (`values`: metric_values of the rows), ranked by `rank`
    when asked: the ended trials that have it, best first by `goal` (min | max, by default min for a loss, an
    error or a perplexity, else max) of `value` (best: the best value each reached, the default; last: the last
    one); the others below, in trial order. Ties share a place (standard competition ranking: 1, 1, 3), in trial
    order, each marked tied; every trial in the first place is the best. A rank, goal or value that cannot be used
    is the board's error, and the trials stay in order."""
    from jobs import scalars
    from jobs import status as st

    per_trial = [values.get(r.row["pk"], {}) for r in rows]
    all_names = sorted({name for found in per_trial for name in found})
    names = scalars.common_names(per_trial, METRIC_COLUMNS)
    rank, goal, value = (rank or "").strip(), (goal or "").strip(), (value or "").strip()
    board = Leaderboard(list(rows), names, all_names, asked=(rank, goal, value))
    # A bad goal or value is an error with or without a rank: ignored, it would look taken.
    if goal and goal not in GOALS:
        board.error = f"Rank {rank or 'a metric'} by min (lowest first) or max (highest first), not {goal[:20]!r}."
        board.error_field = "goal"
    elif value and value not in VALUES:
        board.error = f"Rank {rank or 'a metric'} by each trial's best or last value, not {value[:20]!r}."
        board.error_field = "value"
    elif rank and rank not in all_names and any(r.archiving for r in rows):
        # Seconds after a trial ended its values are still to be read from its log: not "no trial printed it".
        board.error, board.error_field = (f"No trial has a metric named {rank[:64]!r} yet: the ended trials' "
                                          "metrics are being read from their logs.", "rank")
    elif rank and rank not in all_names:
        board.error, board.error_field = (f"No trial has a metric named {rank[:64]!r}" + (
            f": rank by one of {', '.join(all_names)}." if all_names else " (no trial printed METRIC lines yet)."),
            "rank")
    elif rank:
        board.rank, board.goal, board.value = rank, goal or default_goal(rank), value or DEFAULT_VALUE
        if rank not in names:
            board.names = names[:METRIC_COLUMNS - 1] + [rank]
    for row, found in zip(rows, per_trial, strict=True):
        # The ranked column shows the number it is ranked by; the others their last value.
        row.metrics = [scalars.fmt(score(found[n], board.goal, board.value) if n == board.rank else found[n].last)
                       if n in found else "" for n in board.names]
        row.rank, row.best, row.tied = None, False, False
    if not board.rank:
        return board
    ranked = [(score(found[rank], board.goal, board.value), row.number, row)
              for row, found in zip(rows, per_trial, strict=True)
              if rank in found and st.is_terminal(row.row["status"])]
    ranked.sort(key=lambda t: (t[0] if board.goal == "min" else -t[0], t[1]))
    place = 0
    for index, (number, _, row) in enumerate(ranked, 1):
        if index == 1 or number != ranked[index - 2][0]:
            place = index
        row.rank, row.best = place, place == 1
    shared = Counter(row.rank for _, _, row in ranked)
    for _, _, row in ranked:
        row.tied = shared[row.rank] > 1  # at any place, not only the first: "5 (tied)"
    placed = {id(row) for _, _, row in ranked}
    board.rows = [row for _, _, row in ranked] + [row for row in rows if id(row) not in placed]
    return board
