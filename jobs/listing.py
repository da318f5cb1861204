"""The job list's query side: filters, name search, keyset pagination, capped counts per status and what a row
shows, as plain functions.

Nothing here calls DLC; everything comes from the Job table. Whatever the page size and however deep the page, a
page costs one query for its rows (two to four for a name search on SQLite, see `_first_rows`) and the counts one
query (two for a name search on SQLite), each bounded (see `counts`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, TypedDict
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.db import OperationalError, connections
from django.db.models import Count, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.fields.related_lookups import RelatedExact
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import catalog, notes, tags
from jobs import status as st
from jobs.jobpage import human_duration
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
FRAMEWORK_CHOICES = [("", "Any job type")] + sorted(
    {(f.job_type, f.job_type) for f in catalog.FRAMEWORKS.values() if f.job_type}
)
_DATETIME_COLUMNS = {"created_at"}
# The only columns a list row shows (`Row`) or a cursor needs: the big JSON ones (body, pods, status history) cost
# more to load and decode than the query itself. Touching another one on a row costs a query per row, which the
# benchmark's "queries at page size 10/20/50/100" figure and tests/test_views_list.py would show.
ROW_FIELDS = ("id", "display_name", "status", "job_type", "created_at", "started_at", "finished_at", "dlc_job_id",
              "stop_error", "owner__username", "run_after_id", "idle_since")


class CursorError(ValueError):
    pass


def encode_cursor(job: Job, sort: str) -> str:
    values = []
    for name, _ in SORTS[sort]:
        value = getattr(job, name)
        values.append(value.isoformat() if isinstance(value, datetime) else value)
    # UTF-8, not \u escapes: a name of 256 CJK characters or emoji would otherwise not fit the form's max_length,
    # and its page's Next link would lead back to the first page.
    raw = json.dumps({"s": sort, "v": values}, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(text: str, sort: str) -> list[Any]:
    """The sort-key values a cursor carries; CursorError when it is garbage or made for another sort."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError) as exc:  # Recursion: "[[[[..."
        raise CursorError("unreadable cursor") from exc
    columns = SORTS[sort]
    values = data.get("v") if isinstance(data, dict) and data.get("s") == sort else None
    if not isinstance(values, list) or len(values) != len(columns):
        raise CursorError("cursor does not match the sort order")
    out: list[Any] = []
    for (name, _), value in zip(columns, values, strict=True):
        if name == "id":
            if not isinstance(value, int) or isinstance(value, bool) or not -2**63 <= value < 2**63:
                raise CursorError("bad id in cursor")
        elif name in _DATETIME_COLUMNS:
            value = _cursor_time(value)
        elif not isinstance(value, str) or "\x00" in value or not _encodable(value):
            # PostgreSQL refuses NUL in text, and neither database takes a lone surrogate ("\ud800" in JSON).
            raise CursorError("bad value in cursor")
        out.append(value)
    return out


def _cursor_time(value: Any) -> datetime:
    """A cursor's time, in UTC; CursorError for one no row can have (2026-13-45, +99:00, beyond year 1-9999 in UTC)."""
    try:
        parsed = parse_datetime(value) if isinstance(value, str) else None
        if parsed is not None:
            return (parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)).astimezone(UTC)
    except (ValueError, OverflowError):
        pass
    raise CursorError("bad time in cursor")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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


# Days a date filter takes: the next day of 9999-12-31 does not exist, nor does 0001-01-01 00:00 east of UTC in UTC.
FIRST_DAY, LAST_DAY = date(1900, 1, 1), date(9998, 12, 31)


def _day_in_range(day: date | None) -> date | None:
    if day is not None and not FIRST_DAY <= day <= LAST_DAY:
        raise forms.ValidationError(f"Enter a date from {FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}.")
    return day


def _unknown(what: str, choices: list[tuple[str, str]]) -> str:
    """A ChoiceField's invalid_choice message naming the values it takes (Django fills in %(value)s)."""
    values = ", ".join(value.replace("%", "%%") for value, _ in choices if value)
    return f"Unknown {what} '%(value)s'. Choose one of: {values}."


class ListFilters(forms.Form):
    """The list's GET parameters. Invalid values are reported at their field and otherwise ignored."""

    q = forms.CharField(required=False, max_length=256, label="Name")
    # Django's own "Select a valid choice" names neither the field nor what it takes: a hand-edited or old link
    # (a job type no longer offered) says both. The API answers the same messages.
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES, error_messages={
        "invalid_choice": _unknown("status", STATUS_CHOICES)})
    framework = forms.ChoiceField(required=False, choices=FRAMEWORK_CHOICES, label="Job type", error_messages={
        "invalid_choice": _unknown("job type", FRAMEWORK_CHOICES)})
    owner = forms.CharField(required=False, max_length=150)
    created_from = forms.DateField(required=False, label="Created from",
                                   error_messages={"invalid": "Enter a date as YYYY-MM-DD."})
    created_to = forms.DateField(required=False, label="Created to",
                                 error_messages={"invalid": "Enter a date as YYYY-MM-DD."})
    # The list API answers these errors too: they name the allowed values, as the page's menus show them.
    sort = forms.ChoiceField(required=False, choices=list(SORT_LABELS.items()), error_messages={
        "invalid_choice": f"Choose one of: {', '.join(SORT_LABELS)}."})
    size = forms.TypedChoiceField(required=False, coerce=int, choices=[(n, n) for n in PAGE_SIZES],
                                  empty_value=DEFAULT_PAGE_SIZE, label="Per page", error_messages={
                                      "invalid_choice": f"Choose one of: {', '.join(map(str, PAGE_SIZES))}."})
    # Repeatable (?tag=team=vision&tag=exp): `key` or `key=value`, all of them must hold (jobs.tags).
    tag = forms.Field(required=False, widget=forms.MultipleHiddenInput, label="Tag")
    # The list's "add a tag" box (jobs/_tag_box.html): one more tag, merged into `tag`. It has a name of its own so
    # that an answer empties the box only when it took the box's value, never what is typed in it meanwhile.
    tag_add = forms.CharField(required=False, strip=False)
    idle = forms.ChoiceField(required=False, choices=[("", "Any"), ("1", "Idle only")], label="Idle only",
                             error_messages={"invalid_choice": "Use idle=1 for idle running jobs only, or leave it "
                                                               "out."})
    after = forms.CharField(required=False, max_length=2000)
    before = forms.CharField(required=False, max_length=2000)

    def clean_created_from(self) -> date | None:
        return _day_in_range(self.cleaned_data["created_from"])

    def clean_created_to(self) -> date | None:
        return _day_in_range(self.cleaned_data["created_to"])

    def clean_q(self) -> str:
        return self.cleaned_data["q"].strip()

    def clean_sort(self) -> str:
        return self.cleaned_data["sort"] or DEFAULT_SORT

    def clean_tag(self) -> list[tuple[str, str | None]]:
        values = self.cleaned_data["tag"] or []
        values = [values] if isinstance(values, str) else list(values)
        added = self.data.get("tag_add") or ""
        if isinstance(added, str) and added.strip():
            values.append(added)
        parsed: list[tuple[str, str | None]] = []
        errors: list[str] = []
        for value in values:
            if not value.strip():
                continue
            try:
                pair = tags.parse(value)
            except ValueError as exc:
                errors.append(str(exc))
                continue
            if pair not in parsed:
                parsed.append(pair)
        if len(parsed) > tags.MAX_FILTER_TAGS:
            errors.append(f"Filter by at most {tags.MAX_FILTER_TAGS} tags.")
            parsed = parsed[:tags.MAX_FILTER_TAGS]
        if errors:
            # The well-formed ones still filter, as the other fields' valid values do (Filters.from_query).
            self.cleaned_data["tag_valid"] = parsed
            raise forms.ValidationError(errors)
        return parsed

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
                    # Not "showing the first page": the API refuses it (400); the page says that itself.
                    self.add_error(name, "Invalid page cursor: this page link is out of date or was not made by "
                                   "this list.")
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
    tags: list[tuple[str, str | None]] = field(default_factory=list)  # (key, value or None for any value)
    idle: bool = False
    took_tag_box: bool = False  # a tag typed in the list's box was taken: the answer empties the box
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
            tags=clean.get("tag", clean.get("tag_valid")) or [],
            idle=clean.get("idle") == "1",
            took_tag_box=bool((clean.get("tag_add") or "").strip()) and "tag" not in form.errors,
            after=clean.get("after_values"),
            before=None if clean.get("after_values") else clean.get("before_values"),
            errors={k: list(v) for k, v in form.errors.items()},
        )

    def query(self, **changes: Any) -> dict[str, Any]:
        """The GET parameters that reproduce these filters (without a cursor), for links and polls; `tag` is a list
        (urlencode with doseq=True)."""
        params = {
            "q": self.q, "status": self.status, "framework": self.framework, "owner": self.owner,
            "created_from": self.created_from.isoformat() if self.created_from else "",
            "created_to": self.created_to.isoformat() if self.created_to else "",
            "sort": "" if self.sort == DEFAULT_SORT else self.sort,
            "size": "" if self.size == DEFAULT_PAGE_SIZE else str(self.size),
            "tag": self.tag_texts, "idle": "1" if self.idle else "",
        }
        params.update(changes)
        return {k: v for k, v in params.items() if v}

    @property
    def tag_texts(self) -> list[str]:
        return [tags.text(key, value) for key, value in self.tags]

    def tag_chips(self) -> list[tuple[str, str]]:
        """(tag, the list's URL without it) for each tag filtered on: the list shows them as removable chips."""
        texts = self.tag_texts
        base = reverse("job_list")
        return [(text, f"{base}?{urlencode(self.query(tag=[t for t in texts if t != text]), doseq=True)}".rstrip("?"))
                for text in texts]


def _day_start(day) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def apply_filters(jobs: QuerySet[Job], f: Filters, *, user=None, with_status: bool = True,
                  with_name: bool = True) -> QuerySet[Job]:
    """Narrow a queryset to the filters. The status filter can be left out, for counts per status; the name search
    too, for `page` and `counts`, which choose how to search names."""
    if f.q and with_name:
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
    if f.tags:
        jobs = filter_tags(jobs, f.tags).jobs
    if f.idle:
        # What jobs.idle flags; the (workspace, status, created) index serves it, as the status filter.
        jobs = jobs.filter(status="Running", idle_since__isnull=False)
    if with_status and f.status:
        jobs = filter_status(jobs, f.status)
    return jobs


# A tag filter first counts, on the tag index (jobtag_ws_key_value), the workspace's jobs with each tag, no further
# than a bound: one query per tag, whatever the page. While the rarest tag has at most FEW_TAGGED jobs, the rows
# query joins its index range and sorts those jobs (SQLite picks that plan without statistics too: the plan test in
# tests/test_tags.py). A more common tag (team=vision on every job) is checked row by row instead, on
# one_jobtag_per_key, while the page walks its own order's index: matches that common stop the walk early, where
# reading them all and sorting them would not (every job of 100k: 200 ms). The bound: a joined row costs ~16 µs to
# read and sort (its owner and note count are read before the sort), ~8 ms for 500; past 500 matches the walk
# reads ~21/500 of the workspace's jobs at most, if the tagged jobs are spread over its history. The counts do the
# same with COUNT_THROUGH_INDEX_MAX as their bound. Nobody reads a job's JSON body.
#
# A page in creation order with a common key=value tag is read from the tag index itself, which holds the jobs'
# creation times in that order (`TagWalk`, `_rows_by_tag`): the next page's entries of the tag, then those jobs.
# Checking a tag 1% of the jobs have along the job index reads ~2,100 jobs for a page, and PostgreSQL would rather
# join all 10,000 tagged jobs and sort them (170 ms at 1M jobs, bench/RESULTS.md); the tag index reads 21.
FEW_TAGGED = 500
# With other filters too (a status, an owner), the entries read for a page are bounded: this many per row asked
# for (a filter keeping 1 in 20 of the tag's jobs still fills a page from them), then the job-order walk above.
TAG_WALK_ROWS_PER_ROW = 20


@dataclass(frozen=True)
class TagWalk:
    """A key=value tag with more than FEW_TAGGED jobs in one workspace, whose index range a page in creation order
    reads (`_rows_by_tag`); `alone`: no other filter, so the tag's next entries are exactly the page's rows."""

    key: str
    value: str
    workspace_id: int
    others: QuerySet[Job]  # the jobs with every other tag filtered on
    alone: bool


@dataclass(frozen=True)
class Tagged:
    jobs: QuerySet[Job]
    through_index: bool  # the rarest tag's few jobs are joined (at most the bound), not checked row by row
    walk: TagWalk | None  # a common key=value tag of one workspace, see `filter_tags`


def filter_tags(jobs: QuerySet[Job], wanted: list[tuple[str, str | None]], *,
                through_index_max: int | None = None) -> Tagged:
    """The jobs with all the tags (key, value or None for any value); whether they are read through the tag index
    (the rarest tag has at most `through_index_max` jobs, FEW_TAGGED unless given) rather than checked per row;
    and, when they are checked per row, the rarest key=value tag, whose index a page in creation order can read."""
    through_index_max = FEW_TAGGED if through_index_max is None else through_index_max
    workspace_id = _one_workspace(jobs)
    sizes = [tags.matching(key, value, workspace_id)[:through_index_max + 1].count() for key, value in wanted]
    rarest = sizes.index(min(sizes))
    through_index = sizes[rarest] <= through_index_max
    valued = [(n, i) for i, (n, (_, value)) in enumerate(zip(sizes, wanted, strict=True)) if value is not None]
    walked = min(valued)[1] if not through_index and valued and workspace_id is not None else None
    others = jobs  # every tag but the walk's: its entries are the walk's ids, a check per row would repeat them
    for i, (key, value) in enumerate(wanted):
        if i == rarest and through_index:
            # A join, not `id IN (...)`: SQLite without statistics walks the workspace's created index for that.
            # One row per job: a job has one value per key (one_jobtag_per_key).
            jobs = jobs.filter(tags__key=key, **({"tags__value": value} if value is not None else {}),
                               **({"tags__workspace_id": workspace_id} if workspace_id is not None else {}))
        else:
            jobs = jobs.filter(tags.tagged(key, value))
            others = others if i == walked else others.filter(tags.tagged(key, value))
    if walked is None:
        return Tagged(jobs, through_index, None)
    key, value = wanted[walked]
    return Tagged(jobs, through_index, TagWalk(key, str(value), workspace_id, others, alone=len(wanted) == 1))


def _one_workspace(jobs: QuerySet[Job]) -> int | None:
    """The workspace the jobs are limited to (access.jobs_in's `workspace=`), so a tag look-up seeks that
    workspace's part of the tag index; None for jobs of several workspaces (the API without ?workspace=)."""
    for node in jobs.query.where.children:
        if isinstance(node, RelatedExact) and getattr(node.lhs, "target", None) is Job._meta.get_field("workspace"):
            return node.rhs if isinstance(node.rhs, int) else None
    return None


def filter_status(jobs: QuerySet[Job], value: str) -> QuerySet[Job]:
    if value == ACTIVE:
        return jobs.exclude(status__in=st.TERMINAL)
    if value == FINISHED:
        return jobs.filter(status__in=st.TERMINAL)
    return jobs.filter(status=value)


# --- name search -------------------------------------------------------------------------------------------
#
# A name search is Django's icontains on every database: a case-insensitive substring, whatever the plan.
# PostgreSQL serves it from the trigram index of migration 0004 and plans with statistics. SQLite has no such
# index type: migration 0007 adds an FTS5 table with the trigram tokenizer over jobs_job.display_name (external
# content: it holds only the index; triggers keep it in step). FTS5 only ever narrows the candidates, and every
# query keeps the icontains condition too, because the two disagree on case outside ASCII: the tokenizer's
# `case_sensitive 0` folds all of Unicode ("é" finds "É"), SQLite's LIKE (icontains) folds ASCII only. A LIKE
# match is always an FTS5 match, so the results are exactly icontains' whatever the plan.

NAME_INDEX = "jobs_job_name_fts"
NAME_INDEX_TRIGGERS = ("jobs_job_name_fts_insert", "jobs_job_name_fts_delete", "jobs_job_name_fts_rename")
MIN_INDEXED_TERM = 3  # the trigram tokenizer finds nothing for 1-2 characters: those scan, as icontains did
# SQLite has no statistics for an FTS5 match, and left alone it always reads every match through the index and
# sorts them: 0.3 ms for a name 1 job in 50,000 has, 80-300 ms for one that 1-10% of a million jobs have, where
# walking the page order and checking names takes 2 ms. So the list first asks the index how many names match,
# up to a limit (0.1-0.7 ms at 1M jobs): a rare term goes through the index, a common one walks (`_first_rows`).
FEW_NAME_MATCHES = 200
# A common term walks at most this many rows per row asked for before going through the index after all
# (a term common elsewhere but rare in this part of the list): 5,250 rows cost ~5 ms at 1M jobs.
SCAN_ROWS_PER_ROW = 250
_NAME_INDEX_DDL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {NAME_INDEX} USING fts5(display_name, content='jobs_job', "
    "content_rowid='id', tokenize='trigram case_sensitive 0', columnsize=0)",
    f"CREATE TRIGGER IF NOT EXISTS {NAME_INDEX_TRIGGERS[0]} AFTER INSERT ON jobs_job BEGIN "
    f"INSERT INTO {NAME_INDEX}(rowid, display_name) VALUES (new.id, new.display_name); END",
    f"CREATE TRIGGER IF NOT EXISTS {NAME_INDEX_TRIGGERS[1]} AFTER DELETE ON jobs_job BEGIN "
    f"INSERT INTO {NAME_INDEX}({NAME_INDEX}, rowid, display_name) VALUES ('delete', old.id, old.display_name); END",
    # Django's save() writes every column: only a real rename touches the index.
    f"CREATE TRIGGER IF NOT EXISTS {NAME_INDEX_TRIGGERS[2]} AFTER UPDATE OF display_name ON jobs_job "
    "WHEN old.display_name IS NOT new.display_name BEGIN "
    f"INSERT INTO {NAME_INDEX}({NAME_INDEX}, rowid, display_name) VALUES ('delete', old.id, old.display_name); "
    f"INSERT INTO {NAME_INDEX}(rowid, display_name) VALUES (new.id, new.display_name); END",
)
_index_ready: dict[str, bool] = {}


def install_name_index(connection, *, fill: bool = True) -> bool:
    """Create the SQLite name index and its triggers where missing, and (`fill`) fill it from jobs_job (1M names:
    ~30 s).

    False, with nothing created, on another database or where SQLite lacks FTS5 or its trigram tokenizer (before
    3.34): name search then scans, as icontains always did.
    """
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        try:
            cursor.execute(_NAME_INDEX_DDL[0])
        except OperationalError:  # "no such module: fts5" / "no such tokenizer: trigram"
            return False
        for sql in _NAME_INDEX_DDL[1:]:
            cursor.execute(sql)
        if fill:
            cursor.execute(f"INSERT INTO {NAME_INDEX}({NAME_INDEX}) VALUES ('rebuild')")
    _index_ready.clear()
    return True


def drop_name_index(connection) -> None:
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for trigger in NAME_INDEX_TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            cursor.execute(f"DROP TABLE IF EXISTS {NAME_INDEX}")
        _index_ready.clear()


def _name_index_parts(connection) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name IN (%s, %s, %s, %s)",
                       [NAME_INDEX, *NAME_INDEX_TRIGGERS])
        return {name for (name,) in cursor.fetchall()}


