"""The LLM judge of the built-in judge criteria, its prompts, and the language detector.

`open_judge` builds the judge of a project's `judge:` section: an `LLMJudge` over a
`ChatCompletionsLLM` adapter, with the `JudgeCache` so that no question is asked twice, or
over `OfflineLLM` for `rescore --offline`. `LangidDetector` serves `reply.language`.
"""

from .cache import JudgeCache, cache_key
from .chat_completions import ChatCompletionsLLM
from .factory import judge_headers, open_judge
from .language import LangidDetector
from .llm import JudgeLLM, LLMJudge, parse_answer, verdict_schema
from .offline import OFFLINE_MESSAGE, OfflineLLM
from .prompts import load_prompts, prompt_shas, prompts_dir
from .stats import JudgeStats, TaskAgreement

__all__ = [
    "OFFLINE_MESSAGE",
    "ChatCompletionsLLM",
    "JudgeCache",
    "JudgeLLM",
    "JudgeStats",
    "LLMJudge",
    "LangidDetector",
    "OfflineLLM",
    "TaskAgreement",
    "cache_key",
    "judge_headers",
    "load_prompts",
    "open_judge",
    "parse_answer",
    "prompt_shas",
    "prompts_dir",
    "verdict_schema",
]
