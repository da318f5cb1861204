"""A pod's log for the job page: read it (the console's archive once the job has ended, else DLC), cut
the part a browser has not seen yet, filter it by a search and mark the matches.

Line numbers are absolute (1 = the first line the pod printed), so a tail request says "after line N"
and gets exactly the lines it lacks, whatever the search.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from jobs import logarchive
from jobs.models import Job

# The first view of a long log shows its end; the rest is one click away in the download.
FIRST_VIEW_LINES = 1000


def read(job: Job, pod_id: str) -> list[str]:
    """The pod's whole log so far: the console's archive once the job has ended, else DLC.

    Raises dlc.DLCError when DLC cannot be read. DLC answers only the last MaxLines lines of a time range,
    so the read goes through logarchive's paging, which splits the pod's time range until nothing is cut;
    line numbers then stay stable under the tail.
    """
    if not job.is_active:
        archived = logarchive.read(job, pod_id)
        if archived is not None:
            return archived
    pod = next((p for p in job.pods or [] if isinstance(p, dict) and p.get("PodId") == pod_id), None)
    if not job.dlc_job_id or pod is None:
        return []
    # Up to this instant, not pod_range's end: that is cut to the whole second and would drop the
    # newest lines of a pod that is still printing.
    start, _ = logarchive.pod_range(job, pod)
    return logarchive.fetch_lines(job.workspace, job.dlc_job_id, pod_id, start, timezone.now())


@dataclass
class Chunk:
    lines: list[tuple[int, SafeString]]  # (absolute line number, escaped text with <mark>ed matches)
    total: int  # lines in the log so far: what the next tail request passes as `after`
    skipped: int = 0  # matching lines left out of a first view


def cut(lines: list[str], after: int = 0, query: str = "", *, first_view: int = FIRST_VIEW_LINES) -> Chunk:
    """The lines after line `after` that match `query` (case-insensitive), highlighted.

    A first view (after == 0) of a long log keeps its last `first_view` matching lines.
    """
    after = max(0, after)
    fresh = list(enumerate(lines[after:], start=after + 1))
    if query:
        needle = query.casefold()
        fresh = [(n, text) for n, text in fresh if needle in text.casefold()]
    skipped = 0
    if after == 0 and len(fresh) > first_view:
        skipped = len(fresh) - first_view
        fresh = fresh[skipped:]
    # A log shorter than what the browser has (a restarted pod) yields nothing new rather than repeats.
    return Chunk([(n, highlight(text, query)) for n, text in fresh], max(after, len(lines)), skipped)


def highlight(text: str, query: str) -> SafeString:
    """Escape the line and wrap each case-insensitive occurrence of query in <mark>."""
    if not query:
        return escape(text)
    folded, needle = text.casefold(), query.casefold()
    if len(folded) != len(text):  # casefold changed lengths (e.g. ß): mark nothing rather than the wrong span
        return escape(text)
    out, start = [], 0
    while (found := folded.find(needle, start)) != -1:
        out.append(escape(text[start:found]))
        out.append(f"<mark>{escape(text[found:found + len(needle)])}</mark>")
        start = found + len(needle)
    out.append(escape(text[start:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece is escaped above


def stream(lines: list[str], batch: int = 1000) -> Iterator[str]:
    """The log as text, in batches, for a streamed download."""
    for start in range(0, len(lines), batch):
        yield "".join(f"{line}\n" for line in lines[start:start + batch])


def filename(job: Job, pod_id: str) -> str:
    """A download name that is safe in a Content-Disposition header."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{job.display_name}-{pod_id}")[:200] + ".log"
