"""The judge cache: the same question is never asked twice, and only valid answers are kept."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from soev_pipeline.core.errors import JudgeError
from soev_pipeline.core.models import Case, CriterionSpec, Evidence, Verdict
from soev_pipeline.core.ports import CriterionContext, JudgeRequest, JudgeResult
from soev_pipeline.core.project import JudgeConfig
from soev_pipeline.criteria import builtin_registry
from soev_pipeline.judges import JudgeCache, cache_key, open_judge, verdict_schema
from tests.support.chat_completions import FakeChatCompletions, completion

NAMES = ("none", "name")


def names_request(text: str = "Geachte heer, uw bezwaar is ontvangen.") -> JudgeRequest:
    return JudgeRequest(task="privacy.names", inputs={"text": text}, allowed_labels=NAMES)


def config(url: str, **fields: Any) -> JudgeConfig:
    return JudgeConfig.model_validate({"base_url": url, "model": "judge-model"} | fields)


def judge_all(
    url: str, cache_path: Path | None, requests: list[JudgeRequest], **fields: Any
) -> tuple[list[JudgeResult | BaseException], dict[str, object]]:
    async def main() -> tuple[list[JudgeResult | BaseException], dict[str, object]]:
        async with open_judge(config(url, **fields), cache_path=cache_path) as judge:
            results = await asyncio.gather(
                *(judge.judge(request) for request in requests), return_exceptions=True
            )
            return list(results), judge.stats.as_dict()

    return asyncio.run(main())


def test_a_repeated_request_is_answered_from_the_cache(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    cache = tmp_path / ".soev" / "judge-cache.sqlite"
    (first,), _ = judge_all(server.url, cache, [names_request()])
    assert server.calls == 1

    (again,), stats = judge_all(server.url, cache, [names_request()])

    assert server.calls == 1
    assert isinstance(first, JudgeResult) and isinstance(again, JudgeResult)
    assert (first.cached, again.cached) == (False, True)
    assert again.model_copy(update={"cached": False}) == first
    assert stats == {"requests": 1, "calls": 0, "cache_hits": 1, "failures": 0}


def test_a_changed_request_is_asked_again(server: FakeChatCompletions, tmp_path: Path) -> None:
    cache = tmp_path / "judge-cache.sqlite"
    judge_all(server.url, cache, [names_request("Eerste tekst.")])

    judge_all(server.url, cache, [names_request("Eerste tekst."), names_request("Tweede.")])

    assert server.calls == 2
    assert server.user_inputs() == {"text": "Tweede."}


def test_another_model_does_not_share_answers(server: FakeChatCompletions, tmp_path: Path) -> None:
    cache = tmp_path / "judge-cache.sqlite"
    judge_all(server.url, cache, [names_request()])

    judge_all(server.url, cache, [names_request()], model="other-model")

    assert server.calls == 2


def test_an_invalid_answer_is_not_cached(server: FakeChatCompletions, tmp_path: Path) -> None:
    cache = tmp_path / "judge-cache.sqlite"
    server.queue(completion(content='{"label": "maybe", "detail": ""}'))
    (failed,), stats = judge_all(server.url, cache, [names_request()])
    assert isinstance(failed, JudgeError)
    assert stats["failures"] == 1

    (answered,), _ = judge_all(server.url, cache, [names_request()])
    (again,), _ = judge_all(server.url, cache, [names_request()])

    assert isinstance(answered, JudgeResult) and not answered.cached
    assert isinstance(again, JudgeResult) and again.cached
    assert server.calls == 2


def test_concurrent_twins_ask_once(server: FakeChatCompletions, tmp_path: Path) -> None:
    server.answer = lambda body: completion(content='{"label": "none", "detail": ""}', delay_s=0.1)
    cache = tmp_path / "judge-cache.sqlite"

    results, stats = judge_all(server.url, cache, [names_request() for _ in range(5)])

    assert server.calls == 1
    assert [r.cached for r in results if isinstance(r, JudgeResult)] == [False] + [True] * 4
    assert stats == {"requests": 5, "calls": 1, "cache_hits": 4, "failures": 0}


def test_without_a_cache_every_request_asks(server: FakeChatCompletions, tmp_path: Path) -> None:
    cache = tmp_path / "judge-cache.sqlite"
    judge_all(server.url, cache, [names_request()], cache=False)
    judge_all(server.url, None, [names_request()])

    judge_all(server.url, cache, [names_request()], cache=False)

    assert server.calls == 3
    assert not cache.exists()


def test_the_key_covers_model_messages_and_schema() -> None:
    base: dict[str, Any] = {
        "model": "m",
        "system": "s",
        "user": "u",
        "schema": verdict_schema(NAMES),
    }
    key = cache_key(**base)

    assert len(key) == 64
    assert cache_key(**base) == key
    for field, other in [
        ("model", "m2"),
        ("system", "s2"),
        ("user", "u2"),
        ("schema", verdict_schema(("none", "name", "unsure"))),
    ]:
        assert cache_key(**(base | {field: other})) != key
    assert cache_key(**base, repeat=1) != key
    assert cache_key(**base, repeat=0) == key


def test_two_processes_share_the_cache_file(tmp_path: Path) -> None:
    path = tmp_path / "judge-cache.sqlite"
    writer = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from soev_pipeline.judges import JudgeCache

        async def main():
            with JudgeCache(Path({str(path)!r})) as cache:
                await asyncio.gather(
                    *(cache.put(f"other-{{n}}", "{{}}", task="t", model=None) for n in range(200))
                )

        asyncio.run(main())
        """
    )

    async def ours() -> None:
        with JudgeCache(path) as cache:
            await asyncio.gather(
                *(cache.put(f"ours-{n}", "{}", task="t", model="m") for n in range(200))
            )

    other = subprocess.Popen([sys.executable, "-c", writer])
    asyncio.run(ours())
    assert other.wait(timeout=30) == 0

    with JudgeCache(path) as cache:
        assert cache.count() == 400
        assert asyncio.run(cache.get("other-7")) == "{}"
        assert asyncio.run(cache.get("missing")) is None


