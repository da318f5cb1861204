"""localdlc's own SQLite store (WAL): jobs as JSON documents plus indexed columns, events, templates.

One connection guarded by one lock: the HTTP threads and the scheduler thread all serialise through it.
That is simple, safe, and far faster than this service ever needs (a write is well under a millisecond).
Every job mutation goes through update_job(), a read-modify-write under the lock, so concurrent
StopJob/UpdateJob calls and scheduler transitions never lose each other's changes.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id       TEXT PRIMARY KEY,
    created_at   REAL NOT NULL,
    workspace_id TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    deleted      INTEGER NOT NULL DEFAULT 0,
    doc          TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs (deleted, created_at);
CREATE INDEX IF NOT EXISTS jobs_ws_created ON jobs (workspace_id, deleted, created_at);
CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status);
CREATE TABLE IF NOT EXISTS events (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id  TEXT NOT NULL,
    pod_id  TEXT,
    ts      REAL NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events (job_id, pod_id, ts);
CREATE TABLE IF NOT EXISTS templates (
    template_id  TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL,
    deleted      INTEGER NOT NULL DEFAULT 0,
    doc          TEXT NOT NULL
);
"""


class Store:
    """Thread-safe persistence; documents go in and come out as plain dicts (deep copies)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable across a process kill (only an OS crash can lose the last commits).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- jobs ----------------------------------------------------------------------------------------------
    def insert_job(self, doc: dict[str, Any]) -> bool:
        """Insert a new job; False if the id is taken (the caller draws another id)."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO jobs (job_id, created_at, workspace_id, status, deleted, doc) "
                    "VALUES (?, ?, ?, ?, 0, ?)",
                    (doc["JobId"], doc["created"], doc.get("WorkspaceId") or "", doc["Status"],
                     json.dumps(doc)),
                )
            except sqlite3.IntegrityError:
                return False
            return True

    def get_job(self, job_id: str, include_deleted: bool = False) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT doc, deleted FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        if row is None or (row[1] and not include_deleted):
            return None
        return json.loads(row[0])

    def update_job(self, job_id: str, mutate: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
        """Read-modify-write one job atomically; returns the new document (None if missing)."""
        with self._lock:
            row = self._db.execute("SELECT doc FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
            if row is None:
                return None
            doc = json.loads(row[0])
            mutate(doc)
            self._db.execute(
                "UPDATE jobs SET status = ?, deleted = ?, workspace_id = ?, doc = ? WHERE job_id = ?",
                (doc["Status"], 1 if doc.get("IsDeleted") else 0, doc.get("WorkspaceId") or "",
                 json.dumps(doc), job_id),
            )
            return copy.deepcopy(doc)

    def list_jobs(self, created_from: float | None = None, created_to: float | None = None,
                  include_deleted: bool = False, job_ids: set[str] | None = None,
                  workspace_id: str | None = None) -> list[dict[str, Any]]:
        """Jobs by creation time; `job_ids` / `workspace_id` narrow in SQL, so a console syncing 10k jobs
        100 ids at a time does not make every call decode every document."""
        where, args = self._where(created_from, created_to, include_deleted, job_ids, workspace_id)
        with self._lock:
            rows = self._db.execute(f"SELECT doc FROM jobs WHERE {where}", args).fetchall()
        return [json.loads(r[0]) for r in rows]

    def page_jobs(self, created_from: float | None, created_to: float | None, *, order: str, limit: int,
                  offset: int = 0, job_ids: set[str] | None = None,
                  workspace_id: str | None = None) -> tuple[list[dict[str, Any]], int]:
        """One page of list_jobs' jobs (not deleted) ordered by creation time then id ("asc" or "desc"), and
        how many there are in all: only the page's documents are decoded."""
        where, args = self._where(created_from, created_to, False, job_ids, workspace_id)
        direction = {"asc": "ASC", "desc": "DESC"}[order]
        with self._lock:  # one connection behind one lock: no write lands between the two statements
            total = self._db.execute(f"SELECT COUNT(*) FROM jobs WHERE {where}", args).fetchone()[0]
            rows = self._db.execute(
                f"SELECT doc FROM jobs WHERE {where} ORDER BY created_at {direction}, job_id {direction} "
                "LIMIT ? OFFSET ?", [*args, limit, offset]).fetchall()
        return [json.loads(r[0]) for r in rows], total

    @staticmethod
    def _where(created_from: float | None, created_to: float | None, include_deleted: bool,
               job_ids: set[str] | None, workspace_id: str | None) -> tuple[str, list[Any]]:
        sql = "1=1"
        args: list[Any] = []
        # With ids, "+" keeps SQLite on the primary key instead of range-scanning an index of the workspace's
        # or of every job.
        plus = "+" if job_ids is not None else ""
        if not include_deleted:
            sql += f" AND {plus}deleted = 0"
        if job_ids is not None:
            sql += f" AND job_id IN ({','.join('?' for _ in job_ids)})"
            args.extend(job_ids)
        if workspace_id is not None:
            sql += f" AND {plus}workspace_id = ?"
            args.append(workspace_id)
        if created_from is not None:
            sql += f" AND {plus}created_at >= ?"
            args.append(created_from)
        if created_to is not None:
            sql += f" AND {plus}created_at <= ?"
            args.append(created_to)
        return sql, args

    def jobs_in_status(self, statuses: list[str]) -> list[dict[str, Any]]:
        marks = ",".join("?" for _ in statuses)
        with self._lock:
            rows = self._db.execute(
                f"SELECT doc FROM jobs WHERE deleted = 0 AND status IN ({marks}) ORDER BY created_at",
                statuses).fetchall()
        return [json.loads(r[0]) for r in rows]

    # -- events --------------------------------------------------------------------------------------------
    def add_event(self, job_id: str, pod_id: str | None, ts: float, message: str) -> None:
        with self._lock:
            self._db.execute("INSERT INTO events (job_id, pod_id, ts, message) VALUES (?, ?, ?, ?)",
                             (job_id, pod_id, ts, message))

    def events(self, job_id: str, pod_id: str | None, start: float, end: float,
               limit: int) -> list[tuple[float, str]]:
        """Oldest-first events in [start, end]; the newest `limit` of them when there are more."""
        sql = "SELECT ts, message FROM events WHERE job_id = ? AND ts >= ? AND ts <= ?"
        args: list[Any] = [job_id, start, end]
        if pod_id is not None:
            sql += " AND pod_id = ?"
            args.append(pod_id)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(limit)
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [(r[0], r[1]) for r in reversed(rows)]

    # -- templates -----------------------------------------------------------------------------------------
    def insert_template(self, doc: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT INTO templates (template_id, workspace_id, deleted, doc) VALUES (?, ?, 0, ?)",
                             (doc["TemplateId"], doc.get("WorkspaceId") or "", json.dumps(doc)))

    def get_template(self, template_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT doc FROM templates WHERE template_id = ? AND deleted = 0",
                                   (template_id,)).fetchone()
        return None if row is None else json.loads(row[0])

    def update_template(self, template_id: str,
                        mutate: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT doc FROM templates WHERE template_id = ? AND deleted = 0",
                                   (template_id,)).fetchone()
            if row is None:
                return None
            doc = json.loads(row[0])
            mutate(doc)
            self._db.execute("UPDATE templates SET deleted = ?, doc = ? WHERE template_id = ?",
                             (1 if doc.get("deleted") else 0, json.dumps(doc), template_id))
            return copy.deepcopy(doc)

    def list_templates(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT doc FROM templates WHERE deleted = 0").fetchall()
        return [json.loads(r[0]) for r in rows]
