"""localdlc conformance: ACS3-HMAC-SHA256 verification and the gateway's error answers.

Raw HTTP here on purpose (a small independent signer), since the SDK cannot be made to send a stale or
forged request; the SDK-level checks confirm how its exceptions carry code, message and RequestId.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import time
import uuid
from urllib.parse import quote, urlencode

import pytest
from alibabacloud_pai_dlc20201203 import models
from alibabacloud_tea_openapi.exceptions import ClientException
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.integration


def signed_request(dlc, method: str, path: str, query: dict[str, str] | None = None, body: bytes = b"",
                   *, ak: str | None = None, secret: str | None = None, date: str | None = None,
                   nonce: str | None = None, tamper_body: bytes | None = None, drop_auth: bool = False,
                   send_query: dict[str, str] | None = None):
    query = query or {}
    headers = {
        "host": dlc.endpoint,
        "x-acs-version": "2020-12-03",
        "x-acs-action": "Raw",
        "x-acs-date": date or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "x-acs-signature-nonce": nonce or uuid.uuid4().hex,
        "x-acs-content-sha256": hashlib.sha256(body).hexdigest(),
        "accept": "application/json",
    }
    if body:
        headers["content-type"] = "application/json; charset=utf-8"
    names = sorted(headers)
    canonical = "\n".join([
        method, path,
        "&".join(f"{k}={quote(query[k], safe='~')}" for k in sorted(query)),
        "".join(f"{n}:{headers[n].strip()}\n" for n in names),
        ";".join(names),
        headers["x-acs-content-sha256"],
    ])
    to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical.encode()).hexdigest()
    signature = hmac.new((secret or dlc.access_key_secret).encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    if not drop_auth:
        headers["Authorization"] = (f"ACS3-HMAC-SHA256 Credential={ak or dlc.access_key_id},"
                                    f"SignedHeaders={';'.join(names)},Signature={signature}")
    conn = http.client.HTTPConnection(dlc.host, dlc.port, timeout=10)
    sent = query if send_query is None else send_query
    url = path + ("?" + urlencode(sent) if sent else "")
    conn.request(method, url, body=tamper_body if tamper_body is not None else body, headers=headers)
    resp = conn.getresponse()
    payload = json.loads(resp.read())
    result = resp.status, payload, resp.getheader("x-acs-request-id")
    conn.close()
    return result


def assert_error(result, status: int, code: str) -> dict:
    got_status, body, header_id = result
    assert got_status == status, body
    assert body["Code"] == code
    assert body["Message"] and body["RequestId"] and body["HostId"]
    assert header_id == body["RequestId"]
    return body


def test_correctly_signed_raw_request_is_accepted(localdlc):
    status, body, header_id = signed_request(localdlc, "GET", "/api/v1/ecsspecs",
                                             {"PageSize": "3", "AcceleratorType": "GPU"})
    assert status == 200 and header_id == body["RequestId"]
    assert body["TotalCount"] > 3 and len(body["EcsSpecs"]) == 3


def test_unknown_access_key(localdlc):
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", ak="LTAIunknown"), 404,
                 "InvalidAccessKeyId.NotFound")


def test_bad_signature(localdlc):
    body = assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", secret="wrong-secret"), 400,
                        "SignatureDoesNotMatch")
    assert "string to sign" in body["Message"]


def test_stale_and_future_timestamps(localdlc):
    stale = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 16 * 60))
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", date=stale), 400, "InvalidTimeStamp.Expired")
    future = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 16 * 60))
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", date=future), 400, "InvalidTimeStamp.Expired")
    recent = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 10 * 60))
    assert signed_request(localdlc, "GET", "/api/v1/jobs", date=recent)[0] == 200
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", date="yesterday"), 400,
                 "InvalidTimeStamp.Format")


def test_replayed_nonce_and_missing_or_tampered_signature(localdlc):
    nonce = uuid.uuid4().hex
    assert signed_request(localdlc, "GET", "/api/v1/jobs", nonce=nonce)[0] == 200
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", nonce=nonce), 400, "SignatureNonceUsed")
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", drop_auth=True), 400, "IncompleteSignature")
    body = json.dumps({"DisplayName": "x"}).encode()
    assert_error(signed_request(localdlc, "POST", "/api/v1/jobs", body=body, tamper_body=b'{"DisplayName":"y"}'),
                 400, "SignatureDoesNotMatch")


def test_query_is_covered_by_the_signature(localdlc):
    """A query value changed after signing breaks the signature; spaces and symbols round-trip."""
    assert signed_request(localdlc, "GET", "/api/v1/jobs", {"PageSize": "5", "DisplayName": "a b+c~d/é"})[0] == 200
    assert_error(signed_request(localdlc, "GET", "/api/v1/jobs", {"PageSize": "5"}, send_query={"PageSize": "6"}),
                 400, "SignatureDoesNotMatch")


def test_unknown_path_is_invalid_action(localdlc):
    assert_error(signed_request(localdlc, "GET", "/api/v1/nothing"), 404, "InvalidAction.NotFound")


def test_sdk_sees_auth_errors_as_client_exceptions(localdlc):
    wrong_secret = localdlc.client(access_key_secret="not-the-secret")
    with pytest.raises(ClientException) as err:
        wrong_secret.list_jobs(models.ListJobsRequest())
    assert err.value.code == "SignatureDoesNotMatch" and err.value.status_code == 400
    assert err.value.data["RequestId"] == err.value.request_id

    wrong_key = localdlc.client(access_key_id="LTAI-nobody")
    with pytest.raises(ClientException) as err:
        wrong_key.get_job("dlcanything", models.GetJobRequest())
    assert err.value.code == "InvalidAccessKeyId.NotFound" and err.value.status_code == 404
    assert "Specified access key is not found." in err.value.message


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                    min_size=1, max_size=30),
       tag=st.text(min_size=1, max_size=20, alphabet=st.characters(blacklist_categories=("Cs",))))
def test_any_query_text_round_trips_through_sdk_signing(localdlc, name, tag):
    """Whatever the SDK encodes and signs (unicode, spaces, '+', '&', '=', '~'), the server verifies."""
    body = localdlc.client().list_jobs(models.ListJobsRequest(display_name=name, tags={"k": tag},
                                                              workspace_id="ws-fuzz")).body
    assert body.total_count == 0 and body.request_id
