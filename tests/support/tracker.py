"""The tracker of the tests: it keeps what each run published, as the JSON that a tracker
which sends it on would send."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class RecordingTracker:
    """Keeps each run it is given in `published`: `{"manifest": ..., "report": ...}`.

    With `path`, each run is also a line of that file, for a runtime provider that a command
    loads and makes on its own (the test cannot reach its instance).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.published: list[dict[str, Any]] = []
        self._path = path

    async def publish(self, *, manifest: Mapping[str, Any], report: Mapping[str, Any]) -> None:
        text = json.dumps({"manifest": manifest, "report": report})
        self.published.append(json.loads(text))
        if self._path is not None:
            with self._path.open("a", encoding="utf-8") as stream:
                stream.write(text + "\n")
