"""A run's progress in the log of the Dagster step that runs it."""

import dagster as dg

from soev_pipeline.run.progress import Progress


class LogProgress(Progress):
    """A step's progress in its run's log: its phases, not every attempt."""

    def __init__(self, log: dg.DagsterLogManager) -> None:
        self._log = log

    def phase(self, text: str) -> None:
        self._log.info(text)
