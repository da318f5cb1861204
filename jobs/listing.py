"""The job list's query side: filters, keyset pagination and counts per status, as plain functions.

Nothing here calls DLC; everything comes from the Job table. A page costs one query for its rows and one
GROUP BY for the counts, whatever the page size and however deep the page.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from typing import Any

from django import forms
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import catalog
from jobs import status as st
from jobs.models import Job, Workspace

# Sort key -> ordered columns (field, descending). Every ordering ends with id, so it is total and a
# keyset cursor is unambiguous even when many rows share a created_at, name or status.
SORTS: dict[str, list[tuple[str, bool]]] = {
    "-created": [("created_at", True), ("id", True)],
    "created": [("created_at", False), ("id", False)],
    "name": [("display_name", False), ("id", False)],
    "-name": [("display_name", True), ("id", True)],
    "status": [("status", False), ("created_at", True), ("id", True)],
}
SORT_LABELS = {
    "-created": "Newest first",
    "created": "Oldest first",
    "name": "Name A–Z",
    "-name": "Name Z–A",
    "status": "Status",
}
DEFAULT_SORT = "-created"
PAGE_SIZES = (10, 20, 50, 100)
DEFAULT_PAGE_SIZE = 20
ACTIVE, FINISHED = "active", "finished"
STATUS_CHOICES = [("", "Any status"), (ACTIVE, "Active"), (FINISHED, "Finished")] + [
    (s, st.label(s)) for s in st.ALL
]
FRAMEWORK_CHOICES = [("", "Any framework")] + sorted(
    {(f.job_type, f.job_type) for f in catalog.FRAMEWORKS.values() if f.job_type}
)
_DATETIME_COLUMNS = {"created_at"}
# Columns a list row never shows (templates/jobs/_row.html). Touching one on a row costs a query per row,
# which the benchmark's "queries at page size 10/20/50/100" figure would show.
ROW_DEFERRED = ("body", "hints", "sealed_secrets", "status_history", "pods", "submit_error",
                "reason_message")


class CursorError(ValueError):
    pass


def encode_cursor(job: Job, sort: str) -> str:
    values = []
    for name, _ in SORTS[sort]:
        value = getattr(job, name)
        values.append(value.isoformat() if isinstance(value, datetime) else value)
    raw = json.dumps({"s": sort, "v": values}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, sort: str) -> list[Any]:
    """The sort-key values a cursor carries; CursorError when it is garbage or made for another sort."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise CursorError("unreadable cursor") from exc
    columns = SORTS[sort]
    values = data.get("v") if isinstance(data, dict) and data.get("s") == sort else None
    if not isinstance(values, list) or len(values) != len(columns):
        raise CursorError("cursor does not match the sort order")
    out: list[Any] = []
    for (name, _), value in zip(columns, values, strict=True):
        if name == "id":
            if not isinstance(value, int) or isinstance(value, bool):
                raise CursorError("bad id in cursor")
        elif name in _DATETIME_COLUMNS:
            parsed = parse_datetime(value) if isinstance(value, str) else None
            if parsed is None:
                raise CursorError("bad time in cursor")
            value = parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)
        elif not isinstance(value, str):
            raise CursorError("bad value in cursor")
        out.append(value)
    return out


def keyset_q(columns: list[tuple[str, bool]], values: list[Any], *, forward: bool = True) -> Q:
    """Rows strictly after (forward) or before the cursor in the given ordering.

    Row-value comparison spelled out as an OR of prefixes, with a plain range bound on the first column
    so the database can seek on the (workspace, created_at, id) index instead of scanning.
    """
    alternatives = Q()
    for i, (name, desc) in enumerate(columns):
        smaller = desc == forward  # forward over a descending column means smaller values
        term = Q(**{f"{name}__{'lt' if smaller else 'gt'}": values[i]})
        for j in range(i):
            term &= Q(**{columns[j][0]: values[j]})
        alternatives |= term
    first, first_desc = columns[0]
    bound = Q(**{f"{first}__{'lte' if first_desc == forward else 'gte'}": values[0]})
    return bound & alternatives


def ordering(sort: str, *, reverse: bool = False) -> list[str]:
    return [("-" if desc != reverse else "") + name for name, desc in SORTS[sort]]


