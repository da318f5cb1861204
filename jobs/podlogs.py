"""A pod's log for the job page: the archive once the job has ended, else a window of DLC's log and a live
tail; filtered by a search, matches marked.

The archive is the whole log, so its lines keep their numbers (1 = the first line the pod printed). A pod
that DLC still holds is never read whole for the page: the first view is the last FIRST_VIEW_LINES lines up
to a time cursor, and each tail request asks DLC for the lines stamped after the cursor it carries, up to a
new one. DLC's answer does not say where in the log its lines are, so they are numbered only when that is known
exactly: a first view that came back short holds the log from its first line, and each tail request carries the
number of the last line read (`n`) and adds the lines it reads; a full first view (earlier lines unread) or a
tail that left lines unread (a burst past TAIL_MAX_LINES) has no numbers from there on, rather than guessed ones.
An ended job whose log is not archived yet gets the same window, up to now, and no tail.

Earlier lines are one click away ("Load older lines", `older`): the archive's by line number; DLC's by the
window's end and how many of its last lines are shown already. The page of DLC's that reaches the log's start is
numbered from 1; the lines after it, already on the page, stay unnumbered (numbering them would mean sending
them all again, up to the whole log, for a number each). GetPodLogs has no offset, only a time range and
MaxLines (its last lines), so a page before those is read from the end of the range, split by time
(logarchive.fetch_before); the next page goes on from where the range was read whole, so each page costs
about the same few calls however far back it is.

Every line leaving here is masked (jobs.logmask: the job's secret values as ********; the archive is masked when
written), then shown as a terminal shows it (jobs.ansi: its colours as classes, the text after a `\r`, other
escape codes dropped) and searched in the text shown, never in the codes. The colours in force carry from line to
line, as in a terminal: through a chunk (an archived view starts from those in force before it, ansi.style_at),
and from one tail request to the next (`sgr`); a window or page of DLC's that starts mid-log starts uncoloured.
The download keeps the codes and `\r`s (a terminal shows them right), masked too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django.utils import timezone
from django.utils.safestring import SafeString

from jobs import ansi, dlc, logarchive, logmask
from jobs.jobpage import PodRow
from jobs.models import Job

# The first view of a long log shows its end; earlier lines are a click away ("Load older lines"), or downloaded.
FIRST_VIEW_LINES = 1000
# Lines read (and, with a search, searched) per "Load older lines".
OLDER_PAGE = 5000
# How many of a window's last lines an older page may say are shown: more is a forged URL.
OLDER_SKIP_MAX = 10_000_000
# A tail request asks for this many lines at once (GetPodLogs' default); a fuller range is paged.
TAIL_PAGE_LINES = logarchive.PAGE_LINES
# A tail that fell far behind (a tab asleep for an hour) sends the newest lines, not a million.
TAIL_MAX_LINES = 10_000
# A line is stamped before it reaches DLC's log store (in localdlc: the reader thread stamps it, then writes
# it; in DLC: the log pipeline's lag), and the stamp is DLC's clock, not ours. A read up to "now" could miss
# a line stamped just before now but stored just after, and the next read, starting after that cursor,
# would never ask for it again. So each read stops SETTLE before now: a line stamped earlier than that is
# in the store by then (the store lags less than SETTLE, clocks differ by less), and the next read starts
# exactly one microsecond after the cursor (stamps are microsecond-granular), so each line is read once.
# The price is that lines appear on the page SETTLE (plus up to a refresh) after they were printed.
SETTLE = timedelta(seconds=2)
# The longest search term; a longer one is refused with a message, never cut short without a word.
QUERY_MAX_CHARS = 200
# How far ahead of our clock a cursor may be (several web servers' clocks); more is a forged or broken URL.
CURSOR_AHEAD = timedelta(seconds=10)
# A tail follows an ended pod until its cursor is this far past the end: end times are whole seconds, cut
# down, and a pod's last lines can be stamped after it exits (its output is still being drained).
END_SLACK = SETTLE + timedelta(seconds=1)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CURSOR = re.compile(r"[0-9]{1,17}")
# What a tail request carries besides its cursor: the number of the last line read, the colours in force then.
_LINE_NUMBER = re.compile(r"[0-9]{1,12}")
_SGR = re.compile(r"[0-9;]{0,40}")


class BadCursor(ValueError):
    """A tail request's `since` is not a cursor this console could have sent."""


