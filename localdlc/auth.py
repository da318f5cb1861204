"""Server-side verification of Alibaba Cloud's ACS3-HMAC-SHA256 request signature (OpenAPI "V3").

It mirrors alibabacloud_tea_openapi.utils.Utils.get_authorization, the code that signs every SDK request:

    CanonicalRequest = METHOD \\n pathname \\n canonical-query \\n canonical-headers \\n signed-headers \\n
                       hex(sha256(body))
    StringToSign     = "ACS3-HMAC-SHA256" \\n hex(sha256(CanonicalRequest))
    Authorization    = ACS3-HMAC-SHA256 Credential=<AK>,SignedHeaders=<h1;h2>,Signature=<hex hmac>

The error codes and messages are the ones the Alibaba Cloud API gateway returns, so the SDK raises the same
ClientException (code, message, data['RequestId']) a console would see against the real endpoint.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from urllib.parse import quote, unquote_plus

from .errors import ApiError

ALGORITHM = "ACS3-HMAC-SHA256"
MAX_SKEW_SECONDS = 15 * 60
# Headers the SDK always signs; a request that leaves one out cannot be checked for replay or tampering.
REQUIRED_SIGNED = ("host", "x-acs-date", "x-acs-signature-nonce", "x-acs-content-sha256")


def parse_query(raw_query: str) -> list[tuple[str, str]]:
    """Decode a query string exactly as the SDK encoded it (urlencode, i.e. quote_plus)."""
    pairs: list[tuple[str, str]] = []
    if not raw_query:
        return pairs
    for part in raw_query.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        pairs.append((unquote_plus(key), unquote_plus(value)))
    return pairs


def canonical_query(pairs: Iterable[tuple[str, str]]) -> str:
    # The SDK signs a dict, so each key appears once; quote(value, safe='~') like utils.get_canonical_query_string.
    items = dict(pairs)
    return "&".join(f"{k}={quote(items[k], safe='~', encoding='utf-8')}" for k in sorted(items))


def canonical_headers(headers: Iterable[tuple[str, str]], signed: list[str]) -> str:
    values: dict[str, list[str]] = {}
    for name, value in headers:
        lname = name.lower()
        if lname in signed:
            values.setdefault(lname, []).append(value.strip())
    return "".join(f"{name}:{','.join(sorted(values.get(name, [])))}\n" for name in sorted(signed))


def string_to_sign(method: str, path: str, pairs: Iterable[tuple[str, str]],
                   headers: Iterable[tuple[str, str]], signed: list[str], payload_hash: str) -> str:
    canonical = "\n".join([
        method.upper(),
        path or "/",
        canonical_query(pairs),
        canonical_headers(headers, signed),
        ";".join(sorted(signed)),
        payload_hash,
    ])
    return f"{ALGORITHM}\n{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"


def sign(secret: str, to_sign: str) -> str:
    return hmac.new(secret.encode("utf-8"), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def parse_authorization(value: str) -> tuple[str, str, list[str], str]:
    """Split 'ALG Credential=..,SignedHeaders=..,Signature=..' or raise IncompleteSignature."""
    algorithm, _, rest = value.strip().partition(" ")
    fields: dict[str, str] = {}
    for item in rest.split(","):
        key, sep, val = item.strip().partition("=")
        if sep:
            fields[key] = val
    if not algorithm or not {"Credential", "SignedHeaders", "Signature"} <= fields.keys():
        raise _incomplete("The Authorization header is malformed.")
    signed = [h.strip().lower() for h in fields["SignedHeaders"].split(";") if h.strip()]
    return algorithm, fields["Credential"], signed, fields["Signature"]


def _incomplete(detail: str) -> ApiError:
    return ApiError(400, "IncompleteSignature",
                    f"The request signature does not conform to Aliyun standards. {detail}")


class NonceCache:
    """Remembers nonces for the skew window, so a captured request cannot be replayed."""

    def __init__(self, ttl: float = 2 * MAX_SKEW_SECONDS) -> None:
        self._ttl = ttl
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._last_sweep = time.monotonic()

    def add(self, nonce: str) -> bool:
        """Record nonce; False when it was already used."""
        now = time.monotonic()
        with self._lock:
            if now - self._last_sweep > 60:
                self._seen = {n: t for n, t in self._seen.items() if now - t < self._ttl}
                self._last_sweep = now
            if nonce in self._seen:
                return False
            self._seen[nonce] = now
            return True


class Verifier:
    """Checks requests against the single AccessKey pair localdlc was started with."""

    def __init__(self, access_key_id: str, access_key_secret: str) -> None:
        self.access_key_id = access_key_id
        self._secret = access_key_secret
        self._nonces = NonceCache()

    def verify(self, method: str, path: str, raw_query: str, headers: Mapping[str, str] | Iterable,
               body: bytes, now: float | None = None) -> None:
        """Raise ApiError (as the gateway would answer) unless the request is correctly signed."""
        header_items = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
        lower = {k.lower(): v for k, v in header_items}
        auth = lower.get("authorization")
        if not auth:
            raise _incomplete("The Authorization header is missing.")
        algorithm, credential, signed, signature = parse_authorization(auth)
        if algorithm != ALGORITHM:
            raise ApiError(400, "IncompleteSignature",
                           f"The signature algorithm {algorithm} is not supported; use {ALGORITHM}.")
        if credential != self.access_key_id:
            raise ApiError(404, "InvalidAccessKeyId.NotFound", "Specified access key is not found.")
        missing = [h for h in REQUIRED_SIGNED if h not in signed or h not in lower]
        if missing:
            raise _incomplete(f"Required headers are not signed: {', '.join(missing)}.")
        self._check_date(lower["x-acs-date"], time.time() if now is None else now)

        payload_hash = lower["x-acs-content-sha256"].strip().lower()
        to_sign = string_to_sign(method, path, parse_query(raw_query), header_items, signed, payload_hash)
        if not hmac.compare_digest(sign(self._secret, to_sign), signature.strip().lower()):
            raise ApiError(400, "SignatureDoesNotMatch",
                           "Specified signature does not match our calculation. "
                           f"server string to sign is:{to_sign}")
        # The signature covers the declared hash; the declared hash must also cover the bytes we got.
        if hashlib.sha256(body).hexdigest() != payload_hash:
            raise ApiError(400, "SignatureDoesNotMatch",
                           "The x-acs-content-sha256 header does not match the request body.")
        if not self._nonces.add(lower["x-acs-signature-nonce"]):
            raise ApiError(400, "SignatureNonceUsed", "Specified signature nonce was used already.")

    @staticmethod
    def _check_date(value: str, now: float) -> None:
        try:
            stamp = datetime.strptime(value.strip(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
        except ValueError:
            raise ApiError(400, "InvalidTimeStamp.Format",
                           "Specified time stamp or date value is not well formatted.") from None
        if abs(now - stamp) > MAX_SKEW_SECONDS:
            raise ApiError(400, "InvalidTimeStamp.Expired", "Specified time stamp or date value is expired.")
