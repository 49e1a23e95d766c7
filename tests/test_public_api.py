"""The public names of docs/python-api.md#lower-down live where its table says, each package
lists its names in a sorted `__all__`, and the domain core imports without dagster."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

PUBLIC = {
    "core": [
        "Arm",
        "Case",
        "CaseSetup",
        "CriterionContext",
        "CriterionSpec",
        "Evidence",
        "FrozenModel",
        "Judge",
        "JudgeError",
        "JudgeRequest",
        "JudgeResult",
        "LanguageDetectionError",
        "LanguageDetector",
        "Tracker",
        "Verdict",
    ],
    "criteria": [
        "Builtin",
        "CriterionRegistry",
        "Evaluator",
        "NoParams",
        "builtin_registry",
        "criterion",
        "error",
        "judge_label",
        "not_applicable",
        "outcome",
    ],
    "judges": ["JudgeLLM", "LLMJudge", "LangidDetector", "load_prompts", "prompt_shas"],
    "arms": ["ChatCompletionsArm", "SoevThreadArm", "create_http_client"],
    "run": ["Report", "RunArchive", "build_manifest", "build_report", "compare_runs"],
    "analysis": [
        "TABLES",
        "attempts_frame",
        "cases_frame",
        "export_parquet",
        "labels_frame",
        "runs_frame",
        "verdicts_frame",
    ],
    "cli": [
        "CriterionParamsError",
        "DuplicateCriterionError",
        "LoadedProject",
        "ProjectError",
        "RuntimeBindings",
        "RuntimeProvider",
        "SealChangedError",
        "SuiteError",
        "UnknownCriterionError",
        "load",
        "main",
    ],
}
CORE = ("core", "criteria", "judges", "arms", "run", "analysis", "cli")


def isort_key(name: str) -> tuple[int, str]:
    """Constants, then classes, then the rest: the order of ruff's sorted `__all__`."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


@pytest.mark.parametrize(
    ("package", "name"), [(package, name) for package, names in PUBLIC.items() for name in names]
)
def test_the_public_name_is_exported_where_the_docs_say(package: str, name: str) -> None:
    module = importlib.import_module(f"soev_pipeline.{package}")
    assert name in module.__all__
    assert getattr(module, name) is not None


def test_the_table_of_the_docs_lists_these_names() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"
    rows = re.findall(r"^\| `soev_pipeline\.(\w+)` \|[^|]*\|(.*)\|$", page.read_text(), re.M)
    assert {package: re.findall(r"`(\w+)`", names) for package, names in rows} == PUBLIC


@pytest.mark.parametrize("package", CORE)
def test_all_is_sorted_and_every_name_in_it_exists(package: str) -> None:
    module = importlib.import_module(f"soev_pipeline.{package}")
    assert module.__all__ == sorted(set(module.__all__), key=isort_key)
    assert all(hasattr(module, name) for name in module.__all__)


def test_the_domain_core_imports_without_dagster() -> None:
    modules = ", ".join(f"soev_pipeline.{package}" for package in CORE)
    code = (
        f"import sys, {modules}; from soev_pipeline.criteria import builtin_registry; "
        "builtin_registry(); sys.exit('dagster' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr or "the domain core imports dagster"


ROOT = [
    "Evaluation",
    "LoadedProject",
    "Progress",
    "Report",
    "__version__",
    "evaluate",
    "evaluate_run",
    "load",
    "rescore",
    "rescore_run",
]


def test_the_python_api_is_the_curated_all_of_the_package() -> None:
    import soev_pipeline
    from soev_pipeline import api, project
    from soev_pipeline.run.results import Report

    assert soev_pipeline.__all__ == ROOT
    assert soev_pipeline.evaluate is api.evaluate and soev_pipeline.rescore is api.rescore
    assert soev_pipeline.load is project.load and soev_pipeline.Report is Report
    assert all(getattr(soev_pipeline, name) is not None for name in ROOT)
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        soev_pipeline.evaluat  # noqa: B018


def test_importing_the_package_loads_nothing_until_a_name_is_used() -> None:
    code = (
        "import sys, soev_pipeline; "
        "heavy = [m for m in ('pydantic', 'httpx', 'dagster', 'soev_pipeline.api') "
        "if m in sys.modules]; "
        "soev_pipeline.evaluate; "
        "sys.exit(str(heavy) if heavy or 'dagster' in sys.modules else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