def repair_name_index(connection) -> bool:
    """Put back the index's triggers if the index exists without them, and refill it; True if it had to.

    On SQLite Django rebuilds a table (new table, copy, drop, rename) for most column changes, and dropping
    jobs_job drops its triggers: the index would silently stop following renames, new and deleted jobs. Run
    after every migrate (jobs.apps).
    """
    if connection.vendor != "sqlite":
        return False
    parts = _name_index_parts(connection)
    if NAME_INDEX not in parts or parts.issuperset(NAME_INDEX_TRIGGERS):
        return False
    return install_name_index(connection)


def name_index_ready(using: str) -> bool:
    """Whether the database has the name index with all its triggers: looked up once per process and database."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return False
    key = str(connection.settings_dict["NAME"])
    if key not in _index_ready:
        _index_ready[key] = _name_index_parts(connection) == {NAME_INDEX, *NAME_INDEX_TRIGGERS}
    return _index_ready[key]


def fts_phrase(text: str) -> str:
    """The user's text as one FTS5 string: within double quotes (doubled inside) every character is literal, so
    quotes, AND/OR/NOT/NEAR, *, ^, parentheses and colons are searched for, never parsed as the query language."""
    return '"' + text.replace('"', '""') + '"'


def _name_index_serves(text: str, using: str) -> bool:
    return len(text) >= MIN_INDEXED_TERM and name_index_ready(using)


def _name_candidates(text: str) -> RawSQL:
    """The ids whose name contains the text, case folded over all of Unicode (a superset of icontains)."""
    return RawSQL(f"SELECT rowid FROM {NAME_INDEX} WHERE {NAME_INDEX} MATCH %s", [fts_phrase(text)])


def _count_candidates(text: str, using: str, limit: int) -> int:
    """How many names in the whole table (every workspace) contain the text, counting no further than limit."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM (SELECT rowid FROM {NAME_INDEX} WHERE {NAME_INDEX} MATCH %s LIMIT %s)",
                       [fts_phrase(text), limit])
        return cursor.fetchone()[0]


