"""Job tags as rows (JobTag), for the job list's tag filter: what a job's tags are, writing them where a job's
body is set, filling them for jobs made before migration 0030, and reading a `tag` filter (`key` or `key=value`).

A job's tags are its body's Settings.Tags, the wizard's Tags, as sent to DLC. The console's own idempotency tag
(jobs.dlc.IDEMPOTENCY_TAG_KEY) is not a user tag: it is added on the way out (jobs.lifecycle.wire_body) and never
stored, and is skipped here should a body carry it anyway (an imported job's listing does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from jobs import catalog, dlc
from jobs.models import Job, JobTag
from jobs.spec.rules import TAG_KEY_CHARSET, TAG_KEY_RE

MAX_FILTER_TAGS = 10
# What the wizard lets a key be (jobs.spec.rules): a filter for anything else can match nothing, so it is an error.
FORMAT_HELP = f"Write a tag as key or key=value, e.g. team=vision, a key of {TAG_KEY_CHARSET}"


def pairs(body: Any) -> list[tuple[str, str]]:
    """The user tags of a CreateJob body, as (key, value), cut to the columns' lengths (an imported job's tags were
    not checked by the console)."""
    settings_ = body.get("Settings") if isinstance(body, dict) else None
    tags = settings_.get("Tags") if isinstance(settings_, dict) else None
    if not isinstance(tags, dict):
        return []
    out: dict[str, str] = {}
    for key, value in tags.items():
        if not isinstance(key, str) or not key or is_reserved(key):
            continue
        shown = "" if value is None else str(value)
        out.setdefault(key[:catalog.MAX_TAG_KEY_LENGTH], shown[:catalog.MAX_TAG_VALUE_LENGTH])
    return list(out.items())


def is_reserved(key: object) -> bool:
    """Whether a tag key is the console's own (dlc.IDEMPOTENCY_TAG_KEY): the one test every place that drops it
    (import, clone, compare, this module) goes through, whatever shape its tags come in."""
    return key == dlc.IDEMPOTENCY_TAG_KEY


def user_tags(tags: Mapping[Any, Any]) -> dict[Any, Any]:
    """A plain tags map (Settings.Tags) without the console's own tag, as a new dict."""
    return {key: value for key, value in tags.items() if not is_reserved(key)}


def without_reserved(body: Any) -> Any:
    """A copy of the body without the console's own tag (dlc.IDEMPOTENCY_TAG_KEY, which jobs.spec.rules refuses from
    a person) in Settings.Tags, nor a Settings.Tags or Settings left empty; any other body as given. An imported
    GetJob of a console job carries that tag: its copy gets its own when submitted."""
    settings_ = body.get("Settings") if isinstance(body, dict) else None
    tags = settings_.get("Tags") if isinstance(settings_, dict) else None
    if not isinstance(tags, dict):
        return body
    kept = user_tags(tags)
    if len(kept) == len(tags):
        return body
    body = {**body, "Settings": {**settings_, "Tags": kept}}
    if not body["Settings"]["Tags"]:
        del body["Settings"]["Tags"]
    if not body["Settings"]:
        del body["Settings"]
    return body


def write(job: Job, *, new: bool = False) -> None:
    """Make the job's tag rows what its body says, in the caller's transaction (Job.save calls it for a new job:
    nothing to delete then, and no query at all for a job without tags)."""
    if not new:
        JobTag.objects.filter(job=job).delete()
    rows = [JobTag(job=job, workspace_id=job.workspace_id, created_at=job.created_at, key=key, value=value)
            for key, value in pairs(job.body)]
    if rows:
        JobTag.objects.bulk_create(rows)


def fill(job_model: type = Job, tag_model: type = JobTag, *, batch: int = 2000) -> int:
    """Tag rows for every job that has none yet, `batch` jobs at a time by id (migration 0030; rerunnable, and models
    are passed in so the migration hands in its historical ones: 0030's has no created_at, 0038 fills it). How
    many rows it wrote."""
    written, last = 0, 0
    dated = any(f.name == "created_at" for f in tag_model._meta.get_fields())
    while True:
        chunk = list(job_model.objects.filter(pk__gt=last).order_by("pk")
                     .values_list("pk", "workspace_id", "body", "created_at")[:batch])
        if not chunk:
            return written
        last = chunk[-1][0]
        done = set(tag_model.objects.filter(job_id__in=[row[0] for row in chunk]).values_list("job_id", flat=True))
        rows = [tag_model(job_id=pk, workspace_id=ws, key=key, value=value, **({"created_at": at} if dated else {}))
                for pk, ws, body, at in chunk if pk not in done for key, value in pairs(body)]
        tag_model.objects.bulk_create(rows, batch_size=500)
        written += len(rows)


def parse(text: str) -> tuple[str, str | None]:
    """A `tag` filter as (key, value), value None for "any value"; ValueError saying why for a malformed one."""
    key, eq, value = text.strip().partition("=")
    key = key.strip()
    if not key or not TAG_KEY_RE.fullmatch(key):
        raise ValueError(f"'{text[:80]}' is not a tag. {FORMAT_HELP}.")
    if "\x00" in value:  # PostgreSQL refuses NUL in text
        raise ValueError("A tag value cannot contain a NUL character.")
    if len(key) > catalog.MAX_TAG_KEY_LENGTH or len(value) > catalog.MAX_TAG_VALUE_LENGTH:
        raise ValueError(f"Tag keys are at most {catalog.MAX_TAG_KEY_LENGTH} characters and values at most "
                         f"{catalog.MAX_TAG_VALUE_LENGTH}.")
    return key, (value if eq else None)


def text(key: str, value: str | None) -> str:
    """A parsed filter written back as the `tag` parameter."""
    return key if value is None else f"{key}={value}"


def matching(key: str, value: str | None, workspace_id: int | None) -> QuerySet[JobTag]:
    """The rows of the jobs tagged key (=value), of one workspace when it is known: a range of jobtag_ws_key_value."""
    rows = JobTag.objects.filter(key=key)
    if value is not None:
        rows = rows.filter(value=value)
    if workspace_id is not None:
        rows = rows.filter(workspace_id=workspace_id)
    return rows


def tagged(key: str, value: str | None) -> Exists:
    """"This job has the tag", checked per job on one_jobtag_per_key (job, key)."""
    rows = JobTag.objects.filter(job_id=OuterRef("pk"), key=key)
    return Exists(rows.filter(value=value) if value is not None else rows)
