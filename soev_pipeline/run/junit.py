"""The report as JUnit XML, for CI systems (SPEC.md section 10).

A `<testsuite>` per suite; a `<testcase classname="SUITE" name="CASE_ID">` per dev case,
failing when its pass rate is below 1 with the verdicts that failed it; the test split of
a suite is one `<testcase name="test split">`, failing when any test case failed, with
counts only. Test cases are never named.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from soev_pipeline.text import shorten

from .compare import RunRates
from .results import CaseResult, Report

TEST_SPLIT = "test split"


def _failure_text(case: CaseResult) -> tuple[str, str]:
    """The failure message (one line) and text (a line per failed verdict) of a dev case."""
    failed = sum(1 for attempt in case.attempts if not attempt.passed)
    message = f"{failed} of {len(case.attempts)} attempts failed"
    lines = []
    kinds: set[str] = set()
    for attempt in case.attempts:
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
    if kinds:
        message += ": " + ", ".join(sorted(kinds))
    return message, "\n".join(lines)


def junit_xml(report: Report, rates: RunRates) -> ET.ElementTree[ET.Element]:
    """The JUnit document of a report; `rates` gives the test split's counts per suite."""
    dev: dict[str, list[CaseResult]] = defaultdict(list)
    for case in report.cases:
        dev[case.suite].append(case)
    tests: dict[str, list[float]] = defaultdict(list)
    for rate in rates.cases.values():
        if rate.split == "test":
            tests[rate.suite].append(rate.rate)
    root = ET.Element("testsuites", name=f"soev-evals {report.project} {report.run_id}")
    totals = [0, 0]
    for suite in report.suites:
        element = ET.SubElement(root, "testsuite", name=suite)
        count = failures = 0
        for case in dev.get(suite, []):
            testcase = ET.SubElement(element, "testcase", classname=suite, name=case.case_id)
            count += 1
            if case.pass_rate < 1.0:
                failures += 1
                message, text = _failure_text(case)
                ET.SubElement(testcase, "failure", message=message, type="soev.failed").text = text
        if suite in tests:
            split = tests[suite]
            failed = sum(1 for rate in split if rate < 1.0)
            testcase = ET.SubElement(element, "testcase", classname=suite, name=TEST_SPLIT)
            count += 1
            if failed:
                failures += 1
                ET.SubElement(
                    testcase,
                    "failure",
                    message=f"{failed} of {len(split)} test cases did not pass every attempt",
                    type="soev.failed",
                )
        element.set("tests", str(count))
        element.set("failures", str(failures))
        element.set("errors", "0")
        totals[0] += count
        totals[1] += failures
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("errors", "0")
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, report: Report, rates: RunRates) -> None:
    """Write the JUnit file of a report to `path`, atomically."""
    temporary = path.with_name(path.name + ".tmp")
    junit_xml(report, rates).write(temporary, encoding="utf-8", xml_declaration=True)
    os.replace(temporary, path)