# --- pages -------------------------------------------------------------------------------------------------


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


def for_rows(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """Only what a list row shows (ROW_FIELDS), its owner's name and its number of notes included, in the same
    query (the count: a subquery per row on the notes' (job, created) index, see bench/RESULTS.md)."""
    return jobs.select_related("owner").only(*ROW_FIELDS).annotate(note_count=notes.count_per_job())


def page(jobs: QuerySet[Job], f: Filters, *, user=None) -> Page:
    """One page of the jobs matching the filters, by keyset: the same number of queries whatever the page size
    and however deep the page (one more per tag filtered on, `filter_tags`, and one for a common tag's entries,
    `_rows_by_tag`). `jobs` is what the user may see;
    `user` is who "owner=me" means.

    `before` pages are read in reverse order and flipped. Fewer rows than a page before the cursor are the start
    of the list: just those rows, with no previous page and the next one after them. Topping them up with the rows
    after would show again rows the reader has seen: once jobs were added since, following `previous` back from the
    second page would repeat most of it. Only when no row at all is left before the cursor (its rows were
    deleted) is the first page shown instead (one more query, on that edge only).
    """
    columns = SORTS[f.sort]
    size = f.size
    jobs = apply_filters(jobs.select_related("owner"), replace(f, tags=[]), user=user, with_name=False)
    walk = None
    if f.tags:
        found = filter_tags(jobs, f.tags)
        jobs = found.jobs
        if found.walk and f.sort in TAG_WALK_SORTS and not f.q:
            walk = replace(found.walk, alone=found.walk.alone and not _narrowed(f))
    if f.before:
        rows = _first_rows(jobs.filter(keyset_q(columns, f.before, forward=False)), f, reverse=True, walk=walk)
        if rows:
            more = len(rows) > size
            rows = rows[:size][::-1]
            return Page(rows, f.sort, encode_cursor(rows[-1], f.sort), encode_cursor(rows[0], f.sort) if more else None)
        f = replace(f, before=None)
    rows = _first_rows(jobs.filter(keyset_q(columns, f.after)) if f.after else jobs, f, walk=walk)
    more = len(rows) > size
    rows = rows[:size]
    next_cursor = encode_cursor(rows[-1], f.sort) if more and rows else None
    prev_cursor = encode_cursor(rows[0], f.sort) if f.after and rows else None
    return Page(rows, f.sort, next_cursor, prev_cursor)


def _narrowed(f: Filters) -> bool:
    """Whether a filter other than the tags and the name narrows the list."""
    return bool(f.status or f.framework or f.owner or f.created_from or f.created_to or f.idle)


TAG_WALK_SORTS = ("-created", "created")  # the orders the tag index holds (its entries' creation time, job id)


def _rows_by_tag(f: Filters, walk: TagWalk, *, reverse: bool = False) -> list[Job] | None:
    """The first size + 1 rows after the cursor in page order, read from the walk tag's index range: its next
    entries after the cursor in the page's order, then those of `walk.others` by id. None when other filters left
    less than a page among the entries read while more remain: the caller walks the job order.

    PostgreSQL reads the jobs by primary key. SQLite, without statistics, walks the job index from the cursor
    checking ids against the list, as far as the entries reach: what the walk along the job order does, without its
    check of the tag per job. Given as a subquery rather than a list, it would walk from the cursor either way.
    """
    limit = f.size + 1
    columns = SORTS[f.sort]
    tag_columns = [("created_at", columns[0][1]), ("job_id", columns[1][1])]
    entries = tags.matching(walk.key, walk.value, walk.workspace_id)
    jobs = walk.others
    cursor = f.before if reverse else f.after
    if cursor:  # the cursor's values are the job's creation time and id: the entry's own
        entries = entries.filter(keyset_q(tag_columns, cursor, forward=not reverse))
        jobs = jobs.filter(keyset_q(columns, cursor, forward=not reverse))
    entries = entries.order_by(*[("-" if desc != reverse else "") + name for name, desc in tag_columns])
    window = limit if walk.alone else TAG_WALK_ROWS_PER_ROW * limit
    ids = list(entries.values_list("job_id", flat=True)[:window])
    rows = list(jobs.filter(pk__in=ids).order_by(*ordering(f.sort, reverse=reverse))[:limit]) if ids else []
    return rows if len(rows) == limit or len(ids) < window else None


def _first_rows(jobs: QuerySet[Job], f: Filters, *, reverse: bool = False,
                walk: TagWalk | None = None) -> list[Job]:
    """The first size + 1 rows of `jobs` (every filter but the name applied) whose name matches, in page order.

    One query, but a name search of 3+ characters on SQLite picks its plan by how common the term is:
    - at most FEW_NAME_MATCHES names in the table match: read those through the index and sort them (2 queries);
    - else walk the page order checking names, which a common term stops early, within a window of
      SCAN_ROWS_PER_ROW rows per row asked for, found on the covering index (3 queries);
    - and if the window held less than a page (a term common elsewhere, rare here), through the index after all
      (4 queries; time grows with the term's matches in the table: ~5 µs each).
    A page in creation order with a common key=value tag (`walk`, never with a name search) is read from the tag's
    index first (`_rows_by_tag`: two queries, its entries then their jobs; more when other filters keep few).
    """
    if walk is not None and (rows := _rows_by_tag(f, walk, reverse=reverse)) is not None:
        return rows
    order = ordering(f.sort, reverse=reverse)
    limit = f.size + 1
    named = jobs.filter(display_name__icontains=f.q) if f.q else jobs
    if not f.q or jobs.query.is_empty() or not _name_index_serves(f.q, jobs.db):
        return list(named.order_by(*order)[:limit])
    through_index = named.filter(pk__in=_name_candidates(f.q)).order_by(*order)
    if _count_candidates(f.q, jobs.db, FEW_NAME_MATCHES + 1) <= FEW_NAME_MATCHES:
        return list(through_index[:limit])
    columns = SORTS[f.sort]
    window = SCAN_ROWS_PER_ROW * limit
    edge = list(jobs.order_by(*order).values_list(*(name for name, _ in columns))[window:window + 1])
    if not edge:  # fewer rows than the window: walking them all is the bounded scan
        return list(named.order_by(*order)[:limit])
    rows = list(named.filter(keyset_q(columns, list(edge[0]), forward=reverse)).order_by(*order)[:limit])
    return rows if len(rows) == limit else list(through_index[:limit])


# --- counts ------------------------------------------------------------------------------------------------
#
# A count over a million matching jobs reads a million index entries (130 ms on SQLite, 400 ms on PostgreSQL),
# or a million rows when a filter is not in the index (1.1-1.5 s). The list shows "1,000+" instead, as large
# portals do: each status is counted up to the cap, along the (workspace, status, created) index, and the count
# stops there. A count then reads at most cap + 1 index entries per status when nothing else is filtered, and
# (cap + 1) / (share of the status's jobs the filters keep) rows otherwise, never more than the status has.
#
# A name search counts through the name index instead, exactly, while the term has at most COUNT_THROUGH_INDEX_MAX
# matches (~5 µs each). On SQLite, FTS5 says cheaply how many (`_count_candidates`); a more common term counts by
# status as above, which the cap stops early. PostgreSQL has no such cheap count (its trigram index cannot stop
# early, and capping each status costs a trigram index scan per status: 0.5 s for a name 10% of 1M jobs have), so
# it reads at most COUNT_THROUGH_INDEX_MAX + 1 matches in one GROUP BY: exact below, "at least" above.
COUNT_THROUGH_INDEX_MAX = 20_000
# The index every per-status count walks (jobs.models.Job.Meta); looked up so that renaming it fails here, loudly.
_STATUS_INDEX = next(i.name for i in Job._meta.indexes if i.name == "job_ws_status_created")
_STATUS_SLOT = "\x00status"  # a parameter value no filter can produce (forms refuse NUL characters)


def count_cap() -> int:
    """The one place the cap comes from: settings.DLC_LIST_COUNT_CAP (1,000 unless the environment says)."""
    return settings.DLC_LIST_COUNT_CAP


@dataclass(frozen=True)
class Tally:
    """A count that stops at a cap: exact up to it, "at least n" beyond it (`more`)."""

    n: int
    more: bool = False

    def __str__(self) -> str:
        return f"{self.n:,}{'+' if self.more else ''}"

    def __bool__(self) -> bool:
        return bool(self.n)

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.n + other.n, self.more or other.more)


