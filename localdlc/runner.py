"""Pods as local processes, and the scheduler thread that walks each job through the DLC lifecycle.

Creating -> [Queuing] -> EnvPreparing -> Running -> Succeeded | Failed | Stopped (via Stopping on StopJob).

One scheduler thread owns every process: it admits jobs against the emulated capacity (highest Priority
first, then oldest, strictly in that order so a big job is not starved), spawns pods, polls them, enforces
JobMaxRunningTimeMinutes and escalates SIGTERM to SIGKILL. All pods are spawned from that one long-lived
thread on purpose: PR_SET_PDEATHSIG fires when the *thread* that forked the child exits.

The scheduler's work follows what can change, not how many jobs wait: a queued job is only looked at when the
queue may move (a job arrives, leaves Creating, ends, or changes priority), and only from the head of the queue
until the first that does not fit. The thread ticks while some job has pods, is preparing or is being stopped,
and otherwise sleeps until the next job is due to leave Creating or a call wakes it.

Each pod runs as ``sh -c <command>`` in its own session (so the whole process group can be signalled),
in a per-pod working directory; a reader thread timestamps every stdout/stderr line into the pod's log
file as "<epoch>\\t<line>" records, which GetPodLogs filters by time.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import itertools
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import metrics, validation
from .store import Store

ACTIVE = ("Creating", "Queuing", "EnvPreparing", "Running", "Stopping")
TERMINAL = validation.TERMINAL
# Role order decides RANK: the master (or chief) is rank 0, then the rest in DLC's usual order.
ROLE_ORDER = ("Master", "Chief", "Head", "Launcher", "PS", "Worker", "Evaluator", "GraphLearn")
MASTER_STYLE = ("PyTorchJob", "XGBoostJob", "OneFlowJob", "ElasticBatchJob", "SlurmJob", "DataJuicerJob")
# Environment the pods must not inherit from the server (its own credentials).
_SECRET_ENV = ("LOCALDLC_ACCESS_KEY_ID", "LOCALDLC_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_ACCESS_KEY_ID",
               "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN")
_PR_SET_PDEATHSIG = 1
_GUARDIAN = str(Path(__file__).with_name("guardian.py"))

try:  # Linux only; elsewhere the guardian process and restart sweep still clean up.
    _LIBC = ctypes.CDLL(None, use_errno=True)
except OSError:  # pragma: no cover
    _LIBC = None


def _die_with_parent() -> None:
    """preexec_fn: SIGKILL this pod if the localdlc scheduler thread (hence localdlc) dies."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@dataclass
class RunnerConfig:
    data_dir: Path
    cpu: float
    memory_gib: float
    gpu: float
    creating_seconds: float = 0.3
    env_seconds: float = 0.3
    minute_seconds: float = 60.0
    grace_seconds: float = 3.0
    tick_seconds: float = 0.05
    metrics_seconds: float = 2.0  # how often running pods' CPU, memory and I/O are sampled


@dataclass
class _Proc:
    pod_id: str
    popen: subprocess.Popen
    reader: threading.Thread
    exit_code: int | None = None
    exited_at: float | None = None
    started: float = 0.0  # wall time of the spawn: a pod's first CPU rate is over its life until then


@dataclass
class _Job:
    job_id: str
    created: float
    priority: int
    status: str
    since: float
    need: tuple[float, float, float]
    max_minutes: int = 0
    grace: float = 3.0
    stop_requested: bool = False
    reserved: bool = False
    deadline: float | None = None
    outcome: tuple[str, str, str] | None = None
    kill_at: float | None = None
    procs: dict[str, _Proc] = field(default_factory=dict)
    considered: list[str] = field(default_factory=list)
    seq: int = 0  # arrival order: among equal priority and creation time, the first added goes first


