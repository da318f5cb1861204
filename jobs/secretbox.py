"""Seals secrets (registry passwords) for the trip from the web request to the Celery worker.

The key comes from settings (DLC_SECRET_BOX_KEY) or, in the embedded setup, from a file in the data dir;
never from the database, so a database dump alone does not reveal a sealed secret.
"""

import base64
import hashlib
import hmac
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet() -> Fernet:
    raw = settings.DLC_SECRET_BOX_KEY or _file_key()
    # Any string works as a key: it is stretched to Fernet's 32 bytes.
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(raw.encode()).digest()))


def derived_key(purpose: str) -> bytes:
    """A key for another use (jobs.logmask's fingerprints), from the box key but not it: what leaks of one use
    (a fingerprint) says nothing about the other's key."""
    raw = settings.DLC_SECRET_BOX_KEY or _file_key()
    return hmac.new(raw.encode(), purpose.encode(), hashlib.sha256).digest()


def _file_key() -> str:
    path = settings.DATA_DIR / "secret_box_key"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(Fernet.generate_key().decode())
    return path.read_text().strip()


def seal(secrets: dict[str, Any]) -> str:
    if not secrets:
        return ""
    return _fernet().encrypt(json.dumps(secrets).encode()).decode()


def unseal(token: str) -> dict[str, Any]:
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode()))
    except InvalidToken:
        return {}