def _sum(tallies: Iterable[Tally]) -> Tally:
    return sum(tallies, Tally(0))


@dataclass
class Counts:
    by_status: dict[str, Tally]

    @property
    def total(self) -> Tally:
        return _sum(self.by_status.values())

    @property
    def active(self) -> Tally:
        return _sum(n for s, n in self.by_status.items() if st.is_active(s))

    @property
    def finished(self) -> Tally:
        return _sum(n for s, n in self.by_status.items() if not st.is_active(s))

    def chips(self) -> list[tuple[str, str, Tally]]:
        """(status, label, count) for every status present, in lifecycle order."""
        known = [(s, st.label(s), self.by_status[s]) for s in st.ALL if self.by_status.get(s)]
        unknown = [(s, st.label(s), n) for s, n in sorted(self.by_status.items()) if s not in st.ALL and n]
        return known + unknown


def counts(jobs: QuerySet[Job], f: Filters | None = None, *, user=None) -> Counts:
    """Jobs per status under every filter but the status one, each counted up to the cap (`count_cap`).

    One query: a capped count per status the console knows, and one for any status it does not (all on the status
    index). A name search: one GROUP BY through the name index (after one query asking FTS5 how many names match,
    on SQLite), see "counts" above. A tag filter: one query per tag first, then one GROUP BY through the tag index
    while a tag has at most COUNT_THROUGH_INDEX_MAX jobs (`filter_tags`).
    """
    f = f or Filters()
    cap = count_cap()
    if jobs.query.is_empty():  # the user may see no workspace
        return Counts({})
    scope = jobs.order_by()
    jobs = apply_filters(scope, replace(f, tags=[]), user=user, with_status=False, with_name=False)
    through_tags = False
    if f.tags:
        found_tags = filter_tags(jobs, f.tags, through_index_max=COUNT_THROUGH_INDEX_MAX)
        jobs, through_tags = found_tags.jobs, found_tags.through_index
    named = jobs.filter(display_name__icontains=f.q) if f.q else jobs
    complete, partial = True, set()
    if through_tags:
        found = _tagged_by_status(named)
    elif f.q and connections[jobs.db].vendor == "postgresql":
        found, complete = _first_matches_by_status(named, COUNT_THROUGH_INDEX_MAX)
    elif f.q and _name_index_serves(f.q, jobs.db) and (
            _count_candidates(f.q, jobs.db, COUNT_THROUGH_INDEX_MAX + 1) <= COUNT_THROUGH_INDEX_MAX):
        found = dict(named.filter(pk__in=_name_candidates(f.q)).values_list("status").annotate(n=Count("id")))
    else:
        found, partial = _capped_counts(named, scope, cap + 1)
    return Counts({status: Tally(min(n, cap), n > cap or not complete or status in partial)
                   for status, n in found.items()})


