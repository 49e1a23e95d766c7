"""The public names of SPEC.md and the seeds are importable from where they say, and the
domain core never imports dagster."""

from __future__ import annotations

import subprocess
import sys

import pytest

PUBLIC = {
    "soev_pipeline.core": [
        "Case",
        "CriterionSpec",
        "Evidence",
        "Verdict",
        "CriterionContext",
        "JudgeRequest",
        "JudgeResult",
        "JudgeError",
        "FrozenModel",
        "Judge",
        "LanguageDetector",
        "Arm",
        "CaseSetup",
        "Tracker",
    ],
    "soev_pipeline.criteria": [
        "CriterionRegistry",
        "Builtin",
        "NoParams",
        "Evaluator",
        "outcome",
        "error",
        "not_applicable",
        "judge_label",
        "builtin_registry",
    ],
    "soev_pipeline.judges": [
        "LLMJudge",
        "JudgeLLM",
        "load_prompts",
        "prompt_shas",
        "LangidDetector",
    ],
    "soev_pipeline.arms": ["SoevThreadArm", "ChatCompletionsArm", "create_http_client"],
    "soev_pipeline.run": ["build_manifest"],
    "soev_pipeline.cli": [
        "load",
        "LoadedProject",
        "ProjectError",
        "SealChangedError",
        "SuiteError",
        "UnknownCriterionError",
        "CriterionParamsError",
        "DuplicateCriterionError",
        "RuntimeProvider",
        "RuntimeBindings",
        "main",
    ],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names(module: str) -> None:
    imported = __import__(module, fromlist=["__all__"])
    for name in PUBLIC[module]:
        assert hasattr(imported, name), f"{module}.{name}"
    exported = imported.__all__
    assert len(exported) == len(set(exported))
    assert all(hasattr(imported, name) for name in exported)


@pytest.mark.parametrize(
    "module",
    [
        "soev_pipeline.core",
        "soev_pipeline.criteria",
        "soev_pipeline.judges",
        "soev_pipeline.run",
        "soev_pipeline.arms",
        "soev_pipeline.cli",
    ],
)
def test_domain_core_does_not_import_dagster(module: str) -> None:
    code = (
        f"import sys, {module}; from soev_pipeline.criteria import builtin_registry; "
        "builtin_registry(); sys.exit(1 if 'dagster' in sys.modules else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, f"{module} imports dagster"


def test_builtin_registry_has_the_22_kinds() -> None:
    from soev_pipeline.criteria import builtin_registry

    expected = {
        "reply.language",
        "reply.contains",
        "reply.not_contains",
        "reply.max_length",
        "privacy.none",
        "privacy.names",
        "behaviour.expected",
        "behaviour.message",
        "refusal.code",
        "citations.required",
        "citations.forbidden",
        "citations.in_corpus",
        "citations.unseen",
        "citations.quotes_verbatim",
        "citations.mentions_in_corpus",
        "nuggets.coverage",
        "rubric.judge",
        "compare.equivalent",
        "compare.same_citations",
        "usage.max_tokens",
        "usage.max_seconds",
        "run.no_failure",
    }
    registry = builtin_registry()
    assert set(registry) == expected
    assert builtin_registry() is not registry
