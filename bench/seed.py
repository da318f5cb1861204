"""Fast bulk insertion of realistic job rows: raw executemany on SQLite, COPY on PostgreSQL.

Rows look like a team's years of history: ~90% finished, a few percent active, 20 owners, several frameworks,
names `<project>-<model>-<run>` (100 projects, so a project name matches ~1% of jobs), created_at spread over
three years with the newest last, and bodies/status histories/pods of realistic size. Every column of Job is
filled from the model's own defaults, so columns other engineers add keep working.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

PROJECTS = [f"proj{n:02d}" for n in range(100)]
SEARCH_TERM = "proj42"  # ~1% of the names
RARE_TERM = "needle"  # one name in 50,000
MODELS = ["llama", "bert", "resnet", "vit", "t5", "gpt2", "whisper", "sdxl", "mixtral", "qwen"]
# (status, weight): mostly finished, a few percent active, as on a busy team's workspace.
STATUSES = [("Succeeded", 70), ("Failed", 12), ("Stopped", 8), ("Running", 4), ("Queuing", 2),
            ("EnvPreparing", 1), ("Creating", 1), ("SubmitFailed", 1), ("Submitting", 1)]
JOB_TYPES = [("PyTorchJob", 60), ("TFJob", 20), ("XGBoostJob", 10), ("MPIJob", 10)]
FILTER_STATUS, FILTER_TYPE = "Failed", "TFJob"  # the "filtered" page: ~12% x 20% = 2.4% of jobs
# Every job is tagged team=vision (BODY); one in TAG_EVERY also experiment=ablation-<0..4>, so the "tagged" page's
# tag is on 1% of the jobs, like the searched name.
TAG_EVERY, TAG_VALUES = 20, 5
FILTER_TAG = ("experiment", "ablation-2")
OWNERS = 20
SPAN = timedelta(days=3 * 365)
EPOCH = datetime(2023, 1, 1, tzinfo=UTC)
MAX_ROWS = 2_000_000  # created_at steps are fixed so that incremental seeding keeps the order

BODY = {
    "DisplayName": "", "JobType": "PyTorchJob", "WorkspaceId": "ws-bench",
    "UserCommand": "python train.py --epochs 10 --lr 3e-4 --batch-size 256 --data /mnt/data/imagenet",
    "JobSpecs": [{"Type": "Master", "PodCount": 1, "Image": "registry.example/pytorch:2.3-cuda12",
                  "EcsSpec": "ecs.g6.xlarge"},
                 {"Type": "Worker", "PodCount": 4, "Image": "registry.example/pytorch:2.3-cuda12",
                  "EcsSpec": "ecs.g6.xlarge"}],
    "DataSources": [{"DataSourceId": "d-abc123", "MountPath": "/mnt/data"}],
    "Envs": {"NCCL_DEBUG": "WARN", "PYTHONUNBUFFERED": "1"},
    "Settings": {"Tags": {"team": "vision"}, "JobReservedMinutes": 0},
}


def _weighted(choices: list[tuple[str, int]]) -> list[str]:
    return [value for value, weight in choices for _ in range(weight)]


def _history(status: str, created: datetime) -> list[dict[str, Any]]:
    steps = ["Creating", "Queuing", "EnvPreparing", "Running", status]
    return [{"Status": s, "StartTime": (created + timedelta(seconds=30 * i)).isoformat()} for i, s in
            enumerate(dict.fromkeys(steps))]


def make_users(workspace, count: int = OWNERS) -> list[int]:
    """The workspace's members (created once) and their ids."""
    from django.contrib.auth import get_user_model

    from jobs.models import Membership

    user_model = get_user_model()
    ids = []
    for n in range(count):
        user, _ = user_model.objects.get_or_create(username=f"user{n:02d}")
        Membership.objects.get_or_create(user=user, workspace=workspace, defaults={"role": Membership.MEMBER})
        ids.append(user.pk)
    return ids


def tags_of(n: int) -> dict[str, str]:
    """The user tags of job number n (its body's Settings.Tags)."""
    tags = dict(BODY["Settings"]["Tags"])
    if n % TAG_EVERY == 7:
        tags[FILTER_TAG[0]] = f"ablation-{(n // TAG_EVERY) % TAG_VALUES}"
    return tags