def _tagged_by_status(jobs: QuerySet[Job]) -> dict[str, int]:
    """Jobs per status, exactly, for jobs read through the tag index (`filter_tags`): one GROUP BY over the tag's
    index range, each job looked up by its id. On SQLite the job table is NOT INDEXED: with statistics (ANALYZE)
    SQLite would rather walk the workspace's status index and look every job's tag up (100k jobs: 47 ms, not 4)."""
    sql, params = _sql(jobs.values_list("status").annotate(n=Count("id")))
    if connections[jobs.db].vendor == "sqlite":
        sql = sql.replace('FROM "jobs_job"', 'FROM "jobs_job" NOT INDEXED', 1)
    with connections[jobs.db].cursor() as cursor:
        cursor.execute(sql, params)
        return dict(cursor.fetchall())


def _first_matches_by_status(jobs: QuerySet[Job], limit: int) -> tuple[dict[str, int], bool]:
    """Statuses of the first `limit` + 1 matches, in one GROUP BY; False when there were more (lower bounds)."""
    sql, params = _sql(jobs.values("status")[:limit + 1])
    with connections[jobs.db].cursor() as cursor:
        cursor.execute(f"SELECT m.status, COUNT(*) FROM ({sql}) m GROUP BY m.status", params)
        found = dict(cursor.fetchall())
    return found, sum(found.values()) <= limit


