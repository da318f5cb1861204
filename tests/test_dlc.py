"""How SDK failures become console errors: what is retried, what is final, what may have taken effect."""

import pytest
from alibabacloud_tea_openapi import exceptions as api_exceptions

from jobs import dlc


def sdk_error(cls, status, code, message="boom", request_id="RID-1"):
    return cls(status_code=status, code=code, message=f"code: {status}, {message} request id: {request_id}",
               request_id=request_id, data={"Code": code, "Message": message, "RequestId": request_id})


@pytest.mark.parametrize(
    ("exc", "transient", "ambiguous"),
    [
        (sdk_error(api_exceptions.ClientException, 400, "InvalidParameter"), False, False),
        (sdk_error(api_exceptions.ClientException, 400, "Throttling.User"), True, False),
        (sdk_error(api_exceptions.ClientException, 429, "TooManyRequests"), True, False),
        (sdk_error(api_exceptions.ServerException, 503, "ServiceUnavailable"), True, False),
        (sdk_error(api_exceptions.ThrottlingException, 400, "Throttling"), True, False),
        (ConnectionResetError("reset by peer"), True, True),
        (TimeoutError("read timed out"), True, True),
    ],
)
def test_classify(exc, transient, ambiguous):
    err = dlc.classify(exc)
    assert (err.transient, err.ambiguous) == (transient, ambiguous)


def test_classify_keeps_code_message_and_request_id_from_the_answer():
    err = dlc.classify(sdk_error(api_exceptions.ClientException, 400, "InvalidParameter", "PodCount must be >= 1"))
    assert err.code == "InvalidParameter"
    assert err.message == "PodCount must be >= 1"
    assert err.request_id == "RID-1"
    assert err.as_dict() == {"Code": "InvalidParameter", "Message": "PodCount must be >= 1",
                             "RequestId": "RID-1", "Status": 400}


def test_a_credentials_error_that_quotes_an_sts_answer_keeps_no_secret():
    """The credentials library's own error for an STS answer that lacks a field quotes the whole answer, a
    temporary AccessKeySecret and SecurityToken included (provider/ram_role_arn.py); the error's text is
    logged, stored on the job and shown. Built by hand: no STS can be asked for such an answer here."""
    from alibabacloud_credentials.exceptions import CredentialException

    body = ('{"RequestId": "R1", "Credentials": {"AccessKeyId": "STS.NUgYrLnoC", "AccessKeySecret": "s3cr3t+/Key=", '
            '"Expiration": "2026-12-01T00:00:00Z"}, "AssumedRoleUser": {"Arn": "acs:ram::1:role/x"}}')
    err = dlc.classify(CredentialException(f"error retrieving credentials from ram_role_arn result: {body}"))
    assert err.code == "Console.Credentials"
    assert "s3cr3t" not in err.message and '"AccessKeySecret": ***' in err.message
    assert "error retrieving credentials" in err.message and "STS.NUgYrLnoC" in err.message  # still says what failed


@pytest.mark.parametrize(("text", "shown"), [
    ("SecurityToken=CAIS.abc&x=1", "SecurityToken=***&x=1"),
    ("{'security_token': 'two words'}", "{'security_token': ***}"),
    ("password: hunter2", "password: ***"),
    ("token expired", "token expired"),  # a word, not a value
    ("SecurityToken missing", "SecurityToken missing"),
])
def test_redact_masks_the_values_of_secrets_only(text, shown):
    assert dlc.redact(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("unable to open credentials file: /root/.aliyun/config.json", "unable to open credentials file: <server file>"),
    ("from credentials file: $/home/x/.alibabacloud/credentials.ini']", "from credentials file: $<server file>']"),
    ("profile file ~/.alibabacloud/credentials.ini missing", "profile file <server file> missing"),
    ("url http://100.100.100.200/latest/meta-data/ram", "url http://100.100.100.200/latest/meta-data/ram"),
    ("a/b and 1/2", "a/b and 1/2"),
])
def test_server_file_paths_are_taken_out_of_local_errors(text, shown):
    assert dlc.strip_paths(text) == shown


CHAIN_DETAILS = ("/root/", ".aliyun", "config.json", "credentials.ini", "CredentialsProvider", "metadata")