def _queue_order(job: _Job) -> tuple[int, float, int]:
    return -job.priority, job.created, job.seq


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def plan_pods(job_id: str, body: dict[str, Any], now: float) -> tuple[list[dict[str, Any]], tuple]:
    """The pod records for a validated CreateJob body, and the job's total (cores, GiB, GPUs)."""
    specs = sorted(enumerate(body["JobSpecs"]),
                   key=lambda e: (ROLE_ORDER.index(e[1]["Type"]) if e[1]["Type"] in ROLE_ORDER
                                  else len(ROLE_ORDER), e[0]))
    pods: list[dict[str, Any]] = []
    total = [0.0, 0.0, 0.0]
    for spec_index, spec in specs:
        cpu, mem, gpu = validation.pod_request(spec, f"JobSpecs[{spec_index}]")
        for i in range(spec["PodCount"]):
            pods.append({
                "PodId": f"{job_id}-{spec['Type'].lower()}-{i}",
                "PodUid": str(uuid.uuid4()),
                "Type": spec["Type"],
                "Index": i,
                "Rank": len(pods),
                "SpecIndex": spec_index,
                "Status": "Pending",
                "Image": spec.get("Image") or "",
                "Command": spec.get("UserCommand") or body["UserCommand"],
                "created": now, "started": None, "finished": None,
                "ExitCode": None, "Pid": None, "Request": [cpu, mem, gpu],
            })
            total = [total[0] + cpu, total[1] + mem, total[2] + gpu]
    return pods, tuple(total)


def considered_pods(doc: dict[str, Any]) -> list[str]:
    """Pods whose success makes the job succeed (SuccessPolicy / ConsiderInSuccessPolicy).

    TFJob: PS and Evaluator pods serve forever, so by default only the others count (AllWorkers); with
    ChiefWorker only the Chief (or worker 0) counts. Other job types: every pod. Remaining pods are then
    terminated, as the operators do.
    """
    request = doc.get("Request") or {}
    specs = request.get("JobSpecs") or []
    pods = doc.get("Pods", [])
    has_chief = any(p["Type"] == "Chief" for p in pods)
    considered = []
    for pod in pods:
        spec = specs[pod["SpecIndex"]] if pod["SpecIndex"] < len(specs) else {}
        if request.get("JobType") != "TFJob":
            default = True
        elif request.get("SuccessPolicy") == "ChiefWorker":
            default = pod["Type"] == "Chief" if has_chief else (pod["Type"] == "Worker" and pod["Index"] == 0)
        else:
            default = pod["Type"] not in ("PS", "Evaluator")
        flag = spec.get("ConsiderInSuccessPolicy")
        if flag if isinstance(flag, bool) else default:
            considered.append(pod["PodId"])
    return considered or [p["PodId"] for p in pods]


def apply_transition(doc: dict[str, Any], status: str, now: float, code: str = "", message: str = "") -> None:
    """Close the current StatusHistory entry, open the next one, and keep the Gmt*Time fields in step."""
    history = doc.setdefault("StatusHistory", [])
    if history and history[-1].get("EndTime") is None:
        history[-1]["EndTime"] = now
    history.append({"Status": status, "StartTime": now, "EndTime": now if status in TERMINAL else None,
                    "ReasonCode": code, "ReasonMessage": message})
    doc["Status"] = status
    doc["ReasonCode"] = code
    doc["ReasonMessage"] = message
    doc["modified"] = now
    if status in ("Queuing", "EnvPreparing") and not doc.get("submitted"):
        doc["submitted"] = now
    if status == "Running":
        doc["running"] = now
    if status in TERMINAL:
        doc["finished"] = now
        doc[{"Succeeded": "succeeded", "Failed": "failed", "Stopped": "stopped"}[status]] = now


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _pump(stream: Any, log_path: Path) -> None:
    """Copy a pod's output into its log, one '<epoch>\\t<line>' record per line."""
    with open(log_path, "ab", buffering=0) as out:
        for raw in iter(stream.readline, b""):
            line = raw[:-1] if raw.endswith(b"\n") else raw
            # A carriage return stays in its line, as a container runtime keeps it (tqdm's updates are one line).
            out.write(f"{time.time():.6f}\t".encode() + line + b"\n")
    stream.close()


def _process_groups_with_marker(marker: bytes) -> dict[int, int]:
    """{pid: pgid} of live processes whose environment carries the given LOCALDLC_POD_ID marker."""
    found: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if marker not in fh.read().split(b"\0"):
                    continue
            found[int(entry)] = os.getpgid(int(entry))
        except (OSError, ProcessLookupError):
            continue
    return found