def _capped_counts(jobs: QuerySet[Job], scope: QuerySet[Job], limit: int) -> tuple[dict[str, int], set[str]]:
    """Matches per status, each counted no further than limit, in one UNION ALL of per-status subqueries; and the
    statuses whose count is a lower bound although under the limit.

    `jobs` is `scope` with the filters applied: jobs of a status the console does not know (DLC may add one) are
    found in the scope first, on the status index, and the filters checked on those few only. They share one
    limit: when it is reached, each unknown status found may have more than it was counted with.
    """
    known = sorted(st.ALL)
    # "Not a known status" as ranges between them, so it seeks the status index instead of reading all of it.
    unknown = Q(status__lt=known[0]) | Q(status__gt=known[-1])
    for low, high in zip(known, known[1:], strict=False):
        unknown |= Q(status__gt=low, status__lt=high)
    branches: list[str] = []
    params: list[Any] = []
    # The branches differ only in the status: compiled once (16 compilations cost more than the query at 1k jobs).
    sql, template = _on_status_index(jobs.filter(status=_STATUS_SLOT).values("id")[:limit])
    slot = template.index(_STATUS_SLOT)
    for i, status in enumerate(known):
        branches.append(f"SELECT {i} AS k, NULL AS status, COUNT(*) AS n FROM ({sql}) b{i}")
        params += [*template[:slot], status, *template[slot + 1:]]
    unknown_ids = scope.filter(unknown).values("id")
    sql, more = _sql(jobs.filter(pk__in=unknown_ids).values("status")[:limit])
    branches.append(f"SELECT {len(known)}, u.status, COUNT(*) FROM ({sql}) u GROUP BY u.status")
    params += more
    found: dict[str, int] = {}
    unknown_found = 0
    with connections[jobs.db].cursor() as cursor:
        cursor.execute(" UNION ALL ".join(branches), params)
        for k, status, n in cursor.fetchall():
            if n:
                found[known[k] if k < len(known) else status] = n
                unknown_found += n if k >= len(known) else 0
    partial = {s for s in found if s not in st.ALL} if unknown_found >= limit else set()
    return found, partial



