"""Runtime providers: where the run and rescore commands get their arm, judge and helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.ports import Arm, CaseSetup, Judge, LanguageDetector, Tracker

if TYPE_CHECKING:
    from .loading import LoadedProject

ENTRY_POINT_GROUP = "soev.evals.runtimes"
BUILTIN = "builtin"
Operation = Literal["run", "rescore"]


@dataclass(frozen=True)
class RuntimeBindings:
    """The services that a `RuntimeProvider` gives to the run and rescore commands."""

    arm: Arm | None = None
    judge: Judge | None = None
    language_detector: LanguageDetector | None = None
    setup: CaseSetup | None = None
    tracker: Tracker | None = None


@runtime_checkable
class RuntimeProvider(Protocol):
    """A provider of the services that the run and rescore commands use.

    Register a factory in the entry point group `soev.evals.runtimes`; the CLI calls it
    without arguments, and selects it with `--runtime NAME` or the project's `runtime`.
    """

    def open(
        self, loaded: LoadedProject, *, operation: Operation
    ) -> AbstractAsyncContextManager[RuntimeBindings]: ...


def state_dir(runs_dir: Path) -> Path:
    """The project's state folder beside the runs: the judge cache, the Dagster instance."""
    return runs_dir.parent / ".soev"


class BuiltinRuntime:
    """The built-in provider: an arm for the project's `system`, and a judge for its `judge`.

    The arm is a `SoevThreadArm` (or a `ChatCompletionsArm` for `kind: chat-completions`)
    over one client from `create_http_client`; a rescore gets no arm. When the project has
    a `judge` section, the judge is an `LLMJudge` over an OpenAI-compatible adapter with
    the judge cache in `state_dir` (default: `.soev/` beside the project's runs).
    """

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = state_dir

    @asynccontextmanager
    async def _bindings(
        self, loaded: LoadedProject, *, operation: Operation
    ) -> AsyncIterator[RuntimeBindings]:
        from soev_pipeline.arms import ChatCompletionsArm, SoevThreadArm, create_http_client

        project = loaded.project
        async with AsyncExitStack() as stack:
            arm: Arm | None = None
            if operation == "run":
                http = await stack.enter_async_context(create_http_client(project.system))
                if project.system.kind == "chat-completions":
                    arm = ChatCompletionsArm(http, project.system)
                else:
                    arm = SoevThreadArm(
                        http, project.system, project.citations, agent=project.agent
                    )
            judge: Judge | None = None
            if project.judge is not None:
                from soev_pipeline.judges import open_judge

                cache = None
                if project.judge.cache:
                    folder = self.state_dir or state_dir(loaded.directory / "runs")
                    cache = folder / "judge-cache.sqlite"
                judge = await stack.enter_async_context(open_judge(project.judge, cache_path=cache))
            yield RuntimeBindings(arm=arm, judge=judge)

    def open(
        self, loaded: LoadedProject, *, operation: Operation
    ) -> AbstractAsyncContextManager[RuntimeBindings]:
        return self._bindings(loaded, operation=operation)


def resolve_runtime(name: str | None, *, state: Path | None = None) -> RuntimeProvider:
    """Return the provider called `name` from the entry points, or the built-in one.

    Raises:
        ProjectError: two entry points have the name, or none has it.
    """
    if name is None or name == BUILTIN:
        return BuiltinRuntime(state)
    found = [point for point in entry_points(group=ENTRY_POINT_GROUP) if point.name == name]
    if not found:
        known = sorted({point.name for point in entry_points(group=ENTRY_POINT_GROUP)})
        raise ProjectError(
            f"runtime {name!r}: no entry point of that name in group {ENTRY_POINT_GROUP!r} "
            f"(known: {', '.join(known) or 'none'})"
        )
    if len({point.value for point in found}) > 1:
        raise ProjectError(
            f"runtime {name!r}: {len(found)} entry points in group {ENTRY_POINT_GROUP!r} "
            "have that name"
        )
    factory = found[0].load()
    provider = factory()
    if not isinstance(provider, RuntimeProvider):
        raise ProjectError(f"runtime {name!r}: {found[0].value} did not make a runtime provider")
    return provider
