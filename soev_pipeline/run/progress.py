"""Progress of long work: a silent default, and the interface a display implements."""

from __future__ import annotations


class Progress:
    """Where a step reports progress. This one reports nowhere.

    The Dagster steps get it as the `progress` resource: the UI's runs the silent default,
    the CLI a display on the terminal.
    """

    def phase(self, text: str) -> None:
        """A step starts a phase of work."""

    def attempts(self, done: int, total: int, failed: int) -> None:
        """An attempt finished: `done` of `total`, of which `failed` recorded a failure."""

    def graded(self, done: int, total: int) -> None:
        """An attempt was graded."""

    def close(self) -> None:
        """The work is over; finish the display."""
