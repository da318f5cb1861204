"""Pod logs that outlive their pods: when a job ends, every pod's whole log is copied, compressed, into
PodLog, and read back from there once DLC no longer has it.

GetPodLogs answers at most MaxLines lines of a time range (the last ones). A range that comes back full may
have been cut, so it is split in two and each half asked for again, until every range comes back short.

The archive holds the log masked (jobs.logmask: the job's secret values as ********), as every reader gets it.
"""

from __future__ import annotations

import logging
import zlib
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from jobs import dlc, logmask
from jobs import status as st
from jobs.models import Job, PodLog

log = logging.getLogger(__name__)

PAGE_LINES = 2000  # GetPodLogs' default MaxLines
# A range this short that still comes back full is kept as it is (and the cut is said in the log).
SHORTEST_RANGE = timedelta(milliseconds=1)
# Pods' clocks and DLC's log timestamps are not ours: ask a little wider than the pod's own times.
MARGIN = timedelta(minutes=1)


def read(job: Job, pod_id: str) -> list[str] | None:
    """The archived log of a pod, or None when there is none (the job has not ended, or it was not archived)."""
    row = PodLog.objects.filter(job=job, pod_id=pod_id).only("content", "lines").first()
    if row is None:
        return None
    if not row.lines:
        return []
    return zlib.decompress(bytes(row.content)).decode("utf-8").split("\n")


def _when(value: Any) -> datetime | None:
    try:
        parsed = parse_datetime(str(value)) if value else None
    except ValueError:  # well formed but no such time (2026-02-30): as if DLC had not said
        return None
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, timezone.get_fixed_timezone(0))
    return parsed


def pod_range(job: Job, pod: dict[str, Any]) -> tuple[datetime, datetime]:
    """The time range a pod can have logged in, from its own times, else the job's."""
    now = timezone.now()
    start = _when(pod.get("GmtCreateTime")) or _when(pod.get("GmtStartTime")) or job.created_at
    end = _when(pod.get("GmtFinishTime")) or job.finished_at or now
    end = min(now, end + MARGIN)
    # Whole seconds, rounded outwards: the API's times are usually second-granular, lines are not.
    if end.microsecond:
        end = end.replace(microsecond=0) + timedelta(seconds=1)
    return (start - MARGIN).replace(microsecond=0), end


def fetch_lines(workspace, job_id: str, pod_id: str, start: datetime, end: datetime, *,
                page_lines: int = PAGE_LINES) -> list[str]:
    """Every log line of a pod between start and end (both included), in order, paging as needed."""
    lines = dlc.get_pod_logs(
        workspace, job_id, pod_id, max_lines=page_lines, read_timeout_ms=30000,
        start_time=dlc.api_time(start), end_time=dlc.api_time(end),
    )
    if len(lines) < page_lines:
        return lines
    if end - start <= SHORTEST_RANGE:
        # Too many lines in one instant to split by time: ask for the whole range as a download.
        whole = dlc.get_pod_logs(
            workspace, job_id, pod_id, max_lines=page_lines, read_timeout_ms=30000, download_to_file=True,
            start_time=dlc.api_time(start), end_time=dlc.api_time(end),
        )
        if len(whole) > len(lines):
            return whole
        log.warning("pod %s of %s logged more than %s lines within %s; keeping the last ones",
                    pod_id, job_id, page_lines, SHORTEST_RANGE)
        return [f"[console] earlier lines of this instant were not archived (more than {page_lines})", *lines]
    # Times are sent to the microsecond, so [start, middle] and [middle + 1us, end] leave no gap between them.
    middle = start + (end - start) / 2
    return (fetch_lines(workspace, job_id, pod_id, start, middle, page_lines=page_lines)
            + fetch_lines(workspace, job_id, pod_id, middle + timedelta(microseconds=1), end,
                          page_lines=page_lines))


def fetch_newest(workspace, job_id: str, pod_id: str, start: datetime, end: datetime, *, limit: int,
                 page_lines: int = PAGE_LINES) -> tuple[list[str], bool]:
    """At least the last `limit` log lines of a pod between start and end (all of them if fewer), in order, and
    whether earlier lines of the range were left unread.

    Paged like fetch_lines, but from the end, and an earlier half is not asked for once the later one holds
    `limit` lines: a range of millions of lines costs about as many calls as `limit` lines, not a call per page.
    """
    lines = dlc.get_pod_logs(
        workspace, job_id, pod_id, max_lines=page_lines, read_timeout_ms=30000,
        start_time=dlc.api_time(start), end_time=dlc.api_time(end),
    )
    if len(lines) < page_lines:
        return lines, False
    if len(lines) >= limit:  # the answer is the range's last lines
        return lines, True
    if end - start <= SHORTEST_RANGE:
        return fetch_lines(workspace, job_id, pod_id, start, end, page_lines=page_lines), False
    middle = start + (end - start) / 2
    later, cut = fetch_newest(workspace, job_id, pod_id, middle + timedelta(microseconds=1), end, limit=limit,
                              page_lines=page_lines)
    if cut or len(later) >= limit:
        return later, True
    earlier, cut = fetch_newest(workspace, job_id, pod_id, start, middle, limit=limit - len(later),
                                page_lines=page_lines)
    return earlier + later, cut


