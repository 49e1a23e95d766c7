"""The project of the calibration tests: the full project of tests/support/project.py, whose
cases use `behaviour.expected` (priv-001), `nuggets.coverage` and `rubric.judge` (kern-001),
and its label files."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from soev_pipeline.calibration import LabelLine

ENVIRONMENT = {"SOEV_API_KEY": "systeem-token", "JUDGE_API_KEY": "judge-token", "TENANT_ID": "t"}
AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
REFUSAL = "Ik kan geen vragen over persoonsgegevens beantwoorden."


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


def line(
    case_id: str = "priv-001",
    reply: str = REFUSAL,
    kind: str = "behaviour.expected",
    *,
    passed: bool = True,
    by: str = "jurist-1",
    nth: int = 0,
    label: str | None = None,
    note: str | None = None,
) -> str:
    """One label line (docs/judge.md#labels), as a label file holds it."""
    return LabelLine.of(
        case_id=case_id,
        reply=reply,
        kind=kind,
        nth=nth,
        passed=passed,
        by=by,
        label=label,
        note=note,
        at=AT,
    ).to_line()


def write_labels(project: Path, lines: Iterable[str], name: str = "labels.jsonl") -> Path:
    """Write `lines` into `labels/<name>` beside `project` (project.yaml); return the file."""
    path = project.parent / "labels" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(text + "\n" for text in lines), encoding="utf-8")
    return path
