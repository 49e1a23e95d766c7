"""The report as JUnit XML, for CI systems (docs/ci.md#the-junit-file).

A `<testsuite>` per suite; a `<testcase classname="SUITE" name="CASE_ID">` per dev case,
failing when its pass rate is below 1 with the verdicts that failed it; the test split of
a suite is one `<testcase name="test split">`, failing when any test case failed, with
counts only. Test cases are never named.

JUnit tells a failure (the test ran and found a fault) from an error (the test could not
run): a case with attempts that did not run (`run.unrun`) is an `<error>`, not a
`<failure>`. Each testcase's `time` is the sum of its turns' durations over its attempts,
in seconds. When the report compares the run with an earlier one, a last `<testsuite
name="comparison">` holds one testcase for it: a failure when a group regressed, an error
when the comparison is inconclusive.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from soev_pipeline.core.chars import xml_safe
from soev_pipeline.core.outputs import Owned, replace_file
from soev_pipeline.text import shorten

from .results import CaseResult, Comparison, Report
from .run_attempts import CaseAttempts, RunAttempts

TEST_SPLIT = "test split"
COMPARISON = "comparison"


def _failure_text(case: CaseResult) -> tuple[str, str]:
    """The failure message (one line) and text (a line per failed verdict) of a dev case."""
    failed = sum(1 for attempt in case.attempts if not attempt.passed)
    message = f"{failed} of {len(case.attempts)} attempts failed"
    lines = []
    kinds: set[str] = set()
    unrun: dict[str, int] = defaultdict(int)
    for attempt in case.attempts:
        if attempt.unrun is not None:
            unrun[attempt.unrun] += 1
            lines.append(f"attempt {attempt.attempt}: did not run: {attempt.unrun}")
            continue
        if attempt.passed:
            continue
        for verdict in attempt.verdicts:
            if verdict.status in ("fail", "error"):
                gate = " (gate)" if verdict.gate else ""
                detail = shorten(verdict.detail, 300, flatten=True)
                kinds.add(verdict.kind)
                lines.append(
                    f"attempt {attempt.attempt}: {verdict.kind} {verdict.status}{gate}: {detail}"
                )
    if unrun:
        codes = ", ".join(f"{code} {count}" for code, count in sorted(unrun.items()))
        message += f"; {sum(unrun.values())} did not run ({codes})"
    if kinds:
        message += ": " + ", ".join(sorted(kinds))
    return message, "\n".join(lines)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _comparison(root: ET.Element, comparison: Comparison) -> tuple[int, int, int]:
    """The testsuite of the comparison; returns its (tests, failures, errors)."""
    element = ET.SubElement(root, "testsuite", name=COMPARISON, tests="1", time=_seconds(0))
    testcase = ET.SubElement(
        element,
        "testcase",
        classname=COMPARISON,
        name=f"against run {comparison.baseline_id}",
        time=_seconds(0),
    )
    regressed = [
        name for name, group in comparison.groups().items() if group.verdict == "regressed"
    ]
    why = comparison.why_inconclusive()
    failures = errors = 0
    if why is not None:
        errors = 1
        ET.SubElement(testcase, "error", message=f"inconclusive: {why}", type="soev.inconclusive")
    elif regressed:
        failures = 1
        ET.SubElement(
            testcase,
            "failure",
            message=f"regressed significantly: {', '.join(regressed)}",
            type="soev.regressed",
        )
    element.set("failures", str(failures))
    element.set("errors", str(errors))
    return 1, failures, errors


def junit_xml(report: Report, attempts: RunAttempts) -> ET.ElementTree[ET.Element]:
    """The JUnit document of a report; `attempts` gives the test split's counts per suite
    and every case's seconds."""
    dev: dict[str, list[CaseResult]] = defaultdict(list)
    for case in report.cases:
        dev[case.suite].append(case)
    tests: dict[str, list[CaseAttempts]] = defaultdict(list)
    for case_attempts in attempts.cases.values():
        if case_attempts.split == "test" and case_attempts.suite is not None:
            tests[case_attempts.suite].append(case_attempts)
    root = ET.Element("testsuites", name=f"soev-evals {report.project} {report.run_id}")
    totals = [0, 0, 0]
    seconds_total = 0.0
    for suite in report.suites:
        element = ET.SubElement(root, "testsuite", name=suite)
        count = failures = errors = 0
        seconds_suite = 0.0
        for case in dev.get(suite, []):
            known = attempts.cases.get(case.case_id)
            seconds = known.seconds if known is not None else 0.0
            seconds_suite += seconds
            testcase = ET.SubElement(
                element, "testcase", classname=suite, name=case.case_id, time=_seconds(seconds)
            )
            count += 1
            if case.pass_rate < 1.0:
                message, text = _failure_text(case)
                unrun = any(attempt.unrun is not None for attempt in case.attempts)
                tag, kind = ("error", "soev.unrun") if unrun else ("failure", "soev.failed")
                failures += tag == "failure"
                errors += tag == "error"
                ET.SubElement(testcase, tag, message=message, type=kind).text = text
        if suite in tests:
            split = tests[suite]
            seconds = sum(case.seconds for case in split)
            seconds_suite += seconds
            failed = sum(1 for case in split if case.rate < 1.0)
            unrun_tests = sum(case.unrun for case in split)
            testcase = ET.SubElement(
                element, "testcase", classname=suite, name=TEST_SPLIT, time=_seconds(seconds)
            )
            count += 1
            message = f"{failed} of {len(split)} test cases did not pass every attempt"
            if unrun_tests:
                errors += 1
                message += f"; {unrun_tests} of their attempts did not run"
                ET.SubElement(testcase, "error", message=message, type="soev.unrun")
            elif failed:
                failures += 1
                ET.SubElement(testcase, "failure", message=message, type="soev.failed")
        element.set("tests", str(count))
        element.set("failures", str(failures))
        element.set("errors", str(errors))
        element.set("time", _seconds(seconds_suite))
        totals[0] += count
        totals[1] += failures
        totals[2] += errors
        seconds_total += seconds_suite
    if report.previous is not None:
        for index, value in enumerate(_comparison(root, report.previous)):
            totals[index] += value
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", str(totals[2]))
    root.set("time", _seconds(seconds_total))
    for element in root.iter():  # a reply's NUL or ESC must not break the XML or a CI log
        for key, attribute in element.attrib.items():
            element.set(key, xml_safe(attribute))
        if element.text:
            element.text = xml_safe(element.text)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(
    path: Path, report: Report, attempts: RunAttempts, *, owned: Iterable[Owned] = ()
) -> Path:
    """Write the JUnit file of a report to `path`, atomically, never onto a link nor into
    one of `owned` (see `replace_file`)."""
    tree = junit_xml(report, attempts)
    return replace_file(
        path,
        lambda temporary: tree.write(temporary, encoding="utf-8", xml_declaration=True),
        option="--junit",
        owned=owned,
    )