def test_the_first_stored_answer_is_kept(tmp_path: Path) -> None:
    async def main() -> str | None:
        with JudgeCache(tmp_path / "c.sqlite") as cache:
            await cache.put("k", "first", task="t", model=None)
            await cache.put("k", "second", task="t", model=None)
            return await cache.get("k")

    assert asyncio.run(main()) == "first"


RUBRIC_CORRECT = "Is the reply legally correct?\n\n- correct: no legal error\n- wrong: an error\n"
RUBRIC_TONE = "Is the reply polite?\n\n- polite: friendly and calm\n- rude: otherwise\n"


def rubric_spec(path: str, labels: tuple[str, str]) -> CriterionSpec:
    params = {"rubric": path, "labels": list(labels), "pass_labels": [labels[0]]}
    return CriterionSpec(kind="rubric.judge", params=params)


def rescore(url: str, cache: Path, rubrics: dict[str, str]) -> list[Verdict]:
    """Grade one attempt with two rubric criteria, as a rescore does, through the registry."""
    registry = builtin_registry()
    case = Case.model_validate(
        {"id": "kern-001", "suite": "kern", "turns": ["Hoe lang heb ik voor bezwaar?"]}
    )
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    evidence = Evidence(
        case_id="kern-001",
        suite="kern",
        split="dev",
        attempt=0,
        reply="Zes weken na de bekendmaking.",
        started_at=moment,
        finished_at=moment,
    )
    specs = [
        rubric_spec("rubrics/correct.md", ("correct", "wrong")),
        rubric_spec("rubrics/tone.md", ("polite", "rude")),
    ]

    async def main() -> list[Verdict]:
        async with open_judge(config(url), cache_path=cache) as judge:
            ctx = CriterionContext(judge=judge, rubrics=rubrics)
            return [await registry.evaluate(spec, case, evidence, ctx) for spec in specs]

    return asyncio.run(main())


def test_after_a_rubric_edit_only_its_requests_go_out(
    server: FakeChatCompletions, tmp_path: Path
) -> None:
    cache = tmp_path / "judge-cache.sqlite"
    rubrics = {"rubrics/correct.md": RUBRIC_CORRECT, "rubrics/tone.md": RUBRIC_TONE}
    first = rescore(server.url, cache, rubrics)
    assert server.calls == 2
    assert [verdict.status for verdict in first] == ["pass", "pass"]

    unchanged = rescore(server.url, cache, rubrics)
    assert server.calls == 2
    assert unchanged == first

    edited_tone = RUBRIC_TONE.replace("friendly and calm", "friendly, calm and respectful")
    edited = rescore(server.url, cache, rubrics | {"rubrics/tone.md": edited_tone})

    assert server.calls == 3
    assert server.user_inputs()["rubric"] == edited_tone
    assert edited[0] == first[0]
    assert edited[1].rubric_sha != first[1].rubric_sha
    assert edited[1].prompt_sha == first[1].prompt_sha is not None
    assert edited[1].judge_model == "judge-model"