def fetch_oldest(workspace, job_id: str, pod_id: str, start: datetime, end: datetime, *, limit: int,
                 page_lines: int = PAGE_LINES) -> tuple[list[str], datetime]:
    """The first lines of a pod between start and end, in order: all of them, or at least `limit` when there are
    more; and the instant up to which they are every line of the range (`end` when all were read): a reader going
    through a log a part at a time (jobs.early_stop) starts its next read one microsecond after it.

    The mirror of fetch_newest: GetPodLogs answers a range's last lines, so a full range is split by time and its
    earlier half read first; the later half is not asked for once the earlier one holds `limit` lines, so a read
    costs about as many calls as `limit` lines (and the halvings down to them), however long the range.
    """
    lines = dlc.get_pod_logs(
        workspace, job_id, pod_id, max_lines=page_lines, read_timeout_ms=30000,
        start_time=dlc.api_time(start), end_time=dlc.api_time(end),
    )
    if len(lines) < page_lines:
        return lines, end
    if end - start <= SHORTEST_RANGE:
        return fetch_lines(workspace, job_id, pod_id, start, end, page_lines=page_lines), end
    middle = start + (end - start) / 2
    earlier, upto = fetch_oldest(workspace, job_id, pod_id, start, middle, limit=limit, page_lines=page_lines)
    if upto < middle or len(earlier) >= limit:
        return earlier, upto
    later, upto = fetch_oldest(workspace, job_id, pod_id, middle + timedelta(microseconds=1), end,
                               limit=limit - len(earlier), page_lines=page_lines)
    return earlier + later, upto


def fetch_before(workspace, job_id: str, pod_id: str, start: datetime, end: datetime, *, limit: int,
                 page_lines: int = PAGE_LINES) -> tuple[list[str], list[tuple[datetime, int]]]:
    """At least the last `limit` log lines of a pod between start and end (all of them if fewer), in order, and
    the ranges read whole: (from, count) in time order, each range running to the next one's start (the last to
    `end`), and holding the last lines read, `count` lines each; lines before the first range were read cut.

    GetPodLogs has no offset, so a page further back is read from the end of its range: a range's start is where
    the next page can end (from - 1us) without reading again what this one read. Paged like fetch_newest: an
    earlier half is asked for only while the later one holds fewer than `limit` lines. The lines are always a
    suffix of the range's: a later half that is cut returns alone, one read whole gets the suffix of its earlier
    half before it.
    """
    lines = dlc.get_pod_logs(
        workspace, job_id, pod_id, max_lines=page_lines, read_timeout_ms=30000,
        start_time=dlc.api_time(start), end_time=dlc.api_time(end),
    )
    if len(lines) < page_lines:
        return lines, [(start, len(lines))]
    if end - start <= SHORTEST_RANGE:
        lines = fetch_lines(workspace, job_id, pod_id, start, end, page_lines=page_lines)
        return lines, [(start, len(lines))]
    middle = start + (end - start) / 2
    later_start = middle + timedelta(microseconds=1)
    later, whole = fetch_before(workspace, job_id, pod_id, later_start, end, limit=limit, page_lines=page_lines)
    if not whole or whole[0][0] > later_start or len(later) >= limit:
        return later, whole
    earlier, before = fetch_before(workspace, job_id, pod_id, start, middle, limit=limit - len(later),
                                   page_lines=page_lines)
    return earlier + later, before + whole


def _gone(err: dlc.DLCError) -> bool:
    """DLC answered that the job or pod does not exist (any more): its log will not come back."""
    return err.status == 404 or "NotFound" in err.code


def archive(job_id: int, *, page_lines: int = PAGE_LINES) -> int:
    """Copy the logs of an ended job's pods into PodLog. Returns how many pods were archived now.

    Idempotent: pods already archived are skipped. A pod DLC no longer knows (404, *NotFound) is skipped, its
    log is gone; any other dlc.DLCError is raised, so the task retries and the sweep asks again later: a refused
    signature or a missing permission is fixed some day, and marking the job archived would lose its logs.
    """
    job = Job.objects.select_related("workspace").get(pk=job_id)
    if not job.dlc_job_id or st.is_active(job.status):
        return 0
    pods = job.pods
    try:
        # The final pod list: the last sync may have seen the job end before its pods did.
        pods = dlc.get_job(job.workspace, job.dlc_job_id).get("Pods") or pods
    except dlc.DLCError as err:
        if err.transient:
            raise
    done = set(PodLog.objects.filter(job=job).values_list("pod_id", flat=True))
    archived = 0
    for pod in pods:
        pod_id = pod.get("PodId")
        if not pod_id or pod_id in done:
            continue
        start, end = pod_range(job, pod)
        try:
            lines = fetch_lines(job.workspace, job.dlc_job_id, pod_id, start, end, page_lines=page_lines)
        except dlc.DLCError as err:
            if not _gone(err):
                raise
            log.warning("log of pod %s of job %s is gone: %s", pod_id, job.pk, err)
            continue
        text = "\n".join(logmask.mask(lines, job.secret_marks)).encode("utf-8")
        PodLog.objects.update_or_create(
            job=job, pod_id=pod_id,
            defaults={"role": str(pod.get("Type") or "")[:64], "content": zlib.compress(text, 6),
                      "lines": len(lines)},
        )
        archived += 1
    # The training metrics of the job's log (jobs.scalars), from the archive just written; before the job is
    # marked archived, so a failure here is retried with the archive. Imported here: jobs.scalars and
    # jobs.diagnosis read logs through this module.
    from jobs import diagnosis, scalars

    scalars.compute(job)
    # A failed job's likely cause, from the archive just written: the page then reads it, not the log.
    diagnosis.from_archive(job)
    Job.objects.filter(pk=job.pk).update(logs_archived_at=timezone.now())
    return archived