class BadOlder(ValueError):
    """An older-lines request's `until`/`skip`/`upto` is not what this console could have sent."""


class BadQuery(ValueError):
    """A log search term the page cannot search for."""


@dataclass
class Chunk:
    lines: list[tuple[int | None, SafeString]]  # (line number, or None when not known; the line as HTML)
    total: int = 0  # archived: lines in the whole log
    skipped: int = 0  # matching lines left out: the start of an archived first view, or of a huge tail burst
    cut: bool = False  # tail: lines before those read were not even read (how many is not known)
    cursor: int | None = None  # live: the instant (epoch µs) read up to, the next tail request's `since`
    read: int = 0  # first view from DLC: lines read (the window a search covered)
    full: bool = False  # first view from DLC: the window came back full, so the log has earlier lines
    older: str = ""  # the query string of the request for the page before these lines; "" at the log's start
    number: int | None = None  # live: the number of the last line read (0: none yet); None when not known
    style: ansi.Style = ansi.DEFAULT  # live: the colours in force after the last line read
    after: int = 0  # archived, read from the start (`head`): matching lines after those shown
    head: bool = False  # read from the log's start ("From the start"), not its end

    @property
    def live(self) -> bool:
        """Read up to a cursor, so a tail can go on from it."""
        return self.cursor is not None

    @property
    def tail_query(self) -> str:
        """The query string of the next tail request: the cursor, and the line number and colours to go on from."""
        params: dict[str, int | str] = {"since": self.cursor or 0}
        if self.number is not None:
            params["n"] = self.number
        if self.style != ansi.DEFAULT:
            params["sgr"] = self.style.sgr()
        return urlencode(params)


def encode_cursor(instant: datetime) -> int:
    return (instant - _EPOCH) // timedelta(microseconds=1)