@pytest.mark.django_db
def test_a_job_of_a_workspace_without_credentials_says_so_plainly_and_only_admins_see_the_detail(caplog):
    """A real failure: a PAI-DLC workspace on the default credentials chain, with none anywhere (tests/conftest.py
    keeps the chain away from the ECS metadata service)."""
    import logging

    from jobs import api_jobs, lifecycle
    from jobs import status as st
    from jobs.models import Job, Membership, Workspace
    from tests import portal_fixtures as pf

    team = pf.make_team()
    bare = Workspace.objects.create(name="Bare", backend=Workspace.BACKEND_DLC, dlc_workspace_id="12345")
    for role in ("viewer", "admin"):
        Membership.objects.create(user=team.users[role], workspace=bare, role=role)
    job = pf.make_job(bare, team.users["admin"], "no-creds", status=st.SUBMITTING, dlc_job_id="", pods=[])
    caplog.set_level(logging.WARNING, logger="jobs.lifecycle")

    assert lifecycle.submit(job.pk) == "failed"
    job = Job.objects.get(pk=job.pk)
    plain = ("The console could not get Alibaba Cloud credentials for workspace Bare (the default credentials "
             "chain). An admin can test them under Settings → Test connection.")
    assert job.status == st.SUBMIT_FAILED and job.submit_error["Code"] == dlc.CREDENTIALS_CODE
    assert job.submit_error["Message"] == plain and api_jobs.job_json(job)["submit_error"]["Message"] == plain
    page = pf.client_for(team.users["viewer"]).get(job.get_absolute_url()).content.decode()
    assert "The console could not send this job to DLC." in page and "DLC refused this job" not in page
    assert "Settings → Test connection" in page
    assert not [word for word in CHAIN_DETAILS if word in page]
    [line] = [r.getMessage() for r in caplog.records if r.name == "jobs.lifecycle"]
    assert "CredentialsProvider" in line and "/root/" not in line and "config.json" not in line

    admin = pf.client_for(team.users["admin"])
    data = {"name": "Bare", "region": bare.region, "endpoint": "", "dlc_workspace_id": "12345",
            "credential_profile": "", "role_arn": ""}
    answer = admin.post(f"/workspaces/{bare.pk}/test-connection", data, HTTP_HX_REQUEST="true").content.decode()
    assert "DLC credentials are not working" in answer and "CredentialsProvider" in answer
    assert "config.json" not in answer and "credentials.ini" not in answer and "/root/" not in answer


def test_the_plain_credentials_message_names_the_profile_and_role():
    from jobs.models import Workspace

    ws = Workspace(name="Team", backend=Workspace.BACKEND_DLC, credential_profile="team",
                   role_arn="acs:ram::1:role/train")
    assert "workspace Team (its profile team, then its RAM role acs:ram::1:role/train)" in dlc.credentials_message(ws)
    err = dlc.DLCError(dlc.CREDENTIALS_CODE, "ProfileCredentialsProvider: <server file>")
    assert dlc.job_error(err, ws)["Message"] == dlc.credentials_message(ws)
    assert dlc.job_error(dlc.DLCError("InvalidParameter", "no"), ws)["Message"] == "no"  # DLC's answer as it came


def test_a_client_that_cannot_be_built_is_a_dlc_error_not_a_crash(monkeypatch, db):
    """Callers (submit, sync, stop, the wizard's catalog) handle DLCError only. The SDK raises while building a
    client, e.g. RuntimeError("RegionId is empty...") for a config it cannot use; no workspace the console's forms
    accept makes it do so, so the SDK class is replaced by one that raises what the SDK raises (a fake, for a
    failure this suite cannot cause for real)."""
    from jobs.models import Workspace

    def refuses(config):
        raise RuntimeError("RegionId is empty, please set a valid RegionId")

    monkeypatch.setattr(dlc, "Client", refuses)
    workspace = Workspace.objects.create(name="w", region="cn-hangzhou")
    with pytest.raises(dlc.DLCError) as caught:
        dlc.get_job(workspace, "dlc-1")
    assert "RegionId is empty" in caught.value.message and not caught.value.transient
