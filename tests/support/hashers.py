"""A password hasher for the test process: Django's PBKDF2 at 1,000 iterations instead of 1,000,000.

Its hashes carry their iteration count (pbkdf2_sha256$1000$...), so the stack's web process, on its default
hashers, checks them as they are: a test's user signs in there as in production. Creating a user with a password
was 0.2-0.5 s of hashing per test on a busy machine, for nothing any test checks.
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1_000
