"""Progress of long work: a silent default, and the interface a display implements."""

from __future__ import annotations

from typing import Literal

Step = Literal["attempt", "grade", "aggregate"]


class Progress:
    """Where the steps of a run report progress. This one reports nowhere.

    The CLI shows it on the terminal, a Dagster step in its run's log.
    """

    def started(self, step: Step) -> None:
        """A step of the run starts (before its `phase`). It may wait (for start-up work the
        step must not overlap); the grade step of a run that grades its attempts as they are
        archived calls it on a thread of its own, so the attempts go on meanwhile."""

    def phase(self, text: str) -> None:
        """A step starts a phase of work."""

    def attempts(self, done: int, total: int, failed: int) -> None:
        """An attempt finished: `done` of `total`, of which `failed` recorded a failure."""

    def graded(self, done: int, total: int) -> None:
        """An attempt was graded."""

    def close(self) -> None:
        """The work is over; finish the display."""
