"""Failure diagnosis: the likely cause of a failed (or refused) job and what to change, from DLC's reason and the
end of its pods' logs.

One catalogue, RULES, in priority order: the first rule that matches is the likely cause, the others that match
are "also seen". A rule matches on DLC's reason code or sub-status, on its reason message, on an exit code, or on
a log line (a compiled regex over the lines a terminal shows); its advice names the wizard field to change where
there is one. A Python traceback with nothing more specific falls back to "the last exception was X: msg"; a job
DLC refused (SubmitFailed) is its refusal code, mapped to the wizard section the refusal is about.

Only ends that are failures are diagnosed: Failed and SubmitFailed. A job skipped because the job it ran after did
not succeed (jobs.dependencies.SKIPPED) ended Stopped and is not a failure of its own.

Where the log comes from: the archive (jobs.logarchive, PodLog) once the job has ended and its logs were copied,
else, where the caller allows a DLC call (the webhook, sent right at the end, before the archive), the last lines
DLC holds. Either way only the last TAIL_LINES lines of at most MAX_PODS pods (the failed ones first) are read:
the cause of a crash is printed at its end, and a scan of a 100k-line log, or a DLC read per pod of a 64-worker
job, is not worth a few seconds of a page or a worker.

The result is stored on the job (Job.diagnosis) once it is from the archive (or the job has no log to wait for),
so the page does not scan the log at every view; computing it again gives the same result (idempotent). A result
from DLC's live log is stored too, until the archive's replaces it. Cited lines are masked as the page masks the
log (jobs.logmask), and the reason message as errors are (dlc.redact): a diagnosis never shows a secret value.

Plain functions: only `compute`, `for_job` and the two log readers touch the database or DLC.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from jobs import dependencies, dlc, logarchive, logmask, spec
from jobs import status as st
from jobs.models import Job, PodLog

VERSION = 2  # a stored result of another version is computed again (2: exit 137 alone is no longer "out of memory")
TAIL_LINES = 2000  # lines read from the end of each pod's log (one GetPodLogs page)
MAX_PODS = 4  # pods read per job, failed ones first
MAX_CITES = 3  # lines cited for the likely cause (one per pod)
LINE_CHARS = 2000  # a longer line is matched and cited by its start: no regex over a megabyte of JSON
CITE_CHARS = 300
DIAGNOSED = frozenset({"Failed", st.SUBMIT_FAILED})

SOURCE_ARCHIVE = "archive"  # the archived logs
SOURCE_LIVE = "live"  # DLC's log before the archive: replaced by the archive's
SOURCE_NONE = "none"  # no log to read (refused, no pods): final as it is
SOURCE_REASON = "reason"  # the logs not read (yet): not stored


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    advice: str
    log: re.Pattern[str] | None = None  # over each log line, as a terminal shows it
    codes: frozenset[str] = frozenset()  # DLC reason codes and sub-statuses
    message: re.Pattern[str] | None = None  # over DLC's reason message
    exit_codes: frozenset[int] = frozenset()
    covers: frozenset[str] = frozenset()  # rules this one explains: not "also seen" when this one is the cause


def _re(*alternatives: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{a})" for a in alternatives), flags)


RULES: tuple[Rule, ...] = (
    Rule("max-duration", "The job ran longer than its maximum duration",
         "DLC stopped it when its maximum duration was reached. Raise Maximum duration (Resources › Maximum "
         "duration), or save checkpoints so a new job can resume where this one was cut.",
         codes=frozenset({"DeadlineExceeded", "JobRunningTimeout", "JobMaxRunningTimeExceeded", "JobTimeout"}),
         message=_re(r"JobMaxRunningTimeMinutes", r"max(?:imum)? running time", r"ran longer than", flags=re.I)),
    Rule("image-pull", "The image could not be pulled",
         "Check the image address (Environment › Image); for a private registry, the registry username and "
         "password (Environment › Registry username / Registry password), and that the registry is reachable "
         "from the job's VPC (VPC).",
         codes=frozenset({"ImagePullBackOff", "ErrImagePull", "ImagePullFailed", "InvalidImageName",
                          "ErrImageNeverPull", "ImageInspectError"}),
         message=_re(r"ImagePullBackOff", r"ErrImagePull", r"[Ff]ailed to pull image", r"pull access denied"),
         log=_re(r"ErrImagePull", r"ImagePullBackOff", r"[Ff]ailed to pull image", r"pull access denied",
                 r"manifest unknown", r"unauthorized: authentication required")),
    Rule("insufficient-resource", "Not enough resources for the job",
         "DLC could not place the job's pods. Ask for fewer nodes, GPUs, CPU cores or less memory, or another "
         "instance type (Resources › Job resources), or use a resource quota with room (Resources › Resource "
         "quota).",
         codes=frozenset({"InsufficientResource", "InsufficientResources", "QuotaNotEnough", "InsufficientQuota"})),
    Rule("gpu-oom", "GPU out of memory",
         "Lower the batch size (or the sequence length), use gradient accumulation or mixed precision, or pick "
         "an instance type with more GPU memory (Resources › Instance type).",
         log=_re(r"CUDA out of memory", r"torch\.(?:cuda\.)?OutOfMemoryError", r"CUDA error: out of memory",
                 r"CUDA_ERROR_OUT_OF_MEMORY", r"cudaErrorMemoryAllocation", r"CUBLAS_STATUS_ALLOC_FAILED",
                 r"OOM when allocating tensor", r"ResourceExhaustedError", r"RESOURCE_EXHAUSTED: Out of memory",
                 r"HIP out of memory", r"NPU out of memory")),
    Rule("shared-memory", "Shared memory (/dev/shm) ran out",
         "PyTorch's DataLoader workers pass batches through shared memory. Raise Shared memory (Resources › Job "
         "resources › Shared memory (GiB)), or lower the DataLoader's num_workers.",
         log=_re(r"DataLoader worker \(pid.*\) is killed by signal: Bus error", r"unable to write to file </torch_",
                 r"insufficient shared memory \(shm\)", r"No space left on device.*/dev/shm",
                 r"/dev/shm.*No space left on device")),
    # Out of memory only with evidence of it: exit 137 is any SIGKILL (a `kill -9`, a drained node), see "sigkill".
    Rule("host-oom", "The container ran out of memory",
         "The pod was killed for using more memory than it has (exit code 137, OOMKilled). Raise the memory "
         "(Resources › Job resources › Memory (GiB)) or pick a larger instance type (Resources › Instance type); "
         "load less data at once, or lower the DataLoader's num_workers.",
         codes=frozenset({"OOMKilled"}),
         message=_re(r"OOMKilled", r"[Oo]ut of memory", r"oom[-_ ]?kill", flags=re.I),
         log=_re(r"OOMKilled", r"Out of memory: Killed process", r"Killed process \d+ .*total-vm", r"oom-kill",
                 r"^MemoryError\b", r"std::bad_alloc"),
         covers=frozenset({"sigkill"})),
    Rule("distributed", "Workers lost contact with each other (NCCL / distributed)",
         "A collective operation timed out or a worker could not reach another: usually one rank died first or "
         "hung. Read the other pods' logs for their first error; check that every role uses the same image and "
         "node count (Resources › Job resources) and that the VPC's security group lets the nodes talk to each "
         "other (VPC › Security group). Automatic fault tolerance (Fault tolerance & diagnosis) can restart a "
         "job whose worker failed.",
         log=_re(r"NCCL (?:error|WARN).*(?:[Tt]imeout|[Tt]imed out|unhandled system error|remote process exited"
                 r"|[Cc]onnection (?:refused|reset|closed))",
                 r"ncclSystemError", r"ncclRemoteError", r"ncclInternalError", r"unhandled system error",
                 r"Watchdog caught collective operation timeout", r"NCCL communicator was aborted",
                 r"ProcessGroupNCCL.*(?:[Tt]imeout|[Tt]imed out)", r"DistNetworkError", r"Rendezvous\w*Error",
                 r"(?:c10d|gloo|Gloo|MASTER_ADDR|rendezvous|TCPStore).*[Cc]onnection (?:refused|reset)",
                 r"[Cc]onnection (?:refused|reset).*(?:c10d|gloo|MASTER_ADDR|rendezvous|TCPStore)",
                 r"socketStartConnect: Connect to .* failed")),
    Rule("missing-module", "A Python module is missing",
         "Add the package to Third-party libraries (Environment › Third-party libraries), one requirement per "
         "line, or use an image that has it (Environment › Image). A module of your own: check the code mount "
         "path (Environment › Code mount path) and the startup command's working directory.",
         log=_re(r"ModuleNotFoundError: ", r"ImportError: ")),
    Rule("disk-full", "The disk is full",
         "Write large outputs (checkpoints, caches, datasets) to a mounted dataset or storage with room "
         "(Environment › Datasets / Storage), not to the container's small local disk, and clean up old "
         "checkpoints as you go.",
         log=_re(r"No space left on device", r"\bENOSPC\b", r"Disk quota exceeded")),
    Rule("permission-denied", "Permission denied",
         "The job may not read or write a path or bucket. A write to a read-only dataset fails: check each "
         "dataset's access (Environment › Datasets); for OSS, that the instance RAM role may use the bucket (RAM "
         "role).",
         log=_re(r"Permission denied", r"PermissionError", r"Read-only file system", r"\bAccessDenied\b",
                 r"\b403 Forbidden\b")),
    Rule("file-not-found", "A file or directory was not found",
         "Check the path against the mount paths (Environment › Datasets / Storage › Mount path, Environment › "
         "Code mount path) and the startup command (Environment › Startup command): a dataset is only where it "
         "is mounted.",
         log=_re(r"FileNotFoundError", r"No such file or directory", r"can't open file")),
    # Last: a more specific cause in the log explains the kill better than the signal does.
    Rule("sigkill", "The container was killed by SIGKILL (exit 137)",
         "Out of memory is the usual cause, or a kill from outside (a kill -9, the node drained or reclaimed); "
         "neither DLC's reason nor the log says which. If the job's memory use grows, raise the memory "
         "(Resources › Job resources › Memory (GiB)) or pick a larger instance type (Resources › Instance type).",
         message=_re(r"exit(?:ed)? (?:with )?code:? 137\b", r"\bSIGKILL\b"),
         exit_codes=frozenset({137}),
         log=_re(r"^\s*Killed\s*$", r"exitcode\s*:\s*-9\b", r"killed by signal: Killed")),
)
_RULES_BY_ID = {rule.id: rule for rule in RULES}

# The fallback: the last exception of a Python traceback. The line after the traceback's frames names it:
# `ValueError: bad`, `torch.distributed.DistBackendError: ...`, `KeyError: 'x'`, torchrun's `[rank0]: ...`.
TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
_EXCEPTION = re.compile(r"^(?:\[(?:default|rank)\d+\]:)?\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*"
                        r"(?:Error|Exception|Exit|Interrupt|Warning|Failure))(?::\s?(.*))?$")
_EXIT = re.compile(r"exit(?:ed)? (?:with )?code:? (-?\d+)", re.I)
_INVALID_PATH = re.compile(r"^([A-Za-z][\w.\[\]]*):\s")

# DLC's refusals the console can point at a wizard section without a field path in the message.
REFUSALS = {
    "Forbidden": ("basic", "The credentials of this workspace may not create jobs in the DLC workspace (Basic "
                           "information › DLC workspace); an admin checks the workspace's RAM policy."),
    "Forbidden.WorkspaceId": ("basic", "The DLC workspace is not one these credentials may use (Basic information "
                                       "› DLC workspace)."),
    "QuotaExceeded": ("resources", "The resource quota has no room for the job (Resources › Resource quota): ask "
                                   "for less, or use another quota."),
    "InsufficientQuota": ("resources", "The resource quota has no room for the job (Resources › Resource quota)."),
    "InvalidImage": ("environment", "Check the image (Environment › Image)."),
    "InvalidAccessKeyId.NotFound": ("", "The console's credentials for this workspace are not valid: an admin "
                                        "fixes the workspace's credentials."),
    "SignatureDoesNotMatch": ("", "The console's credentials for this workspace are not valid: an admin fixes "
                                  "the workspace's credentials."),
    dependencies.NOT_RELEASED: ("", "It waited for its upstream job and could no longer be created when that ended "
                                    "(the message says why: its owner's role in the workspace, or the budget). "
                                    "Once that is settled, edit it and submit it again."),
}
SECTION_TITLES = {"basic": "Basic information", "environment": "Environment", "resources": "Resources",
                  "vpc": "VPC", "fault_tolerance": "Fault tolerance & diagnosis", "ram_role": "RAM role"}


@dataclass
class PodTail:
    """The last lines of one pod's log; `first` is the number of its first line in the whole log (None when
    DLC's live log was read, whose lines have no number)."""
    pod_id: str
    lines: list[str]
    first: int | None = 1


