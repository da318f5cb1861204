"""jobs.diagnosis: a failed job's likely cause from its reason and the end of its log; stored once, shown on the
job page, in the failure mail and the webhook payload."""

from __future__ import annotations

import re
import uuid
import zlib

import pytest
from django.utils import timezone

from jobs import diagnosis, logmask
from jobs.diagnosis import Facts, PodTail
from tests import portal_fixtures as pf

TORCH_OOM = """\
epoch 3 step 1200 loss 0.4121
Traceback (most recent call last):
  File "/mnt/code/train.py", line 88, in <module>
    loss = model(**batch).loss
  File "/usr/local/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB \
of which 1.06 GiB is free. Process 1234 has 78.08 GiB memory in use.""".splitlines()
TORCH_OOM_OLD = ["RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; "
                 "14.21 GiB already allocated; 3.75 MiB free; 14.58 GiB reserved in total by PyTorch)"]
TF_OOM = [
    "2024-03-01 10:00:00.000000: W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran "
    "out of memory trying to allocate 1.00GiB (rounded to 1073741824)requested by op MatMul",
    "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
    "shape[8192,32768] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc "
    "[Op:MatMul]",
]
NCCL_TIMEOUT = ["[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                "1800302 milliseconds before timing out."]
NCCL_SYSTEM = ["torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
               "ProcessGroupNCCL.cpp:1691, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
               "version 2.19.3"]
REFUSED = ["torch.distributed.DistNetworkError: The client socket has failed to connect to [worker-0]:23456 "
           "(errno: 111 - Connection refused)."]
NO_MODULE = ["Traceback (most recent call last):", '  File "/mnt/code/train.py", line 1, in <module>',
             "    import transformers", "ModuleNotFoundError: No module named 'transformers'"]
NO_FILE = ["FileNotFoundError: [Errno 2] No such file or directory: '/mnt/data/train.jsonl'"]
NO_SCRIPT = ["python: can't open file '/mnt/code/train.py': [Errno 2] No such file or directory"]
DISK_FULL = ["OSError: [Errno 28] No space left on device"]
PERMISSION = ["PermissionError: [Errno 13] Permission denied: '/mnt/data/out/ckpt.pt'"]
OSS_DENIED = ["oss2.exceptions.AccessDenied: {'status': 403, 'code': 'AccessDenied', 'message': 'You have no right "
              "to access this object because of bucket acl.'}"]
SHM = ["RuntimeError: DataLoader worker (pid 4321) is killed by signal: Bus error. It is possible that dataloader's "
       "workers are out of shared memory. Please try to raise your shared memory limit."]
HOST_OOM = ["loading shard 7", "[ 8123.456] Out of memory: Killed process 4321 (python) total-vm:81234567kB, "
            "anon-rss:61234567kB, file-rss:0kB"]
KILLED = ["loading shard 7", "Killed"]  # what bash prints for a child killed by SIGKILL: OOM or `kill -9`
PLAIN_EXCEPTION = ["Traceback (most recent call last):", '  File "/mnt/code/train.py", line 9, in <module>',
                   "    raise ValueError('expected 3 channels, got 1')", "ValueError: expected 3 channels, got 1"]


def failed(*lines: str | list[str], pod: str = "w-0", first: int | None = 1, **fields) -> Facts:
    text: list[str] = []
    for part in lines:
        text += [part] if isinstance(part, str) else part
    return Facts("Failed", logs=[PodTail(pod, text, first)] if text else [], **fields)


@pytest.mark.parametrize(("lines", "rule"), [
    (TORCH_OOM, "gpu-oom"), (TORCH_OOM_OLD, "gpu-oom"), (TF_OOM, "gpu-oom"),
    (NCCL_TIMEOUT, "distributed"), (NCCL_SYSTEM, "distributed"), (REFUSED, "distributed"),
    (NO_MODULE, "missing-module"), (NO_FILE, "file-not-found"), (NO_SCRIPT, "file-not-found"),
    (DISK_FULL, "disk-full"), (PERMISSION, "permission-denied"), (OSS_DENIED, "permission-denied"),
    (SHM, "shared-memory"), (HOST_OOM, "host-oom"), (KILLED, "sigkill"), (PLAIN_EXCEPTION, "exception"),
    (["Memory cgroup out of memory: Killed process 77 (python) total-vm:9000kB"], "host-oom"),
    (["Error response from daemon: pull access denied for private/img, repository does not exist"], "image-pull"),
])
def test_each_rule_matches_a_real_log_and_cites_its_line(lines, rule):
    found = diagnosis.diagnose(failed(["warming up"] * 3, lines))
    assert found is not None and found.id == rule, found
    [cite] = found.cites
    assert cite["pod"] == "w-0" and 4 <= cite["line"] <= 3 + len(lines)
    assert cite["text"] == lines[cite["line"] - 4][:diagnosis.CITE_CHARS]


def test_advice_names_the_field_to_change():
    assert "Resources › Instance type" in diagnosis.diagnose(failed(TORCH_OOM)).advice
    assert "Environment › Third-party libraries" in diagnosis.diagnose(failed(NO_MODULE)).advice
    assert "Mount path" in diagnosis.diagnose(failed(NO_FILE)).advice
    assert "Shared memory (GiB)" in diagnosis.diagnose(failed(SHM)).advice


@pytest.mark.parametrize(("fields", "rule"), [
    ({"reason_code": "PodFailed", "reason_message": "Pod w-0 exited with code 137 (SIGKILL)."}, "sigkill"),
    ({"reason_code": "OOMKilled"}, "host-oom"),
    ({"sub_status": "OOMKilled"}, "host-oom"),
    ({"exit_codes": {137}}, "sigkill"),
    ({"reason_code": "PodFailed", "reason_message": "Container w-0 was oom-killed (exit code 137)."}, "host-oom"),
    ({"reason_code": "DeadlineExceeded", "reason_message": "The job ran longer than JobMaxRunningTimeMinutes=1 and "
                                                           "was terminated."}, "max-duration"),
    ({"reason_code": "ErrImagePull", "reason_message": 'Failed to pull image "registry.example/private:1"'},
     "image-pull"),
    ({"reason_code": "InsufficientResource"}, "insufficient-resource"),
])
def test_dlcs_reason_codes_sub_status_and_exit_codes_match_without_a_log(fields, rule):
    found = diagnosis.diagnose(failed(**fields))
    assert found is not None and found.id == rule
    if fields.get("reason_code"):
        assert found.cites == [{"pod": "", "line": None, "text": diagnosis._reason_text(failed(**fields))}]
    assert "Maximum duration" in diagnosis.diagnose(failed(reason_code="DeadlineExceeded")).advice


def test_exit_137_is_out_of_memory_only_with_evidence_else_a_sigkill_of_either_cause():
    # QA: `kill -9 $$` (exit 137, nothing else) was "The container ran out of memory … OOMKilled".
    bare = diagnosis.diagnose(failed(["step 5"], reason_code="PodFailed", reason_message="exit code 137",
                                     exit_codes={137}))
    assert bare.id == "sigkill" and bare.title == "The container was killed by SIGKILL (exit 137)"
    assert bare.advice.startswith("Out of memory is the usual cause, or a kill from outside")
    assert "OOMKilled" not in bare.title + bare.advice
    evidence = diagnosis.diagnose(failed(HOST_OOM, exit_codes={137}))
    assert evidence.id == "host-oom" and evidence.also == [], "the SIGKILL is the OOM, not a second cause"
    assert diagnosis.diagnose(failed(KILLED, reason_code="OOMKilled", exit_codes={137})).id == "host-oom"


def test_the_first_rule_in_priority_wins_and_the_others_are_also_seen():
    # A rank ran out of GPU memory; the others then time out in their collectives: the OOM is the cause.
    found = diagnosis.diagnose(failed(NCCL_TIMEOUT, TORCH_OOM, NO_FILE))
    assert found.id == "gpu-oom"
    assert [a["id"] for a in found.also] == ["distributed", "file-not-found"]
    assert found.also[0]["title"] == diagnosis.rule("distributed").title
    # The generic traceback is only the fallback: never the cause when a rule matched, never "also seen".
    assert diagnosis.diagnose(failed(PLAIN_EXCEPTION, DISK_FULL)).id == "disk-full"
    assert all(a["id"] != "exception" for a in diagnosis.diagnose(failed(PLAIN_EXCEPTION, DISK_FULL)).also)


def test_the_last_matching_line_of_each_failed_pod_is_cited_with_its_number():
    tails = [PodTail("w-1", ["x"] * 10 + NCCL_TIMEOUT + ["y"] + NCCL_TIMEOUT, 501), PodTail("w-0", ["fine"], 1),
             PodTail("w-2", NCCL_SYSTEM, None)]
    found = diagnosis.diagnose(Facts("Failed", logs=tails))
    assert [(c["pod"], c["line"]) for c in found.cites] == [("w-1", 513), ("w-2", None)]


def test_the_exception_fallback_names_the_last_exception_and_needs_a_traceback():
    found = diagnosis.diagnose(failed(PLAIN_EXCEPTION, "[rank0]: Traceback (most recent call last):",
                                      "[rank0]: KeyError: 'labels'"))
    assert found.id == "exception" and "The last exception was [rank0]: KeyError: 'labels'." in found.advice
    assert diagnosis.diagnose(failed(["ValueError: printed, not raised", "bye"])) is None
    assert diagnosis.diagnose(failed(["all good"], reason_code="PodFailed", reason_message="exit code 1")) is None


def test_ends_that_are_not_failures_are_not_diagnosed():
    from jobs import dependencies

    assert diagnosis.diagnose(Facts("Succeeded", logs=[PodTail("w", TORCH_OOM)])) is None
    assert diagnosis.diagnose(Facts("Stopped", reason_code=dependencies.SKIPPED)) is None
    assert diagnosis.diagnose(Facts("Failed", reason_code=dependencies.SKIPPED, exit_codes={137})) is None


@pytest.mark.parametrize(("error", "title", "advice"), [
    ({"Code": "InvalidParameter", "Message": "JobSpecs[0].Image: must not be empty"},
     "DLC refused the job: InvalidParameter (Environment)", "Environment section"),
    ({"Code": "InvalidParameter", "Message": "JobMaxRunningTimeMinutes: must be at least 1"},
     "DLC refused the job: InvalidParameter (Resources)", "Resources section"),
    ({"Code": "Forbidden.WorkspaceId", "Message": "no"}, "DLC refused the job: Forbidden.WorkspaceId (Basic "
                                                         "information)", "DLC workspace"),
    ({"Code": "QuotaExceeded"}, "DLC refused the job: QuotaExceeded (Resources)", "Resource quota"),
    ({"Code": "SomethingNew", "Message": "odd"}, "DLC refused the job: SomethingNew", "fix the job's settings"),
    ({"Code": "Console.Credentials", "Message": "no profile"}, "The console could not send the job: "
                                                               "Console.Credentials", "an admin checks"),
])
def test_a_refusal_shows_dlcs_code_and_the_wizard_section_it_is_about(error, title, advice):
    found = diagnosis.diagnose(Facts("SubmitFailed", submit_error=error))
    assert found.title == title and advice in found.advice and found.id == f"refused:{error['Code']}"
    assert found.cites[0]["text"].startswith(error["Code"])


def test_a_cited_line_and_the_exception_in_the_advice_are_masked_as_the_page_masks_the_log(settings):
    marks = logmask.marks_for(["hf_Secret0123456789"])
    line = "FileNotFoundError: [Errno 2] No such file or directory: '/mnt/data/hf_Secret0123456789/train.jsonl'"
    found = diagnosis.diagnose(failed([line]), marks)
    assert "hf_Secret0123456789" not in str(found.as_json())
    assert found.cites[0]["text"] == line.replace("hf_Secret0123456789", logmask.MASK)
    raised = diagnosis.diagnose(failed(["Traceback (most recent call last):",
                                        "ValueError: bad token hf_Secret0123456789"]), marks)
    assert "hf_Secret0123456789" not in str(raised.as_json()) and logmask.MASK in raised.advice
    # DLC's reason message as errors are redacted (dlc.redact), where it is cited.
    said = diagnosis.diagnose(failed(reason_code="OOMKilled", reason_message="AccessKeySecret=abcdef123456"))
    assert "abcdef123456" not in str(said.as_json())


def test_a_huge_line_is_matched_and_cited_by_its_start():
    found = diagnosis.diagnose(failed(["RuntimeError: CUDA out of memory. " + "x" * 1_000_000]))
    assert found.id == "gpu-oom" and len(found.cites[0]["text"]) == diagnosis.CITE_CHARS


# -- stored on the job ----------------------------------------------------------------------------------------


@pytest.fixture(name="team")
def fixture_team(db):
    return pf.make_team()


def archived_job(team, lines: list[str], *, archived=True, **fields):
    from jobs.models import PodLog

    values = {"status": "Failed", "finished_at": timezone.now(), "reason_code": "PodFailed",
              "reason_message": "Pod w exited with code 1.",
              "pods": [{"PodId": "w-0", "Type": "Worker", "Status": "Failed"},
                       {"PodId": "w-1", "Type": "Worker", "Status": "Succeeded"}],
              "logs_archived_at": timezone.now() if archived else None, **fields}
    job = pf.make_job(team.alpha, team.users["member"], f"failed-{uuid.uuid4().hex[:6]}", **values)
    for pod_id, text in (("w-0", "\n".join(lines)), ("w-1", "all fine")):
        PodLog.objects.create(job=job, pod_id=pod_id, content=zlib.compress(text.encode()),
                              lines=text.count("\n") + 1)
    return job


def test_the_diagnosis_is_computed_from_the_archive_once_and_stored(team, django_assert_max_num_queries):
    from jobs.models import Job, PodLog

    job = archived_job(team, [f"step {i}" for i in range(5000)] + TORCH_OOM)
    found = diagnosis.for_job(job)
    assert found.id == "gpu-oom" and found.source == "archive"
    assert found.cites[0] == {"pod": "w-0", "line": 5000 + len(TORCH_OOM), "text": TORCH_OOM[-1][:300]}
    stored = Job.objects.get(pk=job.pk).diagnosis
    assert stored["id"] == "gpu-oom" and stored["v"] == diagnosis.VERSION
    # Later views read the row: the log is not scanned again (a log changed under it would not be seen).
    PodLog.objects.filter(job=job).update(content=zlib.compress(b"\n".join(x.encode() for x in NO_FILE)))
    again = Job.objects.get(pk=job.pk)
    with django_assert_max_num_queries(0):
        assert diagnosis.for_job(again).as_json() == found.as_json()
    # The archive task computes it again the same way (idempotent), replacing the stored one.
    assert diagnosis.from_archive(Job.objects.get(pk=job.pk)).id == "file-not-found"


def test_only_the_last_lines_of_each_pod_are_read(team):
    job = archived_job(team, TORCH_OOM + ["step"] * diagnosis.TAIL_LINES)
    assert diagnosis.for_job(job) is None  # the OOM is before the tail read; the end says nothing


def test_before_the_archive_the_page_says_dlcs_reason_and_stores_nothing(team):
    from jobs.models import Job

    job = archived_job(team, TORCH_OOM, archived=False, reason_code="OOMKilled", reason_message="OOMKilled")
    found = diagnosis.for_job(job)  # no DLC call: the page reads the database only
    assert found.id == "host-oom" and found.source == "reason"
    assert Job.objects.get(pk=job.pk).diagnosis == {}
    Job.objects.filter(pk=job.pk).update(logs_archived_at=timezone.now())
    found = diagnosis.for_job(Job.objects.get(pk=job.pk))
    assert found.id == "gpu-oom" and [a["id"] for a in found.also] == ["host-oom"]


def test_a_refused_job_is_diagnosed_once_and_stored(team):
    from jobs.models import Job

    job = pf.make_job(team.alpha, team.users["member"], "refused", status="SubmitFailed", dlc_job_id="", pods=[],
                      submit_error={"Code": "InvalidParameter", "Message": "UserCommand: must not be empty"})
    assert diagnosis.for_job(job).title == "DLC refused the job: InvalidParameter (Environment)"
    assert Job.objects.get(pk=job.pk).diagnosis["source"] == "none"


def test_the_job_page_shows_the_likely_cause_card_masked(team):
    marks = logmask.marks_for(["hf_Secret0123456789"])
    line = "torch.OutOfMemoryError: CUDA out of memory (token hf_Secret0123456789)"
    job = archived_job(team, logmask.mask(["Traceback (most recent call last):", line], marks) + NCCL_TIMEOUT,
                       secret_marks=marks)
    page = pf.client_for(team.users["viewer"]).get(f"/jobs/{job.pk}").content.decode()
    card = page.split('id="likely-cause"', 1)[1].split("</section>", 1)[0]
    assert "GPU out of memory" in card and "Resources › Instance type" in card and "w-0, line 2" in card
    assert "Also seen: Workers lost contact with each other (NCCL / distributed)." in card
    assert "hf_Secret0123456789" not in page and "CUDA out of memory (token ********)" in card
    running = pf.client_for(team.users["viewer"]).get(f"/jobs/{team.job.pk}").content.decode()
    assert 'id="likely-cause"' not in running


def test_the_webhook_payload_and_the_failure_mail_carry_the_likely_cause(team):
    from jobs import notify, notify_email

    job = archived_job(team, NO_MODULE)
    assert notify.payload(job)["job"]["diagnosis"] == {"id": "missing-module", "title": "A Python module is missing"}
    assert notify.payload(team.job, status="Succeeded")["job"]["diagnosis"] is None
    body = notify_email.body(job, "Failed")
    [line] = [x for x in body.splitlines() if x.startswith("Likely cause:")]
    assert line.startswith("Likely cause: A Python module is missing. Add the package to Third-party libraries")
    assert "Likely cause" not in notify_email.body(team.job, "Succeeded")


# -- with the real stack ----------------------------------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.postgres
def test_a_pod_that_runs_out_of_gpu_memory_shows_the_likely_cause_on_its_page(stack, member, workspace):
    from tests.test_lifecycle import wait_for
    from tests.test_skeleton_flow import signed_in_session
    from tests.test_sync import submit_through_the_stack

    command = ("echo 'epoch 1 step 10 loss 0.9'; echo 'Traceback (most recent call last):'; "
               "echo '  File \"/mnt/code/train.py\", line 88, in <module>'; "
               "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.'; exit 1")
    job = submit_through_the_stack(stack, workspace, member, command, name=f"oom-{uuid.uuid4().hex[:6]}")

    def archived() -> bool:
        job.refresh_from_db()
        return job.status == "Failed" and job.logs_archived_at is not None

    wait_for(archived, timeout=60, what="job failed and its logs archived")
    assert job.diagnosis["id"] == "gpu-oom" and job.diagnosis["source"] == "archive"
    page = signed_in_session(stack.url, member.username).get(f"{stack.url}/jobs/{job.pk}").text
    card = page.split('id="likely-cause"', 1)[1].split("</section>", 1)[0]
    assert "GPU out of memory" in card and re.search(r", line \d+</a>", card)
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB." in card
