"""Jobs side by side: their configuration as the job page shows it (jobs.jobpage.sections, so the same labels and
the same masking of secrets), one column per job, the rows where they differ marked.

Tables of the job page (variables, roles, datasets, storage) are compared per name, not per position: a variable
added to a clone must show as one new row, not shift every variable below it. A cell is None where a job does not
have the row at all ("not set"), which differs from an empty value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from jobs import access, jobpage, scalars
from jobs import tags as tagging
from jobs.models import Job

MIN_JOBS, MAX_JOBS = 2, 6
METRICS_KEY = "scalars"  # the training metrics' group, after the configuration's
_MAX_JUNK_SHOWN, _MAX_JUNK_CHARS = 5, 40

# How the job page's tables are compared: the column naming a row, and the word before it. Datasets and storage
# are named by where they are mounted (what a training script reads), roles by role, variables by name.
_TABLE_KEYS = {"Environment variables": ("key", "Variable"), "Job resources": ("role", "Job resources ›"),
               "Datasets": ("mount_path", "Datasets ›"), "Storage": ("mount_path", "Storage ›")}
# The job page heads both the node count and the named nodes "Nodes"; the wizard calls the latter this.
_HEADINGS = {"node_names": "Nodes to run on"}


@dataclass
class Cell:
    value: str | None  # None: the job does not have this row
    kind: str = "text"  # text | mono | pre, as on the job page
    changed: bool = False  # differs from the first job's value


@dataclass
class Row:
    label: str
    cells: list[Cell]
    differs: bool


@dataclass
class Group:
    key: str
    title: str
    rows: list[Row]


@dataclass
class Column:
    job: Job
    url: str
    owner: str
    started: datetime | None
    duration: str


@dataclass
class Comparison:
    requested: list[int] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)  # all rows; see shown()
    junk: list[str] = field(default_factory=list)
    junk_more: int = 0  # junk values not listed
    unavailable: list[int] = field(default_factory=list)
    problem: str = ""  # why there is no table

    @property
    def differences_label(self) -> str:
        """What "Only …" counts: the training metrics' rows are among them when there are any, and say so."""
        return self._counted("differences", differing=True)

    @property
    def rows_label(self) -> str:
        return self._counted("rows", differing=False)

    def _counted(self, noun: str, *, differing: bool) -> str:
        # "configuration differences (5)" counted 3 configuration rows and 2 metric rows (QA): each is named.
        counts = {g.key: sum(r.differs or not differing for r in g.rows) for g in self.groups}
        metrics = counts.pop(METRICS_KEY, None)
        configuration = sum(counts.values())
        if metrics is None:
            return f"configuration {noun} ({configuration})"
        return (f"{noun} ({configuration + metrics}: {configuration} configuration, {metrics} training "
                f"metric{'' if metrics == 1 else 's'})")

    def shown(self, all_rows: bool) -> list[Group]:
        """The groups with the rows to show: all of them, or only those that differ (groups left empty go)."""
        groups = [Group(g.key, g.title, [r for r in g.rows if all_rows or r.differs]) for g in self.groups]
        return [g for g in groups if g.rows]

    @property
    def differences_url(self) -> str:
        return compare_url(self.requested)

    @property
    def all_rows_url(self) -> str:
        return compare_url(self.requested, all_rows=True)


def compare_url(ids: Iterable[int | str], *, all_rows: bool = False) -> str:
    """The compare page of these jobs: the one URL shape other pages link to (?ids=..&ids=..)."""
    params = [("ids", str(i)) for i in ids] + ([("all", "1")] if all_rows else [])
    return f"{reverse('job_compare')}?{urlencode(params)}"


def parse_ids(values: Sequence[str]) -> tuple[list[int], list[str], int]:
    """(ids in the order given, without repeats; junk values, shortened, for the message; junk not listed)."""
    ids: dict[int, None] = {}  # ordered, without repeats
    junk: list[str] = []
    for raw in values:  # at most Django's DATA_UPLOAD_MAX_NUMBER_FIELDS
        value = raw.strip()
        if not value:
            continue
        # ASCII digits only: "²".isdigit() is true but int() refuses it; longer numbers match no row.
        if value.isascii() and value.isdigit() and len(value) <= 18:
            ids[int(value)] = None
        else:
            junk.append(value if len(value) <= _MAX_JUNK_CHARS else value[:_MAX_JUNK_CHARS] + "…")
    return list(ids), junk[:_MAX_JUNK_SHOWN], max(0, len(junk) - _MAX_JUNK_SHOWN)


def canonical_url(query: Mapping) -> str | None:
    """Where to send a request from the job list's form without JavaScript (its checkboxes are `job`, and the form
    carries its CSRF token): the clean ?ids= URL, so the token stays out of the address bar and shared links.
    None when the request already is one."""
    if "job" not in query and "csrfmiddlewaretoken" not in query:
        return None
    ids = [*query.getlist("ids"), *query.getlist("job")]
    return compare_url(ids, all_rows=query.get("all") == "1")


