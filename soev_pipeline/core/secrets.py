"""The secrets of this process, and their removal from everything that is recorded.

A secret is a value read from the environment for a request: the bearer token of
`api_key_env` (the system's or the judge's) and a header value that `${VAR}` filled in.
A system under test may echo them back (an error body that quotes the Authorization
header, say), so every string the run records goes through `redact` first: evidence lines,
verdict lines, reports, Dagster metadata (made from those) and error messages.
"""

from __future__ import annotations

import json
import threading

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets: replacing `abc` everywhere would garble text."""

_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str) -> None:
    """Remember `value` as a secret of this process, from now on redacted everywhere."""
    value = value.strip()
    if len(value) < MIN_SECRET_CHARS:
        return
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
    with _lock:
        _secrets.update(forms)


def redact(text: str) -> str:
    """`text` with every known secret replaced by `[redacted]`, longest first."""
    if not _secrets:
        return text
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def forget_secrets() -> None:
    """Forget every secret (for tests)."""
    with _lock:
        _secrets.clear()
