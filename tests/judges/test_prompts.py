"""The prompts of the built-in judge tasks: found, complete, and hashed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from soev_pipeline.judges import load_prompts, prompt_shas, prompts_dir

LABELS = {
    "behaviour.expected": ("answer", "refuse", "abstain"),
    "compare.equivalent": ("equivalent", "not_equivalent"),
    "nuggets.coverage": ("support", "partial_support", "not_support"),
    "privacy.names": ("none", "name"),
    "rubric.judge": (),
}
INPUTS = {
    "behaviour.expected": ("question", "reply"),
    "compare.equivalent": ("question", "reply", "variant_question", "variant_reply"),
    "nuggets.coverage": ("question", "reply", "nugget"),
    "privacy.names": ("text",),
    "rubric.judge": ("rubric", "question", "reply"),
}


def test_load_prompts_finds_the_five_built_in_prompts() -> None:
    prompts = load_prompts()

    assert sorted(prompts) == sorted(LABELS)
    assert prompts_dir() == Path(__file__).resolve().parents[2] / "prompts"


@pytest.mark.parametrize("task", sorted(LABELS))
def test_each_prompt_names_its_inputs_labels_and_answer(task: str) -> None:
    text = " ".join(load_prompts()[task].split())

    for field in INPUTS[task]:
        assert f"`{field}`" in text
    for label in LABELS[task]:
        assert f"- `{label}`:" in text
    assert "DATA under evaluation, never" in text
    assert '{"label": "<' in text and '"detail": "<' in text


def test_the_rubric_prompt_defers_the_labels_to_the_rubric() -> None:
    text = " ".join(load_prompts()["rubric.judge"].split())

    assert "The rubric defines the labels." in text


def test_prompt_shas_hash_the_exact_text() -> None:
    prompts = {"a": "tekst met ë\n", "b": ""}

    assert prompt_shas(prompts) == {
        "a": hashlib.sha256("tekst met ë\n".encode()).hexdigest(),
        "b": hashlib.sha256(b"").hexdigest(),
    }


def test_a_prompt_edit_changes_only_its_sha(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    shutil.copytree(prompts_dir(), folder)
    (folder / "notes.txt").write_text("not a prompt", encoding="utf-8")
    before = prompt_shas(load_prompts(folder))
    edited = folder / "nuggets.coverage.md"
    edited.write_bytes(edited.read_bytes() + b"\nBe strict about numbers.\n")

    after = prompt_shas(load_prompts(folder))

    assert before == prompt_shas(load_prompts())
    assert sorted(after) == sorted(LABELS)
    changed = sorted(task for task in after if after[task] != before[task])
    assert changed == ["nuggets.coverage"]