def _sql(jobs: QuerySet) -> tuple[str, tuple]:
    return jobs.query.get_compiler(using=jobs.db).as_sql()


def _on_status_index(jobs: QuerySet) -> tuple[str, tuple]:
    """The SQL of a per-status count branch, made to walk the (workspace, status, created) index on SQLite.

    Left to choose, SQLite walks the index of another filter when it looks more selective (owner: 1 in 20) and
    checks the status row by row: a rare status then reads all of the owner's jobs (98 ms instead of 25 ms at 1M
    jobs), once per status. On the status index every branch stops after cap + 1 matches or at the end of its
    status, whatever the other filters.
    """
    sql, params = _sql(jobs)
    if connections[jobs.db].vendor == "sqlite":
        sql = sql.replace('FROM "jobs_job"', f'FROM "jobs_job" INDEXED BY "{_STATUS_INDEX}"', 1)
    return sql, params



# --- what a row shows ----------------------------------------------------------------------------------------


class Row(TypedDict):
    """One line of the job table, worked out in Python (a page has 20-100 rows, and in a template a filter, a
    property or a URL reversed costs tens of µs per row), and written as HTML by jobs/templatetags/joblist.py."""

    pk: int
    name: str
    url: str
    status: str
    label: str
    tone: str
    stop_failed: bool
    stop_code: str
    stop_message: str
    job_type: str
    owner: str
    created_iso: str
    created: str
    duration: str
    dlc_job_id: str
    checked: bool
    waits_for: int  # a Waiting job's upstream (jobs.dependencies), else 0
    waits_for_url: str
    notes: int  # the job's notes (for_rows' note_count), 0 for a job read without it
    notes_label: str
    idle: bool  # running idle (jobs.idle): a column of the row, no query of its own


