"""Hyperparameter sweeps (grid): the wizard's "Sweep" text -> a grid of parameters -> one CreateJob body per
trial. Plain functions, no request: jobs.wizard and the API (jobs.api_sweeps) call them, jobs.sweep_views shows the
result.

The text has one parameter per line, `NAME = v1, v2, v3`; blank lines and lines starting with `#` are skipped.
Each trial gets each parameter as an environment variable (the command reads `$NAME`), in itertools.product
order, so trial 1 takes every parameter's first value and the last parameter changes fastest.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings

from jobs import catalog as C
from jobs import spec
from jobs.spec.rules import _ENV_KEY_RE, _NAME_RE  # the spec's own rules: one source of truth

FIELD = "sweep"
MAX_PARAMETERS = 8
MIN_TRIALS = 2
MAX_TEXT = 10_000  # characters: 8 lines of 50 values with room to spare
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


def parse(text: str | None, *, env_names: Iterable[str] = (), limit: int | None = None) -> tuple[Grid | None,
                                                                                                 list[str]]:
    """(grid, errors) of the sweep text; (None, []) when it is empty (a single job, no sweep).

    `env_names`: the job's own environment variables, which a parameter may not redefine.
    """
    if len(str(text or "")) > MAX_TEXT:
        return None, [f"The sweep text is too long: at most {MAX_TEXT:,} characters."]
    lines = [line.strip() for line in str(text or "").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines:
        return None, []
    errors: list[str] = []
    taken = {str(n).strip() for n in env_names}
    parameters: list[tuple[str, tuple[str, ...]]] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        where = f"Line {number}"
        name, equals, rest = line.partition("=")
        name = name.strip()
        if not equals:
            errors.append(f"{where}: write one parameter per line as NAME = value1, value2 (no '=' in {line!r}).")
            continue
        values = [v.strip() for v in rest.split(",")]
        problem = parameter_problem(name, [] if values == [""] else values, taken, seen)
        seen.add(name)
        if problem:
            errors.append(f"{where}: {problem}")
            continue
        parameters.append((name, tuple(values)))
    return grid_of(parameters, len(seen), errors, limit=limit)


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
    if not _ENV_KEY_RE.fullmatch(name):
        return (f"{name!r} is not an environment variable name: letters, digits and '_', not starting with a "
                "digit.")
    if name in seen:
        return f"{name} is named twice; put all its values on one line."
    if name in env_names:
        return f"{name} is already one of the job's environment variables; remove it there or rename the parameter."
    if spec.looks_like_secret(name):
        return (f"{name} looks like the name of a secret; sweep values are stored and shown in plain text, "
                "so use a secret environment variable for it instead.")
    return None


def trial_name(base: str, number: int, total: int) -> str:
    """`<base>-01`: the trial's DisplayName, the base cut so the whole stays within the spec's length."""
    width = max(2, len(str(total)))
    suffix = f"-{number:0{width}d}"
    base = "".join(ch if _NAME_RE.fullmatch(ch) else "-" for ch in base) or "sweep"
    return base[: C.MAX_NAME_LENGTH - len(suffix)] + suffix


@dataclass(frozen=True)
class Trial:
    number: int  # 1-based
    values: dict[str, str]
    body: dict[str, Any]


def trials(body: Mapping[str, Any], grid: Grid) -> list[Trial]:
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
            return f"Trial {trial.number} ({describe(trial.values)}) would be refused:{where} {messages[0]}"
    return None


def check(text: str | None, body: Mapping[str, Any], *, context: spec.Context | None, hints: Mapping | None = None,
          locked: Iterable[str] = ()) -> tuple[Grid | None, list[Trial], list[str]]:
    """(grid, trials, errors) for the sweep text and the job's (valid) body; (None, [], []) without a sweep."""
    envs = body.get("Envs") if isinstance(body.get("Envs"), dict) else {}
    grid, errors = parse(text, env_names=envs)
    if errors or grid is None:
        return None, [], errors
    return check_trials(grid, body, context=context, hints=hints, locked=locked)


def check_trials(grid: Grid, body: Mapping[str, Any], *, context: spec.Context | None, hints: Mapping | None = None,
                 locked: Iterable[str] = ()) -> tuple[Grid | None, list[Trial], list[str]]:
    """(grid, trials, errors) of a checked grid on the job's (valid) body: a template's lock, each trial's body."""
    if ENVS_LOCK in set(locked):
        return None, [], ["The template locks the environment variables, so a sweep cannot add its parameters."]
    found = trials(body, grid)
    problem = first_trial_error(found, context, hints)
    return (None, [], [problem]) if problem else (grid, found, [])