class ListFilters(forms.Form):
    """The list's GET parameters. Invalid values are reported at their field and otherwise ignored."""

    q = forms.CharField(required=False, max_length=256, label="Name")
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
    framework = forms.ChoiceField(required=False, choices=FRAMEWORK_CHOICES, label="Job type")
    owner = forms.CharField(required=False, max_length=150)
    created_from = forms.DateField(required=False, label="Created from",
                                   error_messages={"invalid": "Enter a date as YYYY-MM-DD."})
    created_to = forms.DateField(required=False, label="Created to",
                                 error_messages={"invalid": "Enter a date as YYYY-MM-DD."})
    sort = forms.ChoiceField(required=False, choices=list(SORT_LABELS.items()))
    size = forms.TypedChoiceField(required=False, coerce=int, choices=[(n, n) for n in PAGE_SIZES],
                                  empty_value=DEFAULT_PAGE_SIZE, label="Per page")
    after = forms.CharField(required=False, max_length=2000)
    before = forms.CharField(required=False, max_length=2000)

    def clean_q(self) -> str:
        return self.cleaned_data["q"].strip()

    def clean_sort(self) -> str:
        return self.cleaned_data["sort"] or DEFAULT_SORT

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        start, end = data.get("created_from"), data.get("created_to")
        if start and end and end < start:
            self.add_error("created_to", "The end date is before the start date.")
        sort = data.get("sort") or DEFAULT_SORT
        for name in ("after", "before"):
            if data.get(name):
                try:
                    data[f"{name}_values"] = decode_cursor(data[name], sort)
                except CursorError:
                    self.add_error(name, "This page link is out of date; showing the first page.")
        return data


@dataclass
class Filters:
    """Parsed filters with defaults; built from a ListFilters form, valid or not."""

    q: str = ""
    status: str = ""
    framework: str = ""
    owner: str = ""
    created_from: Any = None
    created_to: Any = None
    sort: str = DEFAULT_SORT
    size: int = DEFAULT_PAGE_SIZE
    after: list[Any] | None = None
    before: list[Any] | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_query(cls, data: Mapping[str, Any]) -> Filters:
        form = ListFilters(data)
        form.is_valid()
        clean = form.cleaned_data
        return cls(
            q=clean.get("q") or "",
            status=clean.get("status") or "",
            framework=clean.get("framework") or "",
            owner=(clean.get("owner") or "").strip(),
            created_from=clean.get("created_from"),
            created_to=clean.get("created_to") if "created_to" not in form.errors else None,
            sort=clean.get("sort") or DEFAULT_SORT,
            size=clean.get("size") or DEFAULT_PAGE_SIZE,
            after=clean.get("after_values"),
            before=None if clean.get("after_values") else clean.get("before_values"),
            errors={k: list(v) for k, v in form.errors.items()},
        )

    def query(self, **changes: Any) -> dict[str, str]:
        """The GET parameters that reproduce these filters (without a cursor), for links and polls."""
        params = {
            "q": self.q, "status": self.status, "framework": self.framework, "owner": self.owner,
            "created_from": self.created_from.isoformat() if self.created_from else "",
            "created_to": self.created_to.isoformat() if self.created_to else "",
            "sort": "" if self.sort == DEFAULT_SORT else self.sort,
            "size": "" if self.size == DEFAULT_PAGE_SIZE else str(self.size),
        }
        params.update(changes)
        return {k: v for k, v in params.items() if v}


