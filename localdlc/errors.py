"""The error type every handler raises; server.py turns it into the DLC/POP JSON error body."""

from __future__ import annotations


class ApiError(Exception):
    """An answer the real service would give as an HTTP 4xx/5xx with {Code, Message, RequestId, ...}."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def invalid(field: str, problem: str) -> ApiError:
    """A 400 InvalidParameter whose message names the offending field path first."""
    return ApiError(400, "InvalidParameter", f"{field}: {problem}")


def not_found(code: str, message: str) -> ApiError:
    return ApiError(404, code, message)