@dataclass
class Facts:
    """What a diagnosis is made from: the job's end as DLC said it, and the end of its pods' logs."""
    status: str
    reason_code: str = ""
    reason_message: str = ""
    sub_status: str = ""
    exit_codes: set[int] = field(default_factory=set)
    submit_error: dict[str, Any] = field(default_factory=dict)
    logs: list[PodTail] = field(default_factory=list)


@dataclass
class Diagnosis:
    id: str
    title: str
    advice: str
    cites: list[dict[str, Any]] = field(default_factory=list)  # {pod, line, text} or {pod: "", text} for DLC's
    also: list[dict[str, str]] = field(default_factory=list)  # {id, title} of the other rules that matched
    source: str = SOURCE_REASON

    def as_json(self) -> dict[str, Any]:
        return {"v": VERSION, "id": self.id, "title": self.title, "advice": self.advice, "cites": self.cites,
                "also": self.also, "source": self.source}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnosis | None:
        if not data.get("id"):
            return None
        return cls(str(data["id"]), str(data.get("title") or ""), str(data.get("advice") or ""),
                   list(data.get("cites") or []), list(data.get("also") or []), str(data.get("source") or ""))

    @property
    def summary(self) -> str:
        """One line: the title and the advice (the failure mail's "Likely cause")."""
        return f"{self.title}. {self.advice}"


