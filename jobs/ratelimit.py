"""Rate limits in Django's cache. Sign-in: failure counters per client IP + username, and per client IP;
take(): a plain count of uses per name (test mails per user, failed API tokens per client IP).

After LOGIN_MAX_FAILURES failures for one username from one IP (or LOGIN_MAX_FAILURES_PER_IP for any
usernames from one IP) within LOGIN_WINDOW_SECONDS, further attempts are refused until the window ends,
even with the right password. A success clears that username's counter. If the cache is unreachable the
limiter lets attempts through (logged): sign-in must not depend on Redis being up.
"""

from __future__ import annotations

import hashlib
import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

log = logging.getLogger(__name__)


def _limit(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the address the trusted proxy appended to X-Forwarded-For when configured."""
    if getattr(settings, "LOGIN_TRUST_X_FORWARDED_FOR", False):
        forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if forwarded:
            return forwarded[-1]  # the last hop is the one our proxy added; earlier ones are client-chosen
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def _keys(request: HttpRequest, username: str) -> tuple[str, str]:
    ip = client_ip(request)
    # Hashed so an arbitrary username cannot make an invalid or oversized cache key.
    pair = hashlib.sha256(f"{ip}\0{username.strip().lower()}".encode()).hexdigest()
    return f"dlc-console:login:pair:{pair}", f"dlc-console:login:ip:{hashlib.sha256(ip.encode()).hexdigest()}"


def _count(key: str) -> tuple[int, float]:
    n, started = cache.get(key), cache.get(key + ":t")
    if not isinstance(n, int) or not isinstance(started, int | float):
        return 0, 0.0
    return n, float(started)


def blocked_for(request: HttpRequest, username: str) -> float:
    """Seconds until this IP may try this username again; 0 when it may now."""
    window = _limit("LOGIN_WINDOW_SECONDS", 900)
    try:
        (pair_n, pair_t), (ip_n, ip_t) = (_count(k) for k in _keys(request, username))
    except Exception as exc:  # noqa: BLE001 - cache down: fail open, see module docstring
        log.warning("login rate limiter unavailable: %s", exc)
        return 0.0
    now = time.time()
    waits = []
    if pair_n >= _limit("LOGIN_MAX_FAILURES", 5):
        waits.append(pair_t + window - now)
    if ip_n >= _limit("LOGIN_MAX_FAILURES_PER_IP", 50):
        waits.append(ip_t + window - now)
    return max([0.0, *waits])


def failed(request: HttpRequest, username: str) -> None:
    """Count one failed attempt. The window starts at the first failure and is not extended by later ones.

    add + incr are atomic in every cache backend, so parallel guesses cannot slip past the count.
    """
    window = _limit("LOGIN_WINDOW_SECONDS", 900)
    try:
        for key in _keys(request, username):
            cache.add(key + ":t", time.time(), window)
            cache.add(key, 0, window)
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, window)
    except Exception as exc:  # noqa: BLE001
        log.warning("login rate limiter unavailable: %s", exc)


def succeeded(request: HttpRequest, username: str) -> None:
    try:
        pair = _keys(request, username)[0]
        cache.delete_many([pair, pair + ":t"])
    except Exception as exc:  # noqa: BLE001
        log.warning("login rate limiter unavailable: %s", exc)


def take(name: str, limit: int, window: int) -> float:
    """Count one use of `name` (say, one user's test mails) in a fixed window of `window` seconds from its first use:
    0 while at most `limit` uses, else the seconds until the window ends. Fails open like the sign-in counters."""
    key = f"dlc-console:rate:{hashlib.sha256(name.encode()).hexdigest()}"
    try:
        cache.add(key + ":t", time.time(), window)
        cache.add(key, 0, window)
        try:
            used = cache.incr(key)
        except ValueError:  # expired between add and incr
            used = 1
            cache.set(key, used, window)
        started = cache.get(key + ":t")
    except Exception as exc:  # noqa: BLE001
        log.warning("rate limiter unavailable: %s", exc)
        return 0.0
    if used <= limit:
        return 0.0
    return max(1.0, (started if isinstance(started, int | float) else time.time()) + window - time.time())


def token_failed(request: HttpRequest) -> float:
    """Count one failed API token authentication from the request's client IP: 0 while at most
    API_TOKEN_MAX_FAILURES_PER_IP within API_TOKEN_FAILURE_WINDOW_SECONDS, else the seconds until the window ends."""
    return take(f"api-token:{client_ip(request)}", _limit("API_TOKEN_MAX_FAILURES_PER_IP", 20),
                _limit("API_TOKEN_FAILURE_WINDOW_SECONDS", 60))


def describe(seconds: float) -> str:
    minutes = int(seconds // 60) + 1
    return "a minute" if minutes <= 1 else f"{minutes} minutes"
