"""The model of project.yaml (docs/project.md#projectyaml)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Literal

from pydantic import Field, HttpUrl, StrictBool, field_validator, model_validator

from .env import expand_env as expand_env  # re-exported: callers know it from here
from .models import FrozenModel

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"

Language = Literal["en", "nl"]
"""The languages the viewer and the HTML report speak (docs/view.md#language)."""


def _expanded(value: Any) -> Any:
    return expand_env(value) if isinstance(value, str) else value


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


class SystemConfig(FrozenModel):
    """The system under test."""

    kind: Literal["soev-thread", "chat-completions"] = "soev-thread"
    base_url: HttpUrl
    agent: str | None = None
    model: str | None = None
    api_key_env: str | None = Field(default=None, pattern=_ENV_NAME)
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=120.0, gt=0)
    concurrency: int = Field(default=8, ge=1, le=1024)
    max_retries: int = Field(default=2, ge=0, le=20)
    max_frame_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=1024**3)
    retry_unrun: StrictBool = True
    """Run the attempts that did not run (no connection, HTTP 429 or 5xx, interrupted) once
    more after the others, before grading (docs/runs.md#attempts-that-did-not-run-run-once-more)."""

    _expand_url = field_validator("base_url", mode="before")(_expanded)

    @property
    def url(self) -> str:
        """The base URL as text, ending in a slash so relative paths join under it."""
        return _with_slash(str(self.base_url))


class CitationsConfig(FrozenModel):
    """How a citation of the system under test names its unit."""

    source_field: str = Field(default="ref", min_length=1)


class JudgeConfig(FrozenModel):
    """An OpenAI-compatible chat-completions judge."""

    base_url: HttpUrl
    model: str = Field(min_length=1)
    api_key_env: str | None = Field(default=None, pattern=_ENV_NAME)
    headers: dict[str, str] = Field(default_factory=dict)
    context_window: int | None = Field(default=None, gt=0)
    concurrency: int = Field(default=8, ge=1, le=1024)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=20)
    temperature: float | None = Field(default=0.0, ge=0.0)
    seed: int | None = 0
    repeats: int = Field(default=1, ge=1, le=20)
    cache: bool = True
    min_kappa: float | None = Field(default=None, ge=-1.0, le=1.0)
    """The least Cohen's κ a judged criterion must reach against the human labels; set, it
    makes the Dagster check `judge_agrees_with_labels` an error rather than a warning."""

    _expand_url = field_validator("base_url", mode="before")(_expanded)

    @property
    def url(self) -> str:
        """The base URL as text, ending in a slash so relative paths join under it."""
        return _with_slash(str(self.base_url))


class ProbeTexts(FrozenModel):
    """The project's own texts of the judge probes (docs/judge.md#probe-texts).

    Each key given replaces the built-in texts of that key (so a Dutch project probes in
    Dutch only); a probe picks one text of its list per item, seeded.
    """

    closing: tuple[str, ...] = Field(default=(), min_length=1)
    restated: tuple[str, ...] = Field(default=(), min_length=1)
    injection_pass: tuple[str, ...] = Field(default=(), min_length=1)
    injection_fail: tuple[str, ...] = Field(default=(), min_length=1)
    refusal: tuple[str, ...] = Field(default=(), min_length=1)
    answer: tuple[str, ...] = Field(default=(), min_length=1)
    unrelated: tuple[str, ...] = Field(default=(), min_length=1)
    name: tuple[str, ...] = Field(default=(), min_length=1)

    @field_validator("*")
    @classmethod
    def _not_blank(cls, texts: tuple[str, ...]) -> tuple[str, ...]:
        if any(not text.strip() for text in texts):
            raise ValueError("a probe text must not be blank")
        return texts

    @field_validator("restated")
    @classmethod
    def _holds_question(cls, texts: tuple[str, ...]) -> tuple[str, ...]:
        for text in texts:
            if text.count("{question}") != 1 or re.search(r"\{(?!question\})", text):
                raise ValueError(
                    f"{text!r} must hold {{question}} once, and no other {{...}} placeholder"
                )
        return texts


class ProbesConfig(FrozenModel):
    """The judge probes (`soev-evals probe-judge`, the asset `judge_probes`)."""

    max_flip: float | None = Field(default=None, ge=0.0, le=1.0)
    """The highest flip rate an invariance probe may be shown to have (and the least a
    sensitivity probe must reach is 1 − it); set, it makes the Dagster check
    `judge_resists_probes` an error rather than a warning."""
    texts: ProbeTexts = ProbeTexts()


class ScoringConfig(FrozenModel):
    """How an attempt's score turns into a pass."""

    pass_threshold: float = Field(default=1.0, ge=0.0, le=1.0)


DEFAULT_LABELS = "labels/*.jsonl"
"""Where label files are when project.yaml names none."""


class SuiteEntry(FrozenModel):
    """A suite of the project: its name and the glob of its files."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    files: str = Field(min_length=1)


class Project(FrozenModel):
    """A project file, project.yaml. Unknown keys are an error."""

    name: str = Field(min_length=1)
    system: SystemConfig
    citations: CitationsConfig = CitationsConfig()
    judge: JudgeConfig | None = None
    scoring: ScoringConfig = ScoringConfig()
    suites: tuple[SuiteEntry, ...] = Field(min_length=1)
    hooks: str | None = None
    messages: dict[str, str] = Field(default_factory=dict)
    corpus: str | None = None
    runtime: str | None = None
    labels: str | None = Field(default=None, min_length=1)
    """A glob of human label files, relative to project.yaml; `labels/*.jsonl` when None."""
    probes: ProbesConfig = ProbesConfig()
    language: Language | None = None
    """The language of the viewer and the HTML report; English when None, and `--lang`
    overrides it."""

    @field_validator("labels")
    @classmethod
    def _inside_project(cls, value: str | None) -> str | None:
        if value is None:
            return None
        posix, windows = PurePosixPath(value), PureWindowsPath(value)
        if posix.is_absolute() or windows.is_absolute() or windows.drive:
            raise ValueError(f"{value!r} must be a glob relative to project.yaml")
        if ".." in posix.parts or ".." in windows.parts:
            raise ValueError(f"{value!r} must stay inside the project directory")
        return value

    @field_validator("hooks")
    @classmethod
    def _module_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", value):
            raise ValueError(f"{value!r} is not a Python module name")
        return value

    @field_validator("messages")
    @classmethod
    def _nonblank_messages(cls, messages: dict[str, str]) -> dict[str, str]:
        for code, text in messages.items():
            if not text.strip():
                raise ValueError(f"message {code!r} is blank")
        return messages

    @model_validator(mode="after")
    def _unique_suites(self) -> Project:
        names = [suite.name for suite in self.suites]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"suite names must be unique: {', '.join(duplicates)}")
        return self

    @property
    def agent(self) -> str:
        """The agent name sent to a soev-thread system: `system.agent`, else the project name."""
        return self.system.agent or self.name
