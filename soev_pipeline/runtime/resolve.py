"""Find the runtime provider a command asked for, and open it for one command."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from importlib.metadata import entry_points
from pathlib import Path

from soev_pipeline.core.errors import ArmError, JudgeError, ProjectError
from soev_pipeline.project import LoadedProject

from .builtin import BuiltinRuntime, open_project_judge
from .providers import BUILTIN, ENTRY_POINT_GROUP, Operation, RuntimeBindings, RuntimeProvider


def resolve_runtime(name: str | None, *, state: Path | None = None) -> RuntimeProvider:
    """Return the provider called `name` from the entry points, or the built-in one.

    A factory gets the same arguments as the built-in one: `state_dir`, the project's state
    folder (for caches), when its signature takes a `state_dir` parameter (or `**kwargs`);
    a factory without parameters is called without arguments, as before.

    Args:
        name: the provider's entry point name; None or `builtin` for the built-in one.
        state: the project's state folder, where the built-in provider keeps the judge cache.

    Raises:
        ProjectError: two entry points have the name, none has it, or its factory did not
            make a runtime provider.
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
    provider = factory(**_factory_arguments(factory, state))
    if not isinstance(provider, RuntimeProvider):
        raise ProjectError(f"runtime {name!r}: {found[0].value} did not make a runtime provider")
    return provider


def _factory_arguments(factory: Callable[..., object], state: Path | None) -> dict[str, object]:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: no arguments
        return {}
    takes = any(
        parameter.name == "state_dir" or parameter.kind is inspect.Parameter.VAR_KEYWORD
        for parameter in parameters
    )
    return {"state_dir": state} if takes else {}


@asynccontextmanager
async def open_runtime(
    loaded: LoadedProject,
    name: str | None,
    operation: Operation,
    state: Path,
    *,
    offline: bool = False,
) -> AsyncIterator[RuntimeBindings]:
    """The bindings of the provider called `name`, open for one command.

    `offline` opens no provider at all: the bindings hold only the project's judge,
    answering from the judge cache in `state`.

    Raises:
        ProjectError: no provider has the name.
        ArmError, JudgeError: the provider could not open; the message names the project file.
    """
    async with AsyncExitStack() as stack:
        try:
            if offline:
                judge = await stack.enter_async_context(
                    open_project_judge(loaded, state, offline=True)
                )
                bindings = RuntimeBindings(judge=judge)
            else:
                provider = resolve_runtime(name, state=state)
                bindings = await stack.enter_async_context(
                    provider.open(loaded, operation=operation)
                )
        except (ArmError, JudgeError) as exc:
            message = str(exc)
            if not message.startswith(str(loaded.path)):
                message = f"{loaded.path}: {message}"
            raise type(exc)(message) from None
        yield bindings