# --- matching (plain functions) ---------------------------------------------------------------------------


def _plain(line: str) -> str:
    return logmask.shown(line[:LINE_CHARS]).rstrip()


def _cite_line(masker: logmask.Masker | None, pod_id: str, number: int | None, text: str) -> dict[str, Any]:
    shown = _plain(masker.line(text) if masker is not None else text)
    return {"pod": pod_id, "line": number, "text": shown[:CITE_CHARS]}


def _reason_text(facts: Facts) -> str:
    return ": ".join(x for x in (facts.reason_code, dlc.redact(facts.reason_message)[:CITE_CHARS]) if x)


def _log_hits(rule: Rule, logs: list[PodTail], shown: list[list[str]]) -> list[tuple[str, int | None, str]]:
    """(pod, line number, raw line) of the last line each pod has that the rule matches: the one closest to the
    crash (an OOM's last report, the exception that ended the program). `shown`: each pod's lines as shown."""
    if rule.log is None:
        return []
    hits = []
    for tail, texts in zip(logs, shown, strict=True):
        for at in range(len(texts) - 1, -1, -1):
            if rule.log.search(texts[at]):
                hits.append((tail.pod_id, None if tail.first is None else tail.first + at, tail.lines[at]))
                break
    return hits


def _matches(rule: Rule, facts: Facts, shown: list[list[str]]) -> tuple[bool, list[tuple[str, int | None, str]]]:
    """Whether the rule matches, and the log lines it matched on (none when DLC's reason was enough)."""
    hits = _log_hits(rule, facts.logs, shown)
    said = bool((rule.codes & {facts.reason_code, facts.sub_status} - {""})
                or (rule.message is not None and facts.reason_message and rule.message.search(facts.reason_message))
                or rule.exit_codes & facts.exit_codes)
    return said or bool(hits), hits