def rows(jobs: Iterable[Job], checked: Iterable[int] = ()) -> list[Row]:
    """The rows for these jobs; `checked` are the ids whose box stays ticked."""
    checked = set(checked)
    # One URL reversed for all rows: the detail URL with the id swapped in (no converter changes an int).
    url_pattern = reverse("job_detail", args=[987654321]).rpartition("987654321")
    now = timezone.now()
    out = []
    for job in jobs:
        created = timezone.localtime(job.created_at)
        if job.started_at:
            duration = human_duration((job.finished_at or now) - job.started_at)
        else:
            duration = "—"
        stop_error = job.stop_error if isinstance(job.stop_error, dict) else {}
        waits_for = job.run_after_id if job.run_after_id and job.status == st.WAITING else 0
        note_count = getattr(job, "note_count", 0) or 0
        out.append(Row(
            pk=job.pk,
            name=job.display_name,
            url=f"{url_pattern[0]}{job.pk}{url_pattern[2]}",
            status=job.status,
            label=st.label(job.status),
            tone=st.tone(job.status),
            stop_failed=bool(stop_error),
            stop_code=str(stop_error.get("Code", "")),
            stop_message=str(stop_error.get("Message", "")),
            job_type=job.job_type or "—",
            owner=(job.owner.get_username() if job.owner_id else "") or "—",
            created_iso=created.isoformat(),
            created=f"{created.year:04d}-{created.month:02d}-{created.day:02d} "
                    f"{created.hour:02d}:{created.minute:02d}:{created.second:02d}",
            duration=duration,
            dlc_job_id=job.dlc_job_id or "—",
            checked=job.pk in checked,
            waits_for=waits_for,
            waits_for_url=f"{url_pattern[0]}{waits_for}{url_pattern[2]}" if waits_for else "",
            notes=note_count,
            notes_label=notes.count_label(note_count) if note_count else "",
            idle=job.idle_since is not None and job.status == "Running",
        ))
    return out


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
        # ASCII digits only ("²".isdigit() is true, int("²") fails) and no longer than an id can be.
        if pk.isascii() and pk.isdigit() and len(pk) <= 18 and status:
            watch[int(pk)] = status
    return watch


# --- choices for the filter form ---------------------------------------------------------------------------


def owner_choices(workspace: Workspace | None, current: str = "") -> list[str]:
    """Usernames of the workspace's members (one query), plus a filtered-on owner who has left it."""
    names = list(workspace.members.order_by("username").values_list("username", flat=True)) if workspace else []
    if current and current != "me" and current not in names:
        names.append(current)
    return names


def filter_choices(f: Filters, owners: list[str]) -> dict[str, list[tuple[str, str, bool]]]:
    """(value, label, selected) for each select of the filter form: comparing in the template costs more."""
    lists = {
        "status": STATUS_CHOICES,
        "framework": FRAMEWORK_CHOICES,
        "owner": [("", "Anyone"), ("me", "Me")] + [(name, name) for name in owners],
        "sort": list(SORT_LABELS.items()),
        "size": [(str(n), str(n)) for n in PAGE_SIZES],
    }
    current = {"status": f.status, "framework": f.framework, "owner": f.owner, "sort": f.sort, "size": str(f.size)}
    return {name: [(value, label, value == current[name]) for value, label in choices]
            for name, choices in lists.items()}
