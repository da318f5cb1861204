"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging


def _escaped(text: str) -> str:
    # As Django escapes a logged path: a newline in a URL must not forge a second log line.
    return text.encode("unicode_escape").decode("ascii")


class OneLineForbidden(logging.Filter):
    """A 403 is an answer to someone who may not do something, not a fault of ours: django.request logs it as one
    warning line with the method and the user, without the traceback it attaches to a PermissionDenied."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) != 403:
            return True
        request = getattr(record, "request", None)
        message = record.getMessage()  # Django's own words: "Forbidden (Permission denied): /path", a CSRF reason
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        if request is not None:
            user = getattr(request, "user", None)
            name = user.get_username() if user is not None and user.is_authenticated else "anonymous"
            record.msg, record.args = "%s (%s, user %s)", (message, _escaped(request.method or ""), _escaped(name))
        return True
