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