class Runner:
    """Owns the pods of every active job; the HTTP layer only records requests and calls in here."""

    def __init__(self, store: Store, config: RunnerConfig) -> None:
        self.store = store
        self.cfg = config
        self._lock = threading.RLock()
        self._jobs: dict[str, _Job] = {}
        # Every active job is in exactly one of these three (_place / _unplace): Creating ones, the queue of
        # Queuing ones in admission order, and the rest (being stopped, preparing, running), which each tick
        # looks at. With 10k queued jobs a tick then costs what the running ones cost.
        self._creating: dict[str, _Job] = {}
        self._queue: list[_Job] = []
        self._busy: dict[str, _Job] = {}
        self._arrivals = itertools.count()
        self._used = [0.0, 0.0, 0.0]
        # When the queue must next be looked at (monotonic; 0 = at the next tick). Admission only changes
        # when a job arrives, leaves Creating, ends (capacity freed) or changes priority.
        self._admit_due = 0.0
        self._stop = threading.Event()
        # Set by the HTTP threads' calls (CreateJob, StopJob, UpdateJob), so an idle scheduler can sleep.
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._guardian: subprocess.Popen | None = None
        self._base_env = {k: v for k, v in os.environ.items() if k not in _SECRET_ENV}
        self.metrics = metrics.Sampler(config.metrics_seconds)

    # -- lifecycle of the runner itself ------------------------------------------------------------------
    def start(self) -> None:
        self._guardian = subprocess.Popen([sys.executable, _GUARDIAN], stdin=subprocess.PIPE,
                                          start_new_session=True, text=True)
        self.recover()
        self._thread = threading.Thread(target=self._loop, name="localdlc-scheduler", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        """Graceful stop: end the scheduler, then SIGKILL any pod group still running."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for job in self._jobs.values():
                for proc in job.procs.values():
                    if proc.exit_code is None:
                        _signal_group(proc.popen.pid, signal.SIGKILL)
        if self._guardian is not None and self._guardian.stdin is not None:
            with contextlib.suppress(OSError):
                self._guardian.stdin.close()

    def recover(self) -> None:
        """After a restart: pods of running jobs died with the old process; fail those jobs, requeue the rest."""
        now = time.time()
        for doc in self.store.jobs_in_status(list(ACTIVE)):
            job_id = doc["JobId"]
            if doc["Status"] in ("Creating", "Queuing"):
                self._place(self._new_state(doc, doc["Status"]))
                self._event(job_id, None, "Normal", "Recovered",
                            f"localdlc restarted; job resumes in status {doc['Status']}")
                continue
            if doc["Status"] == "EnvPreparing" and not any(p.get("Pid") for p in doc.get("Pods", [])):
                # No process had started yet, so nothing was lost: queue it again (its reservation is gone).
                self.store.update_job(job_id, lambda d: apply_transition(
                    d, "Queuing", now, "LocalDLCRestarted", "localdlc restarted before the pods started."))
                self._place(self._new_state(doc, "Queuing"))
                continue
            for pod in doc.get("Pods", []):
                if pod.get("Pid") and pod.get("finished") is None:
                    marker = f"LOCALDLC_POD_ID={pod['PodId']}".encode()
                    for pgid in set(_process_groups_with_marker(marker).values()):
                        _signal_group(pgid, signal.SIGKILL)
            final = "Stopped" if doc["Status"] == "Stopping" else "Failed"
            message = ("localdlc was restarted while this job was active; its pod processes were "
                       "terminated with it.")

            def mutate(d: dict[str, Any], final: str = final, message: str = message) -> None:
                for pod in d.get("Pods", []):
                    if pod.get("finished") is None:
                        pod["Status"] = "Failed" if pod.get("started") else pod["Status"]
                        pod["finished"] = now if pod.get("started") else None
                apply_transition(d, final, now, "LocalDLCRestarted", message)

            self.store.update_job(job_id, mutate)
            self._event(job_id, None, "Warning", "LocalDLCRestarted", message)

    def _new_state(self, doc: dict[str, Any], status: str) -> _Job:
        settings = doc["Request"].get("Settings") or {}
        grace = settings.get("TerminationGracePeriodSeconds")
        return _Job(job_id=doc["JobId"], created=doc["created"], priority=int(doc.get("Priority") or 1),
                    status=status, since=time.monotonic(), need=tuple(doc["Need"]),
                    max_minutes=int(doc["Request"].get("JobMaxRunningTimeMinutes") or 0),
                    grace=float(grace) if isinstance(grace, int) and grace >= 0 else self.cfg.grace_seconds,
                    seq=next(self._arrivals))

    def _place(self, job: _Job) -> None:
        """File an active job where the scheduler looks for it (see __init__); _unplace first if it was filed."""
        self._jobs[job.job_id] = job
        if job.stop_requested or job.status not in ("Creating", "Queuing"):
            self._busy[job.job_id] = job
        elif job.status == "Creating":
            self._creating[job.job_id] = job
        else:
            bisect.insort(self._queue, job, key=_queue_order)

    def _unplace(self, job: _Job) -> None:
        """Take a job out of its place (not out of _jobs); nothing if it is in none. Its order must not have
        changed since it was placed."""
        if self._busy.pop(job.job_id, None) is not None or self._creating.pop(job.job_id, None) is not None:
            return
        i = bisect.bisect_left(self._queue, _queue_order(job), key=_queue_order)
        if i < len(self._queue) and self._queue[i] is job:
            del self._queue[i]

    # -- calls from the HTTP layer -----------------------------------------------------------------------
    def add(self, doc: dict[str, Any]) -> None:
        with self._lock:
            self._place(self._new_state(doc, "Creating"))
            self._admit_due = 0.0
        self._wake.set()

    def is_active(self, job_id: str) -> bool:
        with self._lock:
            return job_id in self._jobs

    def request_stop(self, job_id: str) -> bool:
        """Mark the job Stopping; the scheduler does the killing. False if it is not active."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return False
            if job.stop_requested or job.outcome is not None:
                return True
            self._unplace(job)
            job.stop_requested = True
            self._transition(job, "Stopping", "", "The job is being stopped at the user's request.")
            self._place(job)
        self._wake.set()
        return True

    def set_priority(self, job_id: str, priority: int) -> None:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return
            self._unplace(job)
            job.priority = priority
            self._place(job)
            self._admit_due = 0.0
        self._wake.set()

    def capacity(self) -> dict[str, Any]:
        with self._lock:
            return {"cpu": self.cfg.cpu, "memory_gib": self.cfg.memory_gib, "gpu": self.cfg.gpu,
                    "used": {"cpu": self._used[0], "memory_gib": self._used[1], "gpu": self._used[2]},
                    "active_jobs": len(self._jobs)}

    # -- scheduler -----------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            # Cleared before the tick: a call that lands during it makes the wait below return at once.
            self._wake.clear()
            try:
                self.tick()
            except Exception as exc:  # keep scheduling other jobs; the error goes to stderr
                print(f"localdlc scheduler error: {exc!r}", file=sys.stderr, flush=True)
            self._wake.wait(self._next_tick_in())

    def _next_tick_in(self) -> float | None:
        """Seconds until the scheduler has something to do without being woken; None: nothing until then."""
        with self._lock:
            if self._busy:  # pods to poll, an environment to prepare, a stop or a kill to carry out
                return self.cfg.tick_seconds
            if math.isinf(self._admit_due):
                return None
            return max(0.0, self._admit_due - time.monotonic())

    def tick(self) -> None:
        now = time.monotonic()
        with self._lock:
            for job in [j for j in self._busy.values() if j.stop_requested and not j.procs]:
                self._finish(job, "Stopped", "JobStoppedByUser", "The job was stopped by the user.")
            if now >= self._admit_due:
                self._admit(now)
            for job in list(self._busy.values()):
                if job.procs:
                    self._poll(job, now)
                elif job.status == "EnvPreparing" and now - job.since >= self.cfg.env_seconds:
                    self._spawn(job)
            # Piggybacks on the ticks that run while pods do, so an idle localdlc never reads /proc.
            running = {} if not self.metrics.due(now) else {
                proc.pod_id: (proc.popen.pid, proc.started)
                for job in self._busy.values() for proc in job.procs.values() if proc.exit_code is None}
        if running:  # outside the lock: the HTTP threads' calls need not wait for /proc
            self.metrics.sample(running, time.time(), now)

    def _fits(self, need: tuple, free: list[float]) -> bool:
        return all(n <= f + 1e-9 for n, f in zip(need, free, strict=True))

    def _admit(self, now: float) -> None:
        """Start queued jobs from the head of the queue while they fit, in strict order: nothing behind a waiting
        job may jump ahead of it, so the jobs behind the first that does not fit are not even looked at."""
        arrived = [j for j in self._creating.values() if now >= j.since + self.cfg.creating_seconds]
        for job in arrived:  # done Creating: into the queue, in order, before the queue is walked
            del self._creating[job.job_id]
            bisect.insort(self._queue, job, key=_queue_order)
        total = [self.cfg.cpu, self.cfg.memory_gib, self.cfg.gpu]
        while self._queue:
            job = self._queue[0]
            if not self._fits(job.need, total):
                self._finish(job, "Failed", "InsufficientResource", _too_big(job, total))
                continue
            if not self._fits(job.need, self._free(total)):
                break
            del self._queue[0]
            self._used = [u + n for u, n in zip(self._used, job.need, strict=True)]
            job.reserved = True
            self._transition(job, "EnvPreparing", "", "Resources allocated; preparing the environment.")
            self._busy[job.job_id] = job
        # The new jobs that were not started wait in the queue (in place: their order did not change).
        for job in arrived:
            if job.status != "Creating":
                continue
            if not self._fits(job.need, total):
                self._finish(job, "Failed", "InsufficientResource", _too_big(job, total))
                continue
            self._transition(job, "Queuing", "InsufficientResource",
                             f"Waiting for resources: needs {_fmt_need(job.need)}, free "
                             f"{_fmt_need(tuple(self._free(total)))}.")
        self._admit_due = min((j.since + self.cfg.creating_seconds for j in self._creating.values()),
                              default=math.inf)

    def _free(self, total: list[float]) -> list[float]:
        return [t - u for t, u in zip(total, self._used, strict=True)]

    def _spawn(self, job: _Job) -> None:
        doc = self.store.get_job(job.job_id, include_deleted=True)
        if doc is None:
            self._finish(job, "Failed", "InternalError", "The job record disappeared.")
            return
        try:
            envs, workdirs = self._prepare(doc)
        except _EnvError as exc:
            self._finish(job, "Failed", exc.code, str(exc))
            return
        except OSError as exc:  # e.g. the data dir is not writable, or a mount path collides
            self._finish(job, "Failed", "PodStartFailed", f"Preparing the pod working directories failed: {exc}")
            return
        job.considered = considered_pods(doc)
        logs = self.cfg.data_dir / "jobs" / job.job_id / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        started: dict[str, tuple[int, float]] = {}
        for pod in doc["Pods"]:
            try:
                popen = subprocess.Popen(
                    ["sh", "-c", pod["Command"]], cwd=workdirs[pod["PodId"]], env=envs[pod["PodId"]],
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=_die_with_parent)
            except OSError as exc:
                for proc in job.procs.values():
                    _signal_group(proc.popen.pid, signal.SIGKILL)
                job.outcome = ("Failed", "PodStartFailed", f"Pod {pod['PodId']} could not start: {exc}")
                job.kill_at = time.monotonic()
                break
            self._register(popen.pid)
            reader = threading.Thread(target=_pump, args=(popen.stdout, logs / f"{pod['PodId']}.log"),
                                      name=f"log-{pod['PodId']}", daemon=True)
            reader.start()
            job.procs[pod["PodId"]] = _Proc(pod["PodId"], popen, reader, started=time.time())
            started[pod["PodId"]] = (popen.pid, job.procs[pod["PodId"]].started)
        if job.outcome is not None and not job.procs:
            self._finish(job, *job.outcome)
            return
        self.metrics.soon()
        now = time.time()

        def mutate(d: dict[str, Any]) -> None:
            for pod in d["Pods"]:
                if pod["PodId"] in started:
                    pod["Pid"], pod["started"] = started[pod["PodId"]]
                    pod["Status"] = "Running"
                    pod["Ip"] = "127.0.0.1"
            if job.outcome is None:
                apply_transition(d, "Running", now)

        self.store.update_job(job.job_id, mutate)
        for pod_id, (pid, _) in started.items():
            self._event(job.job_id, pod_id, "Normal", "Started", f"Started pod {pod_id} as process {pid}")
        if job.outcome is None:
            job.status = "Running"
            job.since = time.monotonic()
            if job.max_minutes > 0:
                job.deadline = job.since + job.max_minutes * self.cfg.minute_seconds
            self._event(job.job_id, None, "Normal", "Running", "All pods started; the job is running.")

    def _poll(self, job: _Job, now: float) -> None:
        for proc in job.procs.values():
            if proc.exit_code is not None:
                continue
            rc = proc.popen.poll()
            if rc is None:
                continue
            proc.exit_code = rc if rc >= 0 else 128 - rc
            proc.exited_at = now
            # Like a container: once the main process exits, anything it left behind is killed.
            _signal_group(proc.popen.pid, signal.SIGKILL)
            self._unregister(proc.popen.pid)
            # The group is dead, so the pipe closes: let the reader drain it, or GetPodLogs right after the
            # job ends would miss the pod's last lines.
            proc.reader.join(timeout=2)
            self._pod_exited(job, proc)
        alive = [p for p in job.procs.values() if p.exit_code is None]
        if job.outcome is None:
            failed = sorted((p for p in job.procs.values() if p.exit_code not in (None, 0)),
                            key=lambda p: p.exited_at or 0)
            if job.stop_requested:
                job.outcome = ("Stopped", "JobStoppedByUser", "The job was stopped by the user.")
            elif failed:
                first = failed[0]
                job.outcome = ("Failed", "PodFailed", f"Pod {first.pod_id} exited with code {first.exit_code}"
                               f"{_signal_note(first.exit_code)}.")
            elif all(job.procs[p].exit_code == 0 for p in job.considered if p in job.procs):
                job.outcome = ("Succeeded", "", "")
            elif job.deadline is not None and now >= job.deadline:
                job.outcome = ("Failed", "DeadlineExceeded",
                               f"The job ran longer than JobMaxRunningTimeMinutes={job.max_minutes} and was "
                               "terminated.")
            if job.outcome is not None and alive:
                for proc in alive:
                    _signal_group(proc.popen.pid, signal.SIGTERM)
                job.kill_at = now + job.grace
                self._event(job.job_id, None, "Normal", "Killing",
                            f"Sending SIGTERM to {len(alive)} pod(s); SIGKILL after {job.grace:g}s.")
        if job.outcome is None:
            return
        if alive and job.kill_at is not None and now >= job.kill_at:
            for proc in alive:
                _signal_group(proc.popen.pid, signal.SIGKILL)
            job.kill_at = now + 1.0
        if alive:
            return
        # Wait (briefly) for the log readers so GetPodLogs is complete once the job is terminal.
        if any(p.reader.is_alive() for p in job.procs.values()) and \
                now - max(p.exited_at or now for p in job.procs.values()) < 2.0:
            return
        self._finish(job, *job.outcome)

    def _pod_exited(self, job: _Job, proc: _Proc) -> None:
        now = time.time()
        code = proc.exit_code

        def mutate(d: dict[str, Any]) -> None:
            for pod in d["Pods"]:
                if pod["PodId"] == proc.pod_id:
                    # A pod we terminated because the job already succeeded (e.g. a TF parameter server)
                    # completed normally from the job's point of view.
                    ok = code == 0 or (job.outcome is not None and job.outcome[0] == "Succeeded")
                    pod["Status"] = "Succeeded" if ok else "Failed"
                    pod["ExitCode"] = code
                    pod["finished"] = now

        self.store.update_job(job.job_id, mutate)
        self._event(job.job_id, proc.pod_id, "Normal" if code == 0 else "Warning", "Exited",
                    f"Pod {proc.pod_id} exited with code {code}{_signal_note(code or 0)}")

    def _finish(self, job: _Job, status: str, code: str, message: str) -> None:
        self._admit_due = 0.0
        self._unplace(job)
        if job.reserved:
            self._used = [max(0.0, u - n) for u, n in zip(self._used, job.need, strict=True)]
            job.reserved = False
        self._jobs.pop(job.job_id, None)
        self._transition(job, status, code, message)

    def _transition(self, job: _Job, status: str, code: str, message: str) -> None:
        now = time.time()
        job.status = status
        job.since = time.monotonic()
        self.store.update_job(job.job_id, lambda d: apply_transition(d, status, now, code, message))
        self._event(job.job_id, None, "Warning" if status == "Failed" else "Normal", status,
                    message or f"The job is {status}.")

    def _event(self, job_id: str, pod_id: str | None, kind: str, reason: str, message: str) -> None:
        now = time.time()
        self.store.add_event(job_id, pod_id, now, f"{iso(now)} [{kind}] {reason}: {message}")

    # -- guardian ------------------------------------------------------------------------------------------
    def _register(self, pgid: int) -> None:
        self._guardian_write(f"+{pgid}\n")

    def _unregister(self, pgid: int) -> None:
        self._guardian_write(f"-{pgid}\n")

    def _guardian_write(self, line: str) -> None:
        if self._guardian is None or self._guardian.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._guardian.stdin.write(line)
            self._guardian.stdin.flush()

    # -- environment -------------------------------------------------------------------------------------
    def _prepare(self, doc: dict[str, Any]) -> tuple[dict[str, dict[str, str]], dict[str, Path]]:
        """Per-pod working directories (with data-source symlinks) and environments."""
        request = doc["Request"]
        job_id = doc["JobId"]
        pods = doc["Pods"]
        job_type = request["JobType"]
        common = dict(self._base_env)
        common.update({
            "PYTHONUNBUFFERED": "1",
            "JOB_NAME": job_id,
            "JOB_ID": job_id,
            "LOCALDLC_JOB_ID": job_id,
            "WORLD_SIZE": str(len(pods)),
        })
        for item in request.get("CustomEnvs") or []:
            common[item["Key"]] = item.get("Value") or ""
        common.update(request.get("Envs") or {})

        if job_type in MASTER_STYLE:
            common["MASTER_ADDR"] = "127.0.0.1"
            common["MASTER_PORT"] = str(free_port())
        tf_cluster: dict[str, list[str]] = {}
        tf_ports: dict[str, int] = {}
        if job_type == "TFJob":
            for pod in pods:
                port = free_port()
                tf_ports[pod["PodId"]] = port
                if pod["Type"] != "Evaluator":  # as in the Kubeflow TF operator: evaluators stay out of the cluster
                    tf_cluster.setdefault(pod["Type"].lower(), []).append(f"127.0.0.1:{port}")
        # Real free ports cost a socket each: hand out at most 100 per pod however many were asked for.
        ports_per_pod = min(100, validation.custom_port_count(request.get("Settings")))

        envs: dict[str, dict[str, str]] = {}
        workdirs: dict[str, Path] = {}
        for pod in pods:
            workdir = self.cfg.data_dir / "jobs" / job_id / "pods" / pod["PodId"]
            workdir.mkdir(parents=True, exist_ok=True)
            env = dict(common)
            env.update({"POD_NAME": pod["PodId"], "LOCALDLC_POD_ID": pod["PodId"],
                        "DLC_MOUNT_ROOT": str(workdir), "DLC_ROLE": pod["Type"]})
            if job_type != "TFJob":
                env["RANK"] = str(pod["Rank"])
            if job_type == "TFJob":
                env["TF_CONFIG"] = json.dumps({
                    "cluster": tf_cluster,
                    "task": {"type": pod["Type"].lower(), "index": pod["Index"]},
                    "environment": "cloud",
                })
            if ports_per_pod:
                env["CUSTOM_PORTS"] = ";".join(str(free_port()) for _ in range(ports_per_pod))
            self._mount(request.get("DataSources") or [], workdir, env)
            envs[pod["PodId"]] = env
            workdirs[pod["PodId"]] = workdir
        return envs, workdirs

    @staticmethod
    def _mount(sources: list[dict[str, Any]], workdir: Path, env: dict[str, str]) -> None:
        """A process cannot mount: link <workdir>/<MountPath without leading '/'> to the local source."""
        for n, ds in enumerate(sources):
            uri, mount = ds.get("Uri") or "", ds.get("MountPath") or ""
            if not uri or not mount:
                continue
            if uri.startswith("file://"):
                source = uri[len("file://"):]
            elif uri.startswith("/"):
                source = uri
            else:
                continue  # oss://, nas://, ...: recorded only, nothing local to link
            if not os.path.exists(source):
                raise _EnvError("DataSourceMountFailed",
                                f"DataSources[{n}].Uri: local path {source} does not exist.")
            link = workdir / mount.lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(source)
            env[f"DLC_MOUNT_{n}"] = str(link)


class _EnvError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _too_big(job: _Job, total: list[float]) -> str:
    return (f"The job needs {_fmt_need(job.need)} but localdlc's whole capacity is "
            f"{_fmt_need(tuple(total))}.")


def _fmt_need(need: tuple) -> str:
    return f"{need[0]:g} CPU, {need[1]:g} GiB memory, {need[2]:g} GPU"


def _signal_note(code: int) -> str:
    return f" (signal {code - 128})" if code > 128 else ""
