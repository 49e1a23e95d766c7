"""Placeholder for the judged criterion family; its kinds are being written."""

from __future__ import annotations

from typing import Any

from .registry import Builtin

KINDS: list[Builtin[Any]] = []