def last_exception(logs: list[PodTail]) -> tuple[str, int | None, str, str] | None:
    """(pod, line number, raw line, the exception as shown) of the last exception a traceback ended with, in the
    first pod that has one; None without a traceback."""
    for tail in logs:
        seen_traceback = False
        found = None
        for at, raw in enumerate(tail.lines):
            text = _plain(raw)
            if TRACEBACK.search(text):
                seen_traceback = True
                continue
            if seen_traceback and (match := _EXCEPTION.match(text.strip())):
                found = (tail.pod_id, None if tail.first is None else tail.first + at, raw, match.group(0).strip())
        if found:
            return found
    return None


def _refusal(facts: Facts) -> Diagnosis:
    error = facts.submit_error or {}
    code = str(error.get("Code") or "Unknown")
    message = dlc.redact(str(error.get("Message") or ""))
    section, advice = REFUSALS.get(code, ("", ""))
    path = _INVALID_PATH.match(message)
    if code.startswith("InvalidParameter") and path:
        try:
            field_path = spec.field_for_path(path.group(1))
        except Exception:  # noqa: BLE001 - a path the wizard does not know still gets the generic advice
            field_path = ""
        section = field_path.split(".", 1)[0] if field_path else ""
    if not advice and section in SECTION_TITLES:
        advice = f"Fix the setting DLC names in the wizard's {SECTION_TITLES[section]} section."
    if not advice:
        advice = ("Read DLC's message and fix the job's settings it names." if not code.startswith("Console.")
                  else "The console could not send the job to DLC; an admin checks the workspace's settings.")
    where = f" ({SECTION_TITLES[section]})" if section in SECTION_TITLES else ""
    cite = {"pod": "", "line": None, "text": f"{code}: {message}"[:CITE_CHARS] if message else code}
    title = f"The console could not send the job: {code}" if code.startswith("Console.") else \
        f"DLC refused the job: {code}{where}"
    return Diagnosis(f"refused:{code}"[:100], title, advice, [cite])