def decode_cursor(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def settled(now: datetime | None = None) -> datetime:
    """The newest instant whose lines are surely all in DLC's log store."""
    return (now or timezone.now()) - SETTLE


def _pod(job: Job, pod_id: str) -> dict | None:
    return next((p for p in job.pods or [] if isinstance(p, dict) and p.get("PodId") == pod_id), None)


def _floor(job: Job, pod_id: str) -> datetime:
    """The earliest instant a cursor this console sent can be: none is before the job's row, nor the pod's start.

    Not the pod's start alone: a pod restarted under the same name (a PyTorchJob's restart policy, fault
    tolerance) comes back with a later GmtCreateTime, and the cursor of a page opened before the restart would be
    refused at every tail request, which htmx does not show: the page would say "Following" and show nothing.
    """
    pod = _pod(job, pod_id)
    row = job.created_at - logarchive.MARGIN
    return min(logarchive.pod_range(job, pod)[0], row) if pod is not None else row


def parse_cursor(raw: str, job: Job, pod_id: str, now: datetime | None = None) -> datetime:
    """A tail request's `since`, checked: what this console sends (epoch µs), not before the pod, not ahead."""
    now = now or timezone.now()
    if not _CURSOR.fullmatch(raw):
        raise BadCursor("`since` must be the log cursor the page sends (microseconds since 1970); reload the page.")
    instant = decode_cursor(int(raw))
    if instant > now + CURSOR_AHEAD:
        raise BadCursor("`since` is in the future; reload the page.")
    if instant < _floor(job, pod_id):
        raise BadCursor("`since` is before this pod could have logged anything; reload the page.")
    return instant


def parse_carried(params: Mapping[str, str]) -> tuple[int | None, ansi.Style]:
    """What a tail request carries besides its cursor (`n`, `sgr`, both optional), checked: what this console sends.
    A forged value misnumbers or miscolours only the forger's own page."""
    raw_number, raw_sgr = params.get("n"), params.get("sgr", "")
    if raw_number is not None and not _LINE_NUMBER.fullmatch(raw_number):
        raise BadCursor("`n` must be the line number the page sends; reload the page.")
    if not _SGR.fullmatch(raw_sgr):
        raise BadCursor("`sgr` must be the colour codes the page sends; reload the page.")
    style = ansi.apply(raw_sgr, ansi.DEFAULT) if raw_sgr else ansi.DEFAULT
    return (None if raw_number is None else int(raw_number)), style


def _read(job: Job, pod_id: str) -> tuple[list[str] | None, list[str]]:
    """The pod's whole log so far: (the console's archive, masked when written, once the job has ended; or None
    and DLC's lines, not masked yet). Raises dlc.DLCError when DLC cannot be read. DLC answers only the last
    MaxLines lines of a time range, so the read goes through logarchive's paging, which splits the pod's time
    range until nothing is cut."""
    if not job.is_active:
        archived = logarchive.read(job, pod_id)
        if archived is not None:
            return archived, []
    pod = _pod(job, pod_id)
    if not job.dlc_job_id or pod is None:
        return None, []
    # Up to this instant: pod_range's end is made for archiving an ended pod (its end plus a margin).
    start, _ = logarchive.pod_range(job, pod)
    return None, logarchive.fetch_lines(job.workspace, job.dlc_job_id, pod_id, start, timezone.now())


def download(job: Job, pod_id: str, batch: int = 1000) -> Iterator[str]:
    """The whole log as text in batches, for a streamed download: masked batch by batch as it is sent (the
    archive was masked when written). ANSI codes and carriage returns are kept: a terminal shows them right.
    Raises dlc.DLCError before anything is sent, so the view can answer an error instead."""
    archived, lines = _read(job, pod_id)
    if archived is not None:
        return stream(archived, batch)
    return stream(lines, batch, logmask.masker(job.secret_marks))


def first_view(job: Job, pod_id: str, query: str = "", now: datetime | None = None) -> Chunk:
    """What the log panel shows first: the archive (numbered, searched whole) once the job has ended and its
    logs were archived, else the last FIRST_VIEW_LINES lines DLC holds up to a settled cursor (one call)."""
    now = now or timezone.now()
    ended = not job.is_active
    if ended:
        archived = logarchive.read(job, pod_id)
        if archived is not None:
            return cut(archived, query)
    # An ended job prints no more, so its window reaches now and has no tail to keep exact: a line DLC
    # stores late is in the archive, which the next view reads.
    until = max(now if ended else settled(now), _floor(job, pod_id))
    lines: list[str] = []
    pod = _pod(job, pod_id)
    if job.dlc_job_id and pod is not None:
        lines = dlc.get_pod_logs(
            job.workspace, job.dlc_job_id, pod_id, max_lines=FIRST_VIEW_LINES, read_timeout_ms=10000,
            start_time=dlc.api_time(logarchive.pod_range(job, pod)[0]), end_time=dlc.api_time(until))
    chunk = window(logmask.mask(lines, job.secret_marks), None if ended else until, query)
    if chunk.full:
        chunk.older = urlencode({"until": encode_cursor(until), "skip": len(lines)})
    return chunk


def _shown(lines: list[str], query: str, style: ansi.Style = ansi.DEFAULT,
           ) -> tuple[list[tuple[int, SafeString]], ansi.Style]:
    """(index, the line as HTML, matches marked) of the lines whose text as shown (jobs.ansi) matches the query, and
    the colours in force after the last line; the lines start in `style`."""
    found = []
    for i, line in enumerate(lines):
        if query and not matches(ansi.plain(line), query):
            style = ansi.advance(line, style)
            continue
        html, style = ansi.render(line, style, query)
        found.append((i, html))
    return found, style


def window(lines: list[str], cursor: datetime | None, query: str = "", *, size: int = FIRST_VIEW_LINES) -> Chunk:
    """A first view from DLC: the lines it answered (its last `size` up to the cursor), those matching the query.
    Without a cursor (an ended job), there is no tail. A window that came back short is the log from its start:
    its lines are numbered, and the tail goes on counting from them."""
    full = len(lines) >= size
    found, style = _shown(lines, query)
    return Chunk([(None if full else i + 1, html) for i, html in found],
                 cursor=None if cursor is None else encode_cursor(cursor), read=len(lines), full=full,
                 number=None if full else len(lines), style=style)


def tail(job: Job, pod_id: str, since: datetime, query: str = "", now: datetime | None = None, *,
         number: int | None = None, style: ansi.Style = ansi.DEFAULT) -> Chunk:
    """The lines stamped in (since, settled now], those matching the query, and the new cursor; numbered on from
    `number` (the last line's before them, when known), coloured on from `style` (see parse_carried).

    One GetPodLogs call, unless the range comes back full (a burst): then it is paged, so no line is lost, up to
    TAIL_MAX_LINES lines: beyond, only the newest are read (from the end) and sent, and the gap is said.
    """
    until = settled(now)
    if until <= since or not job.dlc_job_id or _pod(job, pod_id) is None:
        return unchanged(since, number, style)
    lines, cut = logarchive.fetch_newest(job.workspace, job.dlc_job_id, pod_id, since + timedelta(microseconds=1),
                                         until, limit=TAIL_MAX_LINES, page_lines=TAIL_PAGE_LINES)
    return burst(logmask.mask(lines, job.secret_marks), until, query, limit=TAIL_MAX_LINES, cut=cut, number=number,
                 style=style)


def unchanged(since: datetime, number: int | None = None, style: ansi.Style = ansi.DEFAULT) -> Chunk:
    """A tail answer with no lines (none yet, or DLC could not be read): the next request asks from the same
    cursor, with the same line number and colours."""
    return Chunk([], cursor=encode_cursor(since), number=number, style=style)


def burst(lines: list[str], cursor: datetime, query: str = "", *, limit: int = TAIL_MAX_LINES,
          cut: bool = False, number: int | None = None, style: ansi.Style = ansi.DEFAULT) -> Chunk:
    """New lines for the tail: those matching the query among the newest `limit` lines read; the matching ones
    read before those are counted as skipped. `cut`: lines before all those read were not read at all, so how many
    lines came before them (their numbers) and the colours set there are not known."""
    if cut:
        number, style = None, ansi.DEFAULT
    newest = max(0, len(lines) - limit)
    found, style = _shown(lines, query, style)
    return Chunk([(None if number is None else number + i + 1, html) for i, html in found if i >= newest],
                 skipped=sum(1 for i, _ in found if i < newest), cut=cut, cursor=encode_cursor(cursor),
                 number=None if number is None else number + len(lines), style=style)


# --- older lines -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Older:
    """Where the lines before those shown end: an archived line number (`upto`, excluded), or DLC's range up to
    `until` of which the last `skip` lines are shown already."""
    upto: int | None = None
    until: datetime | None = None
    skip: int = 0


_NUMBER = re.compile(r"[0-9]{1,9}")


def parse_older(params, job: Job, pod_id: str, now: datetime | None = None) -> Older:
    """An older-lines request's parameters (`upto`, or `until` and `skip`), checked like a tail's cursor."""
    if "upto" in params:
        if not _NUMBER.fullmatch(params["upto"]) or int(params["upto"]) < 1:
            raise BadOlder("`upto` must be the line number the page sends; reload the page.")
        return Older(upto=int(params["upto"]))
    skip = params.get("skip", "")
    if not _NUMBER.fullmatch(skip) or int(skip) > OLDER_SKIP_MAX:
        raise BadOlder("`skip` must be the count of lines the page sends; reload the page.")
    try:
        until = parse_cursor(params.get("until", ""), job, pod_id, now)
    except BadCursor as err:
        raise BadOlder(str(err).replace("`since`", "`until`")) from None
    return Older(until=until, skip=int(skip))


def older(job: Job, pod_id: str, at: Older, query: str = "") -> Chunk:
    """The lines before those shown (their `older` link), those matching the query: up to OLDER_PAGE lines, and
    the link to the page before them ("" at the log's start). Raises dlc.DLCError."""
    if at.upto is not None:
        archived = logarchive.read(job, pod_id) or []
        chunk = cut(archived[:at.upto - 1], query, first_view=OLDER_PAGE)
        # `skipped`: what is still not shown above these, for the note over the box (it said the first view's).
        return Chunk(chunk.lines, total=len(archived), older=chunk.older, read=at.upto - 1, skipped=chunk.skipped)
    if at.until is None or not job.dlc_job_id or _pod(job, pod_id) is None:
        return Chunk([])
    # A search reads further per click than a plain view shows, but shows no more than OLDER_PAGE matches.
    size = OLDER_PAGE if not query else OLDER_PAGE * 10
    start, want = _floor(job, pod_id), at.skip + size
    lines, whole = logarchive.fetch_before(job.workspace, job.dlc_job_id, pod_id, start, at.until, limit=want)
    page = logmask.mask(lines[max(0, len(lines) - want):max(0, len(lines) - at.skip)], job.secret_marks)
    found, _ = _shown(page, query)  # from DLC's window: the colours before the page are not known
    # More matches than shown: the next page ends right before the first one shown, so none is lost.
    used = len(page) - found[-OLDER_PAGE][0] if len(found) > OLDER_PAGE else len(page)
    done = at.skip + used
    # The log's start is reached when every line read is shown by now and the earliest range was read whole from
    # the pod's floor: the page then begins at the log's first line, so its lines' numbers are known exactly.
    at_start = done >= len(lines) and bool(whole) and whole[0][0] <= start
    chunk = Chunk([(i + 1 if at_start else None, html) for i, html in found[-OLDER_PAGE:]], read=used)
    if not at_start:
        # The next page ends before the earliest range read whole whose lines are all shown by now, and skips
        # those shown before it: it skips less than a page and a range, however far back it is.
        until, skip = at.until, done
        for since, count in reversed(whole):
            if count > skip or since <= start:
                break
            until, skip = since - timedelta(microseconds=1), skip - count
        chunk.older = urlencode({"until": encode_cursor(until), "skip": skip})
    return chunk


def head(job: Job, pod_id: str, query: str = "", *, size: int = OLDER_PAGE) -> Chunk | None:
    """"From the start": the first `size` matching lines of an archived log, numbered, and how many come after
    them; None when the log is not archived (DLC answers a range's last lines, so its start is read page by page
    with "Load older lines"). Reaching line 1 of a 100k-line log otherwise took twenty clicks."""
    if job.is_active:
        return None
    archived = logarchive.read(job, pod_id)
    if archived is None:
        return None
    if query:
        found, _ = _shown(archived, query)
        shown, after = found[:size], max(0, len(found) - size)
    else:  # only the lines shown are rendered, as in `cut`
        shown, _ = _shown(archived[:size], "")
        after = max(0, len(archived) - size)
    return Chunk([(i + 1, html) for i, html in shown], total=len(archived), after=after, head=True)


def following(job: Job, pod: PodRow, cursor: int | None) -> bool:
    """Whether the tail keeps asking: while the pod runs, and after it ends until the cursor has passed its
    end (the last lines are read SETTLE late). An archived log (no cursor) has nothing more to come."""
    if cursor is None:
        return False
    if job.is_active and pod.live:
        return True
    ends = [t for t in (pod.end, None if job.is_active else job.finished_at) if t is not None]
    return bool(ends) and decode_cursor(cursor) < max(ends) + END_SLACK


def cut(lines: list[str], query: str = "", *, first_view: int = FIRST_VIEW_LINES) -> Chunk:
    """An archived log's first view: the lines that match `query`, numbered, the last `first_view` of them; the
    link to the earlier ones, if any."""
    if query:
        found, _ = _shown(lines, query)
        skipped = max(0, len(found) - first_view)
        shown = [(i + 1, html) for i, html in found[skipped:]]
    else:  # every line matches: only those shown are rendered (a 100k-line archive), in the colours set before them
        skipped = max(0, len(lines) - first_view)
        found, _ = _shown(lines[skipped:], "", ansi.style_at(lines, skipped))
        shown = [(i + skipped + 1, html) for i, html in found]
    return Chunk(shown, total=len(lines), skipped=skipped,
                 older=urlencode({"upto": shown[0][0]}) if skipped and shown else "")


def parse_query(raw: str) -> str:
    """The search term of `?q=`, checked: surrounding spaces dropped, at most QUERY_MAX_CHARS characters."""
    query = raw.strip()
    if len(query) > QUERY_MAX_CHARS:
        raise BadQuery(f"A search term has at most {QUERY_MAX_CHARS} characters; this one has {len(query)}.")
    return query


def matches(text: str, query: str) -> bool:
    return not query or query.casefold() in text.casefold()


def highlight(text: str, query: str) -> SafeString:
    """The line as HTML (jobs.ansi: escaped, coloured) with each case-insensitive occurrence of query in <mark>."""
    return ansi.render(text, query=query)[0]


def stream(lines: list[str], batch: int = 1000, masker: logmask.Masker | None = None) -> Iterator[str]:
    """The log as text, in batches, for a streamed download; each batch masked as it goes when a masker is given."""
    for start in range(0, len(lines), batch):
        part = lines[start:start + batch]
        yield "".join(f"{line}\n" for line in (masker.lines(part) if masker else part))


def filename(job: Job, pod_id: str) -> str:
    """A download name that is safe in a Content-Disposition header."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{job.display_name}-{pod_id}")[:200] + ".log"
