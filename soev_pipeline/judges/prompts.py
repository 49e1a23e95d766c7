"""The prompts of the built-in judge tasks: where they live, how they are read and hashed.

One Markdown file per task, named `<task>.md`, in the repository's top-level `prompts/`
folder. A wheel ships the same folder as `soev_pipeline/_prompts`, so the files stay plain
text that a reviewer can read and diff, and their hashes say which prompt graded which run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import soev_pipeline
from soev_pipeline.core.canonical import sha256_text

_SUFFIX = ".md"


def prompts_dir() -> Path:
    """Return the folder of the built-in prompts, in a wheel or in a source checkout.

    Raises:
        FileNotFoundError: neither place has the folder, so the install is broken.
    """
    package = Path(soev_pipeline.__file__).resolve().parent
    for candidate in (package / "_prompts", package.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "the judge prompts are missing: neither soev_pipeline/_prompts nor prompts/ exists"
    )


def load_prompts(directory: Path | None = None) -> dict[str, str]:
    """Read the prompt of each judge task, by task name.

    The task name is the file name without `.md`, for example `rubric.judge`. The text is
    decoded from UTF-8 bytes without newline translation, so its hash is the same on
    every platform.

    Args:
        directory: a folder of `<task>.md` files; the built-in prompts when None.

    Returns:
        The text of each prompt, by task name, in name order.
    """
    folder = prompts_dir() if directory is None else directory
    return {
        path.name.removesuffix(_SUFFIX): path.read_bytes().decode("utf-8")
        for path in sorted(folder.glob(f"*{_SUFFIX}"))
        if path.is_file()
    }


def prompt_shas(prompts: Mapping[str, str]) -> dict[str, str]:
    """Return the SHA-256 hex digest of each prompt or rubric text (UTF-8), by the same name.

    The run manifest records them, so a resumed run fails when a prompt changed and a
    verdict can say which prompt graded it.
    """
    return {name: sha256_text(text) for name, text in prompts.items()}
