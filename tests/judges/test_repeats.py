"""`judge.repeats`: a strict majority of the asks decides, and the agreement is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.ports import JudgeRequest, JudgeResult
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.judges import open_judge
from tests.support.chat_completions import FakeChatCompletions, completion, verdict

EQUIVALENCE = ("equivalent", "not_equivalent")


def compare_request() -> JudgeRequest:
    return JudgeRequest(
        task="compare.equivalent",
        inputs={
            "question": ["Hoe lang heb ik voor bezwaar?"],
            "reply": "Zes weken.",
            "variant_question": ["Wat is de bezwaartermijn?"],
            "variant_reply": "Die termijn is zes weken.",
        },
        allowed_labels=EQUIVALENCE,
    )


def judge_once(
    url: str, repeats: int, cache_path: Path | None
) -> tuple[JudgeResult | JudgeError, dict[str, object]]:
    settings = JudgeConfig(base_url=url, model="judge-model", repeats=repeats, max_retries=0)

    async def main() -> tuple[JudgeResult | JudgeError, dict[str, object]]:
        async with open_judge(settings, cache_path=cache_path) as judge:
            try:
                result: JudgeResult | JudgeError = await judge.judge(compare_request())
            except JudgeError as exc:
                result = exc
            return result, judge.stats.as_dict()

    return asyncio.run(main())


def test_the_majority_label_wins_and_the_agreement_is_recorded(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    server.queue(
        verdict("not_equivalent", "different"),
        verdict("equivalent", "same period"),
        verdict("equivalent", "same period"),
    )

    result, stats = judge_once(server.url, 3, tmp_path / "cache.sqlite")

    assert isinstance(result, JudgeResult)
    assert result.label == "equivalent"
    assert result.detail == "same period (agreement 2/3)"
    assert not result.cached
    assert server.calls == 3
    assert stats["calls"] == 3
    assert stats["agreement"] == {
        "compare.equivalent": {"requests": 1, "unanimous": 0, "mean": 0.6667}
    }


def test_each_ask_is_cached_so_a_rescore_asks_nothing(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    server.queue(verdict("equivalent"), verdict("not_equivalent"))
    server.answer = lambda body: verdict("equivalent")
    first, _ = judge_once(server.url, 3, cache)

    again, stats = judge_once(server.url, 3, cache)

    assert server.calls == 3
    assert isinstance(first, JudgeResult) and isinstance(again, JudgeResult)
    assert (again.label, again.detail, again.cached) == (first.label, first.detail, True)
    assert stats["cache_hits"] == 3 and stats["calls"] == 0


def test_a_tie_fails_closed(server: FakeChatCompletions) -> None:
    server.queue(verdict("equivalent"), verdict("not_equivalent"))

    result, stats = judge_once(server.url, 2, None)

    assert isinstance(result, JudgeError)
    assert str(result) == (
        "judge asks for 'compare.equivalent' reached no majority "
        "(equivalent 1, not_equivalent 1 of 2)"
    )
    assert stats["failures"] == 1
    assert "agreement" not in stats


@pytest.mark.parametrize(
    ("second", "third", "label"),
    [("equivalent", "garbage", "equivalent"), ("not_equivalent", "garbage", None)],
)
def test_a_failed_ask_is_no_vote(
    server: FakeChatCompletions, second: str, third: str, label: str | None
) -> None:
    server.queue(verdict("equivalent"), verdict(second), completion(content=third))

    result, _ = judge_once(server.url, 3, None)

    if label is None:
        assert isinstance(result, JudgeError)
        assert "no majority" in str(result)
        assert "1 failed: judge answer for 'compare.equivalent' is not valid JSON" in str(result)
    else:
        assert isinstance(result, JudgeResult)
        assert result.label == label
        assert result.detail.endswith("(agreement 2/3)")


def test_unanimous_asks_count_as_unanimous(server: FakeChatCompletions) -> None:
    result, stats = judge_once(server.url, 3, None)

    assert isinstance(result, JudgeResult)
    assert result.detail == "fine (agreement 3/3)"
    assert stats["agreement"] == {
        "compare.equivalent": {"requests": 1, "unanimous": 1, "mean": 1.0}
    }