def compare(user, values: Sequence[str]) -> Comparison:
    """The comparison of the jobs named by `values` (the ?ids= values) that `user` may view, in the order given.
    One query whatever the number of jobs. Ids the user may not view read like ids of no job, so nothing tells
    whether another workspace's job exists."""
    ids, junk, junk_more = parse_ids(values)
    result = Comparison(requested=ids, junk=junk, junk_more=junk_more)
    if not ids:
        result.problem = "Select 2 to 6 jobs to compare." if not junk else "No valid job ids were given."
        return result
    if len(ids) < MIN_JOBS:
        result.problem = "Select at least 2 jobs to compare: only 1 was given."
        return result
    if len(ids) > MAX_JOBS:
        result.problem = f"Up to {MAX_JOBS} jobs can be compared side by side: {len(ids)} were selected. Select fewer."
        return result
    found = {job.pk: job for job in access.jobs_for(user).filter(pk__in=ids).select_related("workspace", "owner")}
    result.unavailable = [pk for pk in ids if pk not in found]
    jobs = [found[pk] for pk in ids if pk in found]
    if len(jobs) < MIN_JOBS:
        result.problem = "At least 2 jobs you can view are needed to compare."
        return result
    result.columns = [_column(job) for job in jobs]
    result.groups = groups([jobpage.sections(job) for job in jobs], [_tags(job) for job in jobs])
    result.groups += metric_groups(jobs)
    return result


def metric_groups(jobs: list[Job]) -> list[Group]:
    """The "Training metrics (last value)" group (jobs.scalars, one query): a row per metric name, those most jobs
    have first; none when no job has metrics."""
    per_job = scalars.last_values(job.pk for job in jobs)
    found = [per_job.get(job.pk, {}) for job in jobs]
    rows = []
    for name in scalars.common_names(found):
        values = [scalars.fmt(mine[name].last) if name in mine else None for mine in found]
        cells = [Cell(value, "mono", value != values[0]) for value in values]
        rows.append(Row(name, cells, any(c.changed for c in cells)))
    return [Group(METRICS_KEY, "Training metrics (last value)", rows)] if rows else []


def _column(job: Job) -> Column:
    duration = jobpage.human_duration((job.finished_at or timezone.now()) - job.started_at) if job.started_at else ""
    owner = (job.owner.get_username() if job.owner_id else "") or "—"
    return Column(job, job.get_absolute_url(), owner, job.started_at, duration)


def _tags(job: Job) -> dict[str, str] | None:
    """The job's tags as the job page lists them (without the console's submission tag); None if not a map."""
    tags = ((job.body or {}).get("Settings") or {}).get("Tags") if isinstance(job.body, dict) else None
    if not isinstance(tags, dict):
        return None
    return {str(k): "" if v is None else str(v) for k, v in tagging.user_tags(tags).items()}


def _flatten(section: jobpage.Section, tags: dict[str, str] | None) -> list[tuple[str, str, str]]:
    """(label, value, kind) of each thing the job page shows in this section, its tables cut into one row per
    named entry and column."""
    out: list[tuple[str, str, str]] = []
    for item in section.items:
        if section.key == "basic" and item.label == "Job name":
            continue  # the column heading
        if section.key == "basic" and item.label == "Tags" and tags is not None:
            out += [(f"Tag {k}", v, "mono") for k, v in tags.items()]
            continue
        if item.kind != "rows":
            out.append((item.label or section.title, "" if item.value is None else str(item.value), item.kind))
            continue
        out += _table_rows(item)
    return out


def _table_rows(item: jobpage.Item) -> list[tuple[str, str, str]]:
    key_column, word = _TABLE_KEYS.get(item.label, ("", item.label))
    keys = [k for k, _ in item.columns]
    out: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for i, cells in enumerate(item.value):
        row = dict(zip(keys, cells, strict=False))
        name = row.get(key_column, "")
        # An unnamed or repeated entry is known by its place in the table instead.
        name = name if name and name not in seen else f"#{i + 1}"
        seen.add(name)
        if key_column == "key":  # a variable: one row, its value (a column the job page drops when all are empty)
            out.append((f"{word} {name}", row.get("value", ""), "mono"))
            continue
        for column, heading in item.columns:
            if column != key_column:
                out.append((f"{word} {name} › {_HEADINGS.get(column, heading)}", row[column], "text"))
    return out


def _merge(order: list[str], labels: list[str]) -> None:
    """Add labels missing from `order`, each right after the label that precedes it in this job."""
    at = -1
    for label in labels:
        if label in order:
            at = order.index(label)
        else:
            at += 1
            order.insert(at, label)


def groups(per_job: list[list[jobpage.Section]], tags: list[dict[str, str] | None] | None = None) -> list[Group]:
    """Rows of the jobs' sections, in the job page's order, one cell per job; a row differs when not all
    jobs have the same value (a row a job lacks differs from one it has, even empty)."""
    tags = tags or [None] * len(per_job)
    titles: dict[str, str] = {}
    order: dict[str, list[str]] = {}
    values: list[dict[tuple[str, str], tuple[str, str]]] = []
    for sections, job_tags in zip(per_job, tags, strict=True):
        mine: dict[tuple[str, str], tuple[str, str]] = {}
        for section in sections:
            titles.setdefault(section.key, section.title)
            flat = _flatten(section, job_tags)
            _merge(order.setdefault(section.key, []), [label for label, _, _ in flat])
            mine.update({(section.key, label): (value, kind) for label, value, kind in flat})
        values.append(mine)
    out: list[Group] = []
    for key, labels in order.items():
        rows = []
        for label in labels:
            found = [mine.get((key, label)) for mine in values]
            kind = next(f[1] for f in found if f is not None)
            first = found[0][0] if found[0] is not None else None
            cells = [Cell(f[0] if f is not None else None, kind, (f[0] if f is not None else None) != first)
                     for f in found]
            rows.append(Row(label, cells, any(c.changed for c in cells)))
        out.append(Group(key, titles[key], rows))
    return out
