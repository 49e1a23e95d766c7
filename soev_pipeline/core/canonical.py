"""Canonical JSON and SHA-256 digests, the one way anything here is hashed."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialize `value` as canonical JSON: sorted keys, no spaces, UTF-8 text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    """Return the SHA-256 hex digest of `text` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(value: Any) -> str:
    """Return the SHA-256 hex digest of the canonical JSON of `value`."""
    return sha256_text(canonical_json(value))