def _day_start(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def apply_filters(jobs: QuerySet[Job], f: Filters, *, user=None, with_status: bool = True) -> QuerySet[Job]:
    """Narrow a queryset to the filters. The status filter can be left out, for counts per status."""
    if f.q:
        jobs = jobs.filter(display_name__icontains=f.q)
    if f.framework:
        jobs = jobs.filter(job_type=f.framework)
    if f.owner == "me" and user is not None:
        jobs = jobs.filter(owner=user)
    elif f.owner:
        jobs = jobs.filter(owner__username=f.owner)
    if f.created_from:
        jobs = jobs.filter(created_at__gte=_day_start(f.created_from))
    if f.created_to:
        jobs = jobs.filter(created_at__lt=_day_start(f.created_to + timedelta(days=1)))
    if with_status and f.status:
        jobs = filter_status(jobs, f.status)
    return jobs


def filter_status(jobs: QuerySet[Job], value: str) -> QuerySet[Job]:
    if value == ACTIVE:
        return jobs.exclude(status__in=st.TERMINAL)
    if value == FINISHED:
        return jobs.filter(status__in=st.TERMINAL)
    return jobs.filter(status=value)


@dataclass
class Page:
    jobs: list[Job]
    sort: str
    next_cursor: str | None
    prev_cursor: str | None

    @property
    def first(self) -> bool:
        return self.prev_cursor is None

    @property
    def active_jobs(self) -> list[Job]:
        return [job for job in self.jobs if job.is_active]


def page(jobs: QuerySet[Job], f: Filters) -> Page:
    """One page of rows by keyset: one query, whatever the page size and however deep the page.

    `before` pages are read in reverse order and flipped; if fewer rows than a page are left before the
    cursor we are at the start, so the first page is shown instead (one more query, on that edge only).
    """
    columns = SORTS[f.sort]
    size = f.size
    # A row shows none of the big JSON columns; loading and decoding them cost more than the query itself.
    jobs = jobs.select_related("owner").defer(*ROW_DEFERRED)
    if f.before:
        rows = list(jobs.filter(keyset_q(columns, f.before, forward=False)).order_by(*ordering(f.sort, reverse=True))
                    [: size + 1])
        if len(rows) > size:
            rows = rows[:size][::-1]
            return Page(rows, f.sort, encode_cursor(rows[-1], f.sort), encode_cursor(rows[0], f.sort))
        f = Filters(**{**f.__dict__, "before": None})
    query = jobs.filter(keyset_q(columns, f.after)) if f.after else jobs
    rows = list(query.order_by(*ordering(f.sort))[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    next_cursor = encode_cursor(rows[-1], f.sort) if more and rows else None
    prev_cursor = encode_cursor(rows[0], f.sort) if f.after and rows else None
    return Page(rows, f.sort, next_cursor, prev_cursor)


@dataclass
class Counts:
    by_status: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_status.values())

    @property
    def active(self) -> int:
        return sum(n for s, n in self.by_status.items() if st.is_active(s))

    @property
    def finished(self) -> int:
        return self.total - self.active

    def chips(self) -> list[tuple[str, str, int]]:
        """(status, label, count) for every status present, in lifecycle order."""
        known = [(s, st.label(s), self.by_status[s]) for s in st.ALL if self.by_status.get(s)]
        unknown = [(s, st.label(s), n) for s, n in sorted(self.by_status.items()) if s not in st.ALL and n]
        return known + unknown


def counts(jobs: QuerySet[Job]) -> Counts:
    """Jobs per status in one GROUP BY query."""
    rows = jobs.order_by().values_list("status").annotate(n=Count("id"))
    return Counts({status: n for status, n in rows})


# --- the poll that refreshes active rows -------------------------------------------------------------------

MAX_WATCHED = 200


def row_state(job: Job) -> str:
    """What a row shows that can change while it is on screen: its status, and a refused stop."""
    return f"{job.status}!" if job.stop_error else job.status


def format_watch(jobs: list[Job]) -> str:
    """`id:state` of the active jobs on a page: the poll compares and re-renders only rows that moved."""
    return ",".join(f"{job.pk}:{row_state(job)}" for job in jobs if job.is_active)


def parse_watch(text: str) -> dict[int, str]:
    watch: dict[int, str] = {}
    for item in text.split(",")[:MAX_WATCHED]:
        pk, _, status = item.partition(":")
        if pk.isdigit() and status:
            watch[int(pk)] = status
    return watch


# --- choices for the filter form ---------------------------------------------------------------------------


def owner_choices(workspace: Workspace | None, current: str = "") -> list[str]:
    """Usernames of the workspace's members (one query), plus a filtered-on owner who has left it."""
    names = list(workspace.members.order_by("username").values_list("username", flat=True)) if workspace else []
    if current and current != "me" and current not in names:
        names.append(current)
    return names


def filter_choices() -> dict[str, list[tuple[str, str]]]:
    return {"status": STATUS_CHOICES, "framework": FRAMEWORK_CHOICES, "sort": list(SORT_LABELS.items()),
            "size": [(str(n), str(n)) for n in PAGE_SIZES]}
