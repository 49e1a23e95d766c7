"""The counters of a judge, for the run report and the orchestration metadata."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TaskAgreement:
    """How often repeated asks of one task agreed with their majority label."""

    requests: int = 0
    agreeing: int = 0
    asked: int = 0
    unanimous: int = 0

    @property
    def mean(self) -> float:
        """The share of all asks that gave their request's majority label."""
        return self.agreeing / self.asked if self.asked else 0.0


@dataclass
class JudgeStats:
    """What a judge did in one command.

    Attributes:
        requests: the requests that the criteria sent to the judge.
        calls: the answers asked of the model; with `repeats: N` each request asks N times.
            An offline judge makes none.
        cache_hits: the answers that came from the judge cache instead of the model.
        failures: the requests that ended in a `JudgeError`, and so in an error verdict.
        agreement: with `repeats` above 1, how the repeated asks agreed, by task.
    """

    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    agreement: dict[str, TaskAgreement] = field(default_factory=dict)

    def record_agreement(self, task: str, *, agreeing: int, asked: int) -> None:
        """Count one repeated request of `task` whose majority label got `agreeing` of `asked`."""
        entry = self.agreement.setdefault(task, TaskAgreement())
        entry.requests += 1
        entry.agreeing += agreeing
        entry.asked += asked
        entry.unanimous += agreeing == asked

    def as_dict(self) -> dict[str, object]:
        """Return the counters as plain JSON-ready values; agreement only when there is some."""
        data: dict[str, object] = {
            "requests": self.requests,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "failures": self.failures,
        }
        if self.agreement:
            data["agreement"] = {
                task: {
                    "requests": entry.requests,
                    "unanimous": entry.unanimous,
                    "mean": round(entry.mean, 4),
                }
                for task, entry in sorted(self.agreement.items())
            }
        return data
