"""localdlc conformance: fault injection (503, throttling, delay, reset, lost response) and call stats."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException, ServerException, ThrottlingException
from alibabacloud_tea_openapi.models import Config
from darabonba.runtime import RuntimeOptions

from tests.test_localdlc_runner import request

pytestmark = pytest.mark.integration


def test_503_then_recovers_and_stats_count(localdlc_factory):
    dlc = localdlc_factory()
    client = dlc.client()
    dlc.set_faults({"action": "CreateJob", "mode": "503", "count": 2})
    for _ in range(2):
        with pytest.raises(ServerException) as err:
            client.create_job(request("true"))
        assert err.value.status_code == 503 and err.value.code == "ServiceUnavailable"
        assert err.value.data["RequestId"]
    job_id = client.create_job(request("true")).body.job_id
    assert job_id.startswith("dlc")
    assert dlc.faults() == []
    client.list_jobs(models.ListJobsRequest())
    client.list_jobs(models.ListJobsRequest())
    stats = dlc.stats()
    assert stats["calls"]["CreateJob"] == 3 and stats["faulted"]["CreateJob"] == 2
    assert stats["calls"]["ListJobs"] == 2
    dlc.reset_stats()
    stats = dlc.stats()
    assert (stats["calls"], stats["faulted"], stats["total"]) == ({}, {}, 0)


def test_throttling_codes(localdlc_factory):
    dlc = localdlc_factory()
    client = dlc.client()
    dlc.set_faults({"action": "ListJobs", "mode": "throttle", "count": 1})
    with pytest.raises(ClientException) as err:
        client.list_jobs(models.ListJobsRequest())
    assert err.value.code == "Throttling.User" and err.value.status_code == 400
    assert "Request was denied due to user flow control." in err.value.message
    dlc.set_faults({"action": "*", "mode": "throttle", "count": 1, "status": 429, "retry_after": 1500})
    with pytest.raises(ThrottlingException) as err:
        client.get_job("dlcx", models.GetJobRequest())
    assert err.value.status_code == 429 and err.value.retry_after == 1500
    client.list_jobs(models.ListJobsRequest())  # rules are used up


def test_seconds_window_and_delay(localdlc_factory):
    dlc = localdlc_factory()
    client = dlc.client()
    # A window of 3 s: the first call must land inside it even on a loaded machine (0.5 s did not, once); then
    # calls answer again once it has passed, and not before.
    set_at = time.monotonic()
    dlc.set_faults({"action": "ListEcsSpecs", "mode": "503", "seconds": 3})
    with pytest.raises(ServerException):
        client.list_ecs_specs(models.ListEcsSpecsRequest())
    while True:
        try:
            answered = client.list_ecs_specs(models.ListEcsSpecsRequest())
            break
        except ServerException:
            assert time.monotonic() - set_at < 60, "the window never ended"
            time.sleep(0.2)
    assert answered.body.total_count > 0 and time.monotonic() - set_at >= 3

    dlc.set_faults({"action": "ListEcsSpecs", "mode": "delay", "delay": 1.0, "count": 1})
    slow = dlc.client(read_timeout=300)
    with pytest.raises(Exception) as err:  # noqa: B017 - the SDK wraps the requests timeout
        slow.list_ecs_specs(models.ListEcsSpecsRequest())
    assert "timed out" in str(err.value).lower() or "timeout" in str(err.value).lower()
    started = time.monotonic()
    dlc.set_faults({"action": "ListEcsSpecs", "mode": "delay", "delay": 0.4, "count": 1})
    assert client.list_ecs_specs(models.ListEcsSpecsRequest()).body.total_count > 0
    assert time.monotonic() - started >= 0.4


def test_lost_response_creates_the_job_but_the_client_sees_an_error(localdlc_factory):
    dlc = localdlc_factory()
    client = dlc.client()
    tag = uuid.uuid4().hex
    dlc.set_faults({"action": "CreateJob", "mode": "lost_response", "count": 1})
    with pytest.raises(Exception) as err:  # noqa: B017 - a transport error, not an API answer
        client.create_job(request("true", settings=models.JobSettings(tags={"idem": tag})))
    assert not isinstance(err.value, ClientException | ServerException)
    adopted = client.list_jobs(models.ListJobsRequest(tags={"idem": tag})).body
    assert adopted.total_count == 1  # the job exists: an idempotent submitter adopts it

    dlc.set_faults({"action": "CreateJob", "mode": "reset", "count": 1})
    tag2 = uuid.uuid4().hex
    with pytest.raises(Exception):  # noqa: B017
        client.create_job(request("true", settings=models.JobSettings(tags={"idem": tag2})))
    assert client.list_jobs(models.ListJobsRequest(tags={"idem": tag2})).body.total_count == 0


def test_faults_from_the_command_line_and_bad_rules(localdlc_factory):
    dlc = localdlc_factory(faults=[{"action": "GetJob", "mode": "500", "count": 1}])
    client = dlc.client()
    with pytest.raises(ServerException) as err:
        client.get_job("dlcany", models.GetJobRequest())
    assert err.value.code == "InternalError" and err.value.status_code == 500
    with pytest.raises(Exception) as err:  # noqa: B017 - urllib HTTPError
        dlc.set_faults({"action": "*", "mode": "explode"})
    assert "400" in str(err.value)
    assert dlc.faults() == []


def test_sdk_retries_see_fresh_nonces(localdlc_factory):
    """With the SDK's retry policy on, a 503 is retried with a new nonce and succeeds."""
    from darabonba.policy.retry import RetryCondition, RetryOptions

    dlc = localdlc_factory()
    dlc.set_faults({"action": "ListJobs", "mode": "503", "count": 1})
    options = RetryOptions({"retryable": True, "retryCondition": [RetryCondition({
        "maxAttempts": 3, "errorCode": ["ServiceUnavailable"]})]})
    from alibabacloud_pai_dlc20201203.client import Client
    config: Config = dlc.config()
    config.retry_options = options
    client = Client(config)
    body = client.list_jobs_with_options(models.ListJobsRequest(), {}, RuntimeOptions()).body
    assert body.total_count == 0
    assert dlc.stats()["calls"]["ListJobs"] == 2
    assert json.dumps(dlc.stats()["faulted"]) == json.dumps({"ListJobs": 1})
