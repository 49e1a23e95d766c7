"""The secrets of this process, and their removal from everything that is recorded.

A secret is a value read from the environment for a request: the bearer token of
`api_key_env` (the system's or the judge's), each value that `${VAR}` fills into a header
(every variable on its own, not only the whole header), and the credentials of a base URL
or a proxy URL. A system under test may echo them back (an error body that quotes the
Authorization header, a reply that spells it out), so every string the run records goes
through `redact` first: evidence lines, verdict lines, reports, Dagster metadata (made from
those), judge answers before they are cached, and error messages.

A secret is found in every form an echo may take: as it is, in any mix of upper and lower
case, escaped in JSON (once or twice), URL-encoded, hex-encoded, and base64-encoded, also
inside a longer base64 text such as the `Basic` credentials of `user:password`. A text
that a cut ended inside a secret (`shorten` marks the cut with "…") loses the start of the
secret too; still, callers redact *before* they cut.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from urllib.parse import SplitResult, parse_qsl, quote, quote_plus, unquote, urlsplit

from .chars import scrub
from .patterns import LinearPattern

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets: replacing `abc` everywhere would garble text."""
MIN_FORM_CHARS = 6
"""The shortest encoded form (a part of a base64 text) that is redacted."""
MIN_CUT_CHARS = 4
"""The shortest start of a secret that is redacted before the "…" of a cut."""
SECRET_QUERY = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential", re.IGNORECASE)
"""Query parameters of a URL whose values are secrets (`?api_key=...`, `&sig=...`)."""

_secrets: set[str] = set()
_lock = threading.Lock()
_pattern: LinearPattern | None = None
_cut: LinearPattern | None = None


def _base64_cores(data: bytes) -> set[str]:
    """The parts of every base64 text holding `data` that depend on `data` alone.

    `data` may start at any byte of the encoded text, so each of the three alignments
    gives its own characters; the characters that also hold bits of the bytes before or
    after are left out. Both alphabets (standard and URL-safe) are given.
    """
    cores: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data).decode("ascii")
        first = (8 * offset + 5) // 6
        last = 8 * (offset + len(data)) // 6
        core = encoded[first:last]
        if len(core) >= MIN_FORM_CHARS:
            cores |= {core, core.translate(str.maketrans("+/", "-_"))}
    return cores


def secret_forms(value: str) -> set[str]:
    """Every form of `value` that `redact` looks for (case aside: it ignores case)."""
    escaped = {json.dumps(value, ensure_ascii=ascii_only)[1:-1] for ascii_only in (True, False)}
    twice = {json.dumps(form)[1:-1] for form in escaped}
    encoded = value.encode("utf-8")
    urls = {quote(value, safe=""), quote(value), quote_plus(value, safe="")}
    forms = {value, *escaped, *twice, *urls, encoded.hex(), *_base64_cores(encoded)}
    return {form for form in forms if len(form) >= MIN_FORM_CHARS}


def _compile(forms: set[str]) -> LinearPattern:
    ordered = sorted(forms, key=lambda form: (-len(form), form))
    return LinearPattern("|".join(map(re.escape, ordered)), case_sensitive=False)


def _compile_cut(secrets: set[str]) -> LinearPattern:
    """The start of a secret (its first `MIN_CUT_CHARS` characters or more) and a "…"."""
    starts = {
        form[:length]
        for secret in secrets
        for form in (secret, *(json.dumps(secret, ensure_ascii=a)[1:-1] for a in (True, False)))
        for length in range(MIN_CUT_CHARS, len(form))
    }
    ordered = sorted(starts, key=lambda start: (-len(start), start))
    return LinearPattern(f"(?:{'|'.join(map(re.escape, ordered))})…", case_sensitive=False)


def register_secret(value: str) -> None:
    """Remember `value` as a secret of this process, from now on redacted everywhere."""
    global _pattern, _cut
    value = value.strip()
    if len(value) < MIN_SECRET_CHARS:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        forms = set().union(*(secret_forms(secret) for secret in _secrets))
        _pattern, _cut = _compile(forms), _compile_cut(_secrets)


def register_url_secrets(url: str) -> None:
    """Remember the credentials of `url` as secrets: the user and password of its userinfo
    (as written and percent-decoded), and the values of its secret query parameters."""
    parts = urlsplit(url)
    for value in (parts.username, parts.password):
        if value:
            register_secret(value)
            register_secret(unquote(value))
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if SECRET_QUERY.search(name):
            register_secret(value)


def redact(text: str) -> str:
    """`text` with every known secret, in every form, replaced by `[redacted]`.

    The text is about to be recorded, so a lone surrogate in it is replaced too (see
    `core.chars.scrub`). One pass of RE2 (`core.patterns`), however many forms there are.
    """
    pattern, cut = _pattern, _cut
    if pattern is None or cut is None:
        return text
    text = pattern.sub(REDACTED, scrub(text))
    return cut.sub(REDACTED + "…", text) if "…" in text else text


def redact_url(url: str) -> str:
    """`url` fit to show: the password of its userinfo and the values of its secret query
    parameters replaced by `[redacted]`, and every known secret redacted."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:{REDACTED}@{host}"
    pairs = []
    for pair in parts.query.split("&") if parts.query else ():
        name, equals, _value = pair.partition("=")
        pairs.append(f"{name}={REDACTED}" if equals and SECRET_QUERY.search(name) else pair)
    shown = SplitResult(parts.scheme, netloc, parts.path, "&".join(pairs), parts.fragment)
    return redact(shown.geturl())


def forget_secrets() -> None:
    """Forget every secret (for tests)."""
    global _pattern, _cut
    with _lock:
        _secrets.clear()
        _pattern = _cut = None