def diagnose(facts: Facts, marks: dict[str, Any] | None = None) -> Diagnosis | None:
    """The likely cause of a failed job (None when nothing matches, or the job's end is not a failure).
    `marks`: the job's secret marks, to mask the cited lines as the page masks the log."""
    if facts.status not in DIAGNOSED or facts.reason_code == dependencies.SKIPPED:
        return None
    if facts.status == st.SUBMIT_FAILED:
        return _refusal(facts)
    masker = logmask.masker(marks)
    found: list[tuple[Rule, list[tuple[str, int | None, str]]]] = []
    shown = [[_plain(line) for line in tail.lines] for tail in facts.logs]  # once, not once per rule
    for rule in RULES:
        matched, hits = _matches(rule, facts, shown)
        if matched:
            found.append((rule, hits))
    covered = found[0][0].covers if found else frozenset()
    also = [{"id": rule.id, "title": rule.title} for rule, _ in found[1:] if rule.id not in covered]
    if found:
        rule, hits = found[0]
        cites = [_cite_line(masker, pod, number, text) for pod, number, text in hits[:MAX_CITES]]
        if not cites and (facts.reason_code or facts.reason_message):
            cites = [{"pod": "", "line": None, "text": _reason_text(facts)}]
        return Diagnosis(rule.id, rule.title, rule.advice, cites, also)
    exception = last_exception(facts.logs)
    if exception is None:
        return None
    pod, number, raw, _ = exception
    cite = _cite_line(masker, pod, number, raw)
    return Diagnosis("exception", "The program raised an exception",
                     f"The last exception was {cite['text'].strip()}. Read the traceback above it in the log "
                     f"of pod {pod}.", [cite], also)


# --- the job's facts ---------------------------------------------------------------------------------------


def exit_codes(job: Job) -> set[int]:
    """The exit codes DLC told of: a pod's ExitCode where it has one, and one named in the reason message."""
    codes = set()
    for pod in job.pods or []:
        if isinstance(pod, dict) and isinstance(pod.get("ExitCode"), int):
            codes.add(pod["ExitCode"])
    codes |= {int(m) for m in _EXIT.findall(job.reason_message or "")}
    return codes


def pods_to_read(job: Job, available: Iterable[str] | None = None) -> list[str]:
    """The pods whose logs are read: the failed ones first, in the job's pod order, at most MAX_PODS."""
    pods = [p for p in job.pods or [] if isinstance(p, dict) and p.get("PodId")]
    ids = [str(p["PodId"]) for p in pods if p.get("Status") == "Failed"] + \
          [str(p["PodId"]) for p in pods if p.get("Status") != "Failed"]
    if available is not None:
        have = set(available)
        ids = [i for i in ids if i in have] + sorted(have - set(ids))
    return ids[:MAX_PODS]