def launch(*, workspace, owner, name: str, grid: Grid, found: list[Trial], hints: dict, secrets: dict[str, str],
           cloned_from=None):
    """Save the Sweep and its trial jobs in one transaction: each job through save_and_enqueue (audited, and
    enqueued on commit), so no worker starts a trial of a sweep that is not all saved."""
    from django.db import transaction

    from jobs import secretbox
    from jobs.api_jobs import take_secrets
    from jobs.models import Sweep, SweepTrial
    from jobs.views import save_and_enqueue

    with transaction.atomic():
        sweep = Sweep.objects.create(workspace=workspace, owner=owner, name=name, parameters=grid.as_json())
        for trial in found:
            # A value named like a secret is sealed, as for a single job; every trial gets the same secrets.
            body, named = take_secrets(trial.body)
            job = save_and_enqueue(workspace=workspace, owner=owner, body=body, hints=hints,
                                   sealed_secrets=secretbox.seal({**named, **secrets}), cloned_from=cloned_from)
            SweepTrial.objects.create(sweep=sweep, job=job, number=trial.number, values=trial.values)
    return sweep



# --- the sweep page --------------------------------------------------------------------------------------

COMPARE_MAX = 6  # trials the "Compare trials" link takes (the compare page's limit)


@dataclass
class TrialRow:
    number: int
    values: list[str]  # in the sweep's parameter order
    row: dict  # jobs.listing.Row: name, url, status badge, duration
    started: str
    started_iso: str
    metrics: list[str] = dataclasses.field(default_factory=list)  # last values of Leaderboard.names ("" if none)
    rank: int | None = None  # 1 = best, when the trials are ranked and this one is
    best: bool = False


def trial_rows(sweep) -> list[TrialRow]:
    """The trials table: one query for the trials, their jobs and owners."""
    from django.utils import timezone

    from jobs import listing

    found = list(sweep.trials.select_related("job", "job__owner").order_by("number"))
    rows = {row["pk"]: row for row in listing.rows([t.job for t in found])}
    names = sweep.names
    out = []
    for trial in found:
        started = timezone.localtime(trial.job.started_at) if trial.job.started_at else None
        out.append(TrialRow(trial.number, [str((trial.values or {}).get(n, "")) for n in names], rows[trial.job_id],
                            f"{started:%Y-%m-%d %H:%M:%S}" if started else "—",
                            started.isoformat() if started else ""))
    return out


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


def default_goal(name: str) -> str:
    return "min" if any(word in name.lower() for word in LOWER_IS_BETTER) else "max"


@dataclass
class Leaderboard:
    rows: list[TrialRow]  # ranked: the ranked trials best first, then the others in trial order
    names: list[str]  # the metric columns, most common among the trials first
    all_names: list[str]  # every metric a trial has (what one may rank by)
    rank: str = ""
    goal: str = ""
    error: str = ""

    @property
    def query(self) -> str:
        """The ranking's query string (for the table's poll), "" when not ranked."""
        return f"?{urlencode({'rank': self.rank, 'goal': self.goal})}" if self.rank else ""

    def choices(self) -> list[tuple[str, str, bool]]:
        """(name, query, chosen) of each metric to rank by, at its default goal."""
        return [(n, f"?{urlencode({'rank': n, 'goal': default_goal(n)})}", n == self.rank) for n in self.names]

    @property
    def other_goal(self) -> str:
        """The query of the chosen metric ranked the other way."""
        return f"?{urlencode({'rank': self.rank, 'goal': 'max' if self.goal == 'min' else 'min'})}"


def leaderboard(rows: list[TrialRow], values: Mapping[int, Mapping[str, Any]], rank: str | None = None,
                goal: str | None = None) -> Leaderboard:
    """The trials with their metrics' last values (`values`: jobs.scalars.last_values of their jobs), ranked by
    `rank` when asked: the ended trials that have it, best first by `goal` (min | max, by default min for a loss,
    an error or a perplexity, else max), ties in trial order; the others below, in trial order. A rank or goal
    that cannot be used is the board's error, and the trials stay in order."""
    from jobs import scalars
    from jobs import status as st

    per_trial = [values.get(r.row["pk"], {}) for r in rows]
    all_names = sorted({name for found in per_trial for name in found})
    names = scalars.common_names(per_trial, METRIC_COLUMNS)
    board = Leaderboard(list(rows), names, all_names)
    rank, goal = (rank or "").strip(), (goal or "").strip()
    if rank and rank not in all_names:
        board.error = (f"No trial has a metric named {rank[:64]!r}" + (
            f": rank by one of {', '.join(all_names)}." if all_names else " (no trial printed METRIC lines yet)."))
    elif rank and goal and goal not in GOALS:
        board.error = f"Rank {rank} by min (lowest first) or max (highest first), not {goal[:20]!r}."
    elif rank:
        board.rank, board.goal = rank, goal or default_goal(rank)
        if rank not in names:
            board.names = names[:METRIC_COLUMNS - 1] + [rank]
    for row, found in zip(rows, per_trial, strict=True):
        row.metrics = [scalars.fmt(found[n].last) if n in found else "" for n in board.names]
        row.rank, row.best = None, False
    if not board.rank:
        return board
    ranked = [(found[rank].last, row.number, row) for row, found in zip(rows, per_trial, strict=True)
              if rank in found and st.is_terminal(row.row["status"])]
    ranked.sort(key=lambda t: (t[0] if board.goal == "min" else -t[0], t[1]))
    for place, (_, _, row) in enumerate(ranked, 1):
        row.rank, row.best = place, place == 1
    placed = {id(row) for _, _, row in ranked}
    board.rows = [row for _, _, row in ranked] + [row for row in rows if id(row) not in placed]
    return board