def rows(workspace_id: int, owner_ids: list[int], start: int, stop: int, seed: int = 7):
    """Field values (attname -> Python value) for jobs number start..stop-1 of the workspace's history."""
    rnd = random.Random(seed * 1_000_003 + start)
    statuses, types = _weighted(STATUSES), _weighted(JOB_TYPES)
    step = SPAN / MAX_ROWS
    for n in range(start, stop):
        created = EPOCH + step * n
        status = rnd.choice(statuses)
        name = f"{rnd.choice(PROJECTS)}-{rnd.choice(MODELS)}-{n:07d}"
        if n % 50_000 == 25_000:
            name = f"{RARE_TERM}-{name}"
        submitted = status not in ("Submitting", "SubmitFailed")
        ended = status in ("Succeeded", "Failed", "Stopped", "SubmitFailed")
        yield {
            "workspace_id": workspace_id,
            "owner_id": owner_ids[n % len(owner_ids)],
            "display_name": name,
            "job_type": rnd.choice(types),
            "body": {**BODY, "DisplayName": name, "Settings": {**BODY["Settings"], "Tags": tags_of(n)}},
            "idempotency_tag": uuid.UUID(int=rnd.getrandbits(128), version=4),
            "dlc_job_id": f"dlc{workspace_id:03d}{n:012x}" if submitted else "",
            "status": status,
            "status_history": _history(status, created) if submitted else [],
            "pods": [{"PodId": f"dlc{n:x}-master-0", "Type": "Master", "Status": status, "Ip": "10.0.0.1"}]
            if submitted else [],
            "created_at": created,
            "submitted_at": created + timedelta(seconds=5) if submitted else None,
            "started_at": created + timedelta(seconds=90) if submitted and status != "Queuing" else None,
            "finished_at": created + timedelta(hours=2) if ended else None,
        }


def insert(workspace_id: int, owner_ids: list[int], start: int, stop: int, chunk: int = 20_000) -> None:
    """Insert jobs start..stop-1, in chunks, in the fastest way the database offers."""
    from django.db import connection

    from jobs import listing

    if not listing.name_index_ready(connection.alias):
        _insert(workspace_id, owner_ids, start, stop, chunk)
        return
    # SQLite's name index (migration 0007): its insert trigger adds ~45% to a bulk insert (100k jobs: 25 -> 36 s);
    # indexing the new names in one statement after it takes ~1.3 s per 100k. The trigger is put back even if the
    # insert fails (and jobs.listing.repair_name_index would after the next migrate).
    trigger = listing.NAME_INDEX_TRIGGERS[0]
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM jobs_job")
        (last_id,) = cursor.fetchone()
        cursor.execute(f"DROP TRIGGER {trigger}")
    try:
        _insert(workspace_id, owner_ids, start, stop, chunk)
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {listing.NAME_INDEX}(rowid, display_name) "
                           "SELECT id, display_name FROM jobs_job WHERE id > %s", [last_id])
        print(f"  indexed {stop - start:,} names for search in {time.perf_counter() - started:.1f} s", flush=True)
    finally:
        listing.install_name_index(connection, fill=False)


def _insert(workspace_id: int, owner_ids: list[int], start: int, stop: int, chunk: int) -> None:
    from django.db import connection, transaction

    from jobs.models import Job

    fields = [f for f in Job._meta.concrete_fields if f.attname != "id"]
    columns = [f.column for f in fields]
    defaults = {f.attname: f.get_default() for f in fields}
    pg = connection.vendor == "postgresql"

    def raw(values: dict[str, Any]) -> list[Any]:
        out = []
        for f in fields:
            value = values.get(f.attname, defaults[f.attname])
            if pg and isinstance(value, dict | list):
                out.append(json.dumps(value))  # COPY takes JSON as text
            else:
                out.append(f.get_db_prep_save(value, connection))
        return out

    table = connection.ops.quote_name(Job._meta.db_table)
    quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        cursor.execute("SELECT COALESCE(MAX(id), 0) FROM jobs_job")
        (last_id,) = cursor.fetchone()
    for begin in range(start, stop, chunk):
        batch = [raw(v) for v in rows(workspace_id, owner_ids, begin, min(stop, begin + chunk))]
        with transaction.atomic(), connection.cursor() as cursor:
            if pg:
                with cursor.cursor.copy(f"COPY {table} ({quoted}) FROM STDIN") as copy:
                    for row in batch:
                        copy.write_row(row)
            else:
                marks = ", ".join(["%s"] * len(columns))
                cursor.executemany(f"INSERT INTO {table} ({quoted}) VALUES ({marks})", batch)
            last_id = _insert_tags(cursor, workspace_id, last_id)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _insert_tags(cursor, workspace_id: int, last_id: int) -> int:
    """The tag rows (jobs.tags) of the jobs inserted after last_id, as Job.save would write them; their number n
    is the end of their name. The new last id."""
    cursor.execute("SELECT id, display_name, created_at FROM jobs_job WHERE id > %s ORDER BY id", [last_id])
    made = cursor.fetchall()
    tag_rows = [(pk, workspace_id, created, key, value) for pk, name, created in made
                for key, value in tags_of(int(name.rsplit("-", 1)[1])).items()]
    cursor.executemany("INSERT INTO jobs_jobtag (job_id, workspace_id, created_at, key, value) "
                       "VALUES (%s, %s, %s, %s, %s)", tag_rows)
    return made[-1][0] if made else last_id
