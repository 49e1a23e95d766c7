"""Attempts that did not run (docs/statistics.md#attempts-that-did-not-run): one
classification, by status and code, and the ledger of a run's planned attempts read from its
evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from soev_pipeline.core.models import Evidence, Failure, Turn
from soev_pipeline.run import RunArchive, build_manifest
from soev_pipeline.run.results import GradedAttempt
from soev_pipeline.run.run_attempts import attempts_from_graded
from soev_pipeline.run.unrun import (
    INTERRUPTED,
    did_not_run,
    infrastructure,
    read_ledger,
    tally,
    too_many,
)
from tests.support.builders import make_evidence, make_turn, make_variant


@pytest.mark.parametrize(
    ("code", "status", "unrun"),
    [
        ("connect_error", None, True),
        ("http_429", None, True),  # evidence from before the status was recorded
        ("http_503", None, True),
        ("http_500", None, True),
        ("http_404", None, False),
        ("http_4290", None, False),
        ("service_unavailable", 503, True),  # a 5xx whose body names its own code
        ("rate_limited", 429, True),
        ("thread_active", 409, False),
        ("http_503", 400, False),  # the status decides when there is one
        ("timeout", None, False),
        ("malformed_frame", None, False),
        ("stream_ended", None, False),
        ("kapot", None, False),  # a failure event of the system: its behaviour
        ("arm_error", None, False),
    ],
)
def test_what_did_not_run(code: str, status: int | None, unrun: bool) -> None:
    assert infrastructure(Failure(code=code, http_status=status)) is unrun


def test_an_attempt_did_not_run_when_any_of_its_turns_or_variants_did_not() -> None:
    assert did_not_run(make_evidence()) is None
    quality = make_evidence(None, turns=[make_turn(None, failure="timeout")])
    assert did_not_run(quality) is None
    turns = [make_turn(), make_turn(None, failure="http_502")]
    assert did_not_run(make_evidence(None, turns=turns)) == "http_502"
    variant = make_variant("v").model_copy(
        update={"turns": (make_turn(None, failure="connect_error"),)}
    )
    assert did_not_run(make_evidence(turns=[make_turn()], variants=[variant])) == "connect_error"


def test_the_status_is_kept_out_of_the_json_when_there_is_none() -> None:
    assert Failure(code="timeout").model_dump_json() == '{"code":"timeout","detail":""}'
    with_status = Failure(code="service_unavailable", http_status=503)
    assert Failure.model_validate_json(with_status.model_dump_json()) == with_status
    assert Failure.model_validate_json('{"code": "http_503"}').http_status is None


def test_a_tally_orders_codes_by_count() -> None:
    codes = {("a", 0): "http_503", ("a", 1): "connect_error", ("b", 0): "connect_error"}
    counted = tally(codes)
    assert (counted.attempts, list(counted.codes.items())) == (
        3,
        [("connect_error", 2), ("http_503", 1)],
    )
    assert counted.describe() == "3 attempts did not run (connect_error 2, http_503 1)"
    assert tally({}).describe() == "every attempt ran"


def test_more_than_the_share_is_too_many() -> None:
    assert not too_many(5, 100) and too_many(6, 100)
    assert not too_many(0, 0)
    assert too_many(1, 100, 0.0)


def _evidence(
    case_id: str, attempt: int, failure: str | None = None, seconds: float = 1.5
) -> Evidence:
    turn = Turn(
        input="Vraag?",
        reply=None if failure else "Antwoord.",
        duration_s=seconds,
        failure=Failure(code=failure) if failure else None,
    )
    suite, split = ("kern", "test") if case_id.endswith("t") else ("kern", "dev")
    return Evidence(case_id=case_id, suite=suite, split=split, attempt=attempt, turns=(turn,))


def _graded(case_id: str, attempt: int, passed: bool) -> GradedAttempt:
    split = "test" if case_id.endswith("t") else "dev"
    return GradedAttempt(
        case_id=case_id,
        suite="kern",
        split=split,  # type: ignore[arg-type]
        attempt=attempt,
        score=None,
        passed=passed,
        verdicts=(),
    )


def test_the_ledger_of_a_run_and_the_attempts_it_makes(tmp_path: Path) -> None:
    # k = 3 over cases a, b, c, d: a ran thrice; b's attempt 1 got a 503, its attempt 2 has
    # no evidence; c was never archived; d's attempt 0 could not connect and ran when it
    # was run once more (its later line counts), its attempt 1 ran and then, run again, got
    # a 503 (the later line counts there too); x is no case of the run.
    manifest = build_manifest(
        run_id="r", project="p", suites=["kern"], split=None, k=3, cases=[], shas={}
    ).model_copy(update={"cases": {"a": "da", "b": "db", "c": "dc", "d": "dd"}})
    archive = RunArchive(tmp_path, "r")
    archive.create(manifest)
    with archive.evidence_writer() as writer:
        for evidence in [
            _evidence("a", 0),
            _evidence("a", 1),
            _evidence("a", 2),
            _evidence("b", 0),
            _evidence("b", 1, "http_503"),
            _evidence("d", 0, "connect_error"),
            _evidence("d", 1),
            _evidence("d", 2),
            _evidence("x", 0, "connect_error"),
            _evidence("d", 0),
            _evidence("d", 1, "http_503"),
        ]:
            writer.append(evidence)
    ledger = read_ledger(archive, manifest)
    assert ledger.planned == 12
    assert dict(ledger.unrun) == {
        ("b", 1): "http_503",
        ("b", 2): INTERRUPTED,
        ("c", 0): INTERRUPTED,
        ("c", 1): INTERRUPTED,
        ("c", 2): INTERRUPTED,
        ("d", 1): "http_503",
    }
    assert ledger.seconds["a"] == pytest.approx(4.5) and "c" not in ledger.seconds
    assert ledger.inconclusive() and not ledger.inconclusive(0.5)

    graded = [_graded("a", n, n != 1) for n in range(3)]
    graded += [_graded("b", 0, True), _graded("b", 1, True)]  # b's 503 graded as passed
    graded += [_graded("d", n, True) for n in range(3)]
    attempts = attempts_from_graded(manifest, graded, ledger)
    a, b, c, d = (attempts.cases[case_id] for case_id in "abcd")
    assert (a.passes, a.unrun, a.rate) == ((True, False, True), 0, pytest.approx(2 / 3))
    assert (b.passes, b.unrun, b.rate) == ((True,), 2, pytest.approx(1 / 3))
    assert (c.suite, c.passes, c.unrun, c.digest) == (None, (), 3, "dc")
    assert (d.passes, d.unrun) == ((True, True), 1)
    # where they were, for the bound least favourable to a run
    assert (b.outcomes(), c.outcomes(), d.outcomes()) == (
        (True, None, None),
        (None, None, None),
        (True, None, True),
    )
    assert attempts.unrun.attempts == 6 and attempts.planned == 12
    assert attempts.unrun.codes == {INTERRUPTED: 4, "http_503": 2}
    # without a ledger every graded attempt ran; b's missing attempt was interrupted
    plain = attempts_from_graded(manifest, graded)
    assert plain.cases["b"].passes == (True, True) and plain.cases["b"].unrun == 1
    assert "c" not in plain.cases and plain.unrun.codes == {INTERRUPTED: 1}
