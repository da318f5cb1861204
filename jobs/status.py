"""The one place that maps job states to what pages show.

A Job's `status` holds either a console-side state (before DLC knows the job) or the DLC status string
as GetJob/ListJobs return it.
"""

# Console-side states: the job is ours only.
SUBMITTING = "Submitting"  # saved, waiting for a worker to call CreateJob
SUBMIT_FAILED = "SubmitFailed"  # CreateJob answered with a permanent error
WAITING = "Waiting"  # held until its upstream job ends (jobs.dependencies); never sent to DLC meanwhile

# DLC job statuses (GetJob / ListJobs docstrings of the SDK).
DLC_STATUSES = [
    "Creating",
    "Queuing",
    "Bidding",
    "EnvPreparing",
    "SanityChecking",
    "Running",
    "Restarting",
    "Stopping",
    "SucceededReserving",
    "FailedReserving",
    "Succeeded",
    "Failed",
    "Stopped",
]
TERMINAL = frozenset({"Succeeded", "Failed", "Stopped", SUBMIT_FAILED})
ALL = [WAITING, SUBMITTING, SUBMIT_FAILED, *DLC_STATUSES]

LABELS = {
    WAITING: "Waiting for upstream job",
    SUBMITTING: "Waiting to submit",
    SUBMIT_FAILED: "Submit failed",
    "EnvPreparing": "Preparing environment",
    "SanityChecking": "Sanity checking",
    "SucceededReserving": "Succeeded (reserving)",
    "FailedReserving": "Failed (reserving)",
}

# Colour family for the status badge.
TONES = {
    WAITING: "pending",
    SUBMITTING: "pending",
    "Creating": "pending",
    "Queuing": "pending",
    "Bidding": "pending",
    "EnvPreparing": "pending",
    "SanityChecking": "running",
    "Running": "running",
    "Restarting": "running",
    "Stopping": "warning",
    "SucceededReserving": "success",
    "Succeeded": "success",
    "FailedReserving": "danger",
    "Failed": "danger",
    SUBMIT_FAILED: "danger",
    "Stopped": "muted",
}


def label(status: str) -> str:
    return LABELS.get(status, status)


def tone(status: str) -> str:
    return TONES.get(status, "muted")


def is_active(status: str) -> bool:
    return status not in TERMINAL


def is_terminal(status: str) -> bool:
    return status in TERMINAL


def is_stoppable(status: str) -> bool:
    # A job still waiting to be submitted (or for its upstream) can be stopped too: never sent, it is cancelled; in
    # flight, the submit stops it as soon as DLC has given it an id (lifecycle.request_stop).
    return status not in TERMINAL and status != "Stopping"