def facts_of(job: Job, logs: list[PodTail]) -> Facts:
    return Facts(job.status, job.reason_code or "", job.reason_message or "", job.sub_status or "",
                 exit_codes(job), job.submit_error if isinstance(job.submit_error, dict) else {}, logs)


def archived_logs(job: Job) -> list[PodTail]:
    archived = PodLog.objects.filter(job=job).values_list("pod_id", flat=True)
    tails = []
    for pod_id in pods_to_read(job, archived):
        lines = logarchive.read(job, pod_id) or []
        while lines and not lines[-1].strip():
            lines.pop()
        tail = lines[-TAIL_LINES:]
        tails.append(PodTail(pod_id, tail, len(lines) - len(tail) + 1))
    return tails


def live_logs(job: Job) -> list[PodTail]:
    """The last TAIL_LINES lines DLC holds of each pod to read (one GetPodLogs call each), masked. Raises
    dlc.DLCError."""
    tails = []
    for pod_id in pods_to_read(job):
        pod = next(p for p in job.pods if isinstance(p, dict) and str(p.get("PodId")) == pod_id)
        start, end = logarchive.pod_range(job, pod)
        lines = dlc.get_pod_logs(job.workspace, job.dlc_job_id, pod_id, max_lines=TAIL_LINES, read_timeout_ms=10000,
                                 start_time=dlc.api_time(start), end_time=dlc.api_time(end))
        tails.append(PodTail(pod_id, logmask.mask(lines, job.secret_marks), None))
    return tails


# --- stored on the job --------------------------------------------------------------------------------------


def compute(job: Job, logs: list[PodTail], source: str) -> Diagnosis | None:
    """The job's diagnosis from these logs, stored on the job unless the logs are still to come (SOURCE_REASON).
    A live result never replaces the archive's (the archive may have been written meanwhile)."""
    found = diagnose(facts_of(job, logs), job.secret_marks)
    if found is not None:
        found.source = source
    if source == SOURCE_REASON:
        return found
    stored = found.as_json() if found is not None else {"v": VERSION, "id": None, "source": source}
    stored["at"] = timezone.now().isoformat()
    rows = Job.objects.filter(pk=job.pk)
    if source == SOURCE_LIVE:
        rows = rows.filter(logs_archived_at__isnull=True)
    rows.update(diagnosis=stored)
    job.diagnosis = stored
    return found


def from_archive(job: Job) -> Diagnosis | None:
    """Called when the job's logs were archived (jobs.logarchive.archive): the diagnosis from them, stored."""
    if job.status not in DIAGNOSED:
        return None
    return compute(job, archived_logs(job), SOURCE_ARCHIVE)


def _final(job: Job, stored: dict[str, Any]) -> bool:
    """Whether the stored result stands: from the archive, or from no log at all, or from DLC's log while the
    archive is still to come."""
    if not stored or stored.get("v") != VERSION:
        return False
    source = stored.get("source")
    return source in (SOURCE_ARCHIVE, SOURCE_NONE) or (source == SOURCE_LIVE and job.logs_archived_at is None)


def for_job(job: Job, *, read_dlc: bool = False) -> Diagnosis | None:
    """The job's diagnosis: the stored one, else computed (and stored once final). Without `read_dlc` (the job
    page, which reads only the database), a job whose logs are not archived yet is diagnosed from DLC's reason
    alone, not stored; with it (the webhook, sent before the archive), from DLC's log, stored until the archive."""
    if job.status not in DIAGNOSED or job.reason_code == dependencies.SKIPPED:
        return None
    stored = job.diagnosis if isinstance(job.diagnosis, dict) else {}
    if _final(job, stored):
        return Diagnosis.from_json(stored)
    if job.status == st.SUBMIT_FAILED or not job.dlc_job_id or not job.pods:
        return compute(job, [], SOURCE_NONE)
    if job.logs_archived_at is not None:
        return compute(job, archived_logs(job), SOURCE_ARCHIVE)
    if read_dlc:
        try:
            return compute(job, live_logs(job), SOURCE_LIVE)
        except dlc.DLCError:
            pass  # the reason alone now; the archive's diagnosis later
    return compute(job, [], SOURCE_REASON)


def rule(rule_id: str) -> Rule | None:
    return _RULES_BY_ID.get(rule_id)
