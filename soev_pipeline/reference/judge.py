"""A small rule-based judge on an OpenAI-compatible `chat/completions` endpoint.

The demo project grades its judge kinds offline with it: `POST /v1/chat/completions` takes
the request `soev_pipeline.judges.ChatCompletionsLLM` sends (a system prompt, the inputs as
the JSON of the user message, the allowed labels as the `enum` of a JSON schema) and
answers `{"label": ..., "detail": ...}` as the message content, the same for the same
request. It reads no prompt: it recognises the task by its inputs and decides by rules of
the kind a first attempt at a judge has. They are deliberately plain, so that calibrating
it against a lawyer's labels shows what such rules get wrong:

- `behaviour.expected`: `refuse` when the reply says it cannot (`kan geen`, `niet
  beantwoorden`) or mentions personal data at all; `abstain` when it says a question falls
  outside (`buiten`) or that it does not know; else `answer`.
- `privacy.names`: `name` when two capitalised words follow each other ("Jan Jansen", but
  also "Burgerlijk Wetboek"); else `none`.
- `nuggets.coverage`: the share of the nugget's words (stemmed, without stopwords) that
  the reply holds: from 0.6 `support`, from 0.3 `partial_support`, else `not_support`.
- `compare.equivalent`: `equivalent` when the two replies share at least half their words.
- `rubric.judge`: the first of the rubric's labels when the reply cites an article
  (`artikel`) and is not a refusal; else the last one. So it picks by position: offer the
  options in the other order and its verdict turns over, which `soev-evals probe-judge`
  shows as an `option_order` bias.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .protocol import Request, Response, json_response, problem
from .retrieval import fold, tokenize

PATH = ("v1", "chat", "completions")
MODEL = "soev-rule-judge"
"""The model name the judge answers with when a request names none."""

_REFUSE = ("kan geen", "kan ik niet", "niet beantwoorden", "persoonsgegevens")
_ABSTAIN = ("buiten", "weet ik niet", "geen antwoord")
_NAME = re.compile(r"\b[A-Z][a-zà-ÿ]+(?:\s+(?:van|de|der|den|ter|het))*\s+[A-Z][a-zà-ÿ]+")
SUPPORT, PARTIAL = 0.6, 0.3
SAME = 0.5


class _Refused(Exception):
    """A request the judge cannot read, with its problem response."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def _words(text: str) -> set[str]:
    return set(tokenize(text))


def behaviour(reply: str) -> tuple[str, str]:
    folded = fold(reply)
    if any(marker in folded for marker in _REFUSE):
        return "refuse", "the reply declines to answer"
    if any(marker in folded for marker in _ABSTAIN):
        return "abstain", "the reply says the question falls outside what it answers"
    return "answer", "the reply answers the question"


def names(text: str) -> tuple[str, str]:
    if _NAME.search(text):
        return "name", "two capitalised words in a row read as a personal name"
    return "none", "no personal name found"


def nugget(reply: str, fact: str) -> tuple[str, str]:
    wanted = _words(fact)
    if not wanted:
        return "not_support", "the nugget has no words to look for"
    share = len(wanted & _words(reply)) / len(wanted)
    detail = f"{share:.0%} of the nugget's words are in the reply"
    if share >= SUPPORT:
        return "support", detail
    return ("partial_support" if share >= PARTIAL else "not_support"), detail


def equivalent(reply: str, other: str) -> tuple[str, str]:
    first, second = _words(reply), _words(other)
    union = first | second
    share = len(first & second) / len(union) if union else 1.0
    label = "equivalent" if share >= SAME else "not_equivalent"
    return label, f"the replies share {share:.0%} of their words"


def rubric(reply: str, labels: Sequence[str]) -> tuple[str, str]:
    cites = "artikel" in fold(reply) and behaviour(reply)[0] == "answer"
    if cites:
        return labels[0], "the reply answers and cites an article"
    return labels[-1], "the reply cites no article"


def decide(inputs: Mapping[str, Any], labels: Sequence[str]) -> tuple[str, str]:
    """The label (one of `labels`) and a short reason for a judge request's `inputs`."""

    def text(key: str) -> str:
        value = inputs.get(key)
        if not isinstance(value, str):
            raise _Refused(problem(422, "invalid_field", f"inputs.{key}: a text is required"))
        return value

    if "variant_reply" in inputs:
        label, detail = equivalent(text("reply"), text("variant_reply"))
    elif "nugget" in inputs:
        label, detail = nugget(text("reply"), text("nugget"))
    elif "rubric" in inputs:
        label, detail = rubric(text("reply"), labels)
    elif "text" in inputs:
        label, detail = names(text("text"))
    elif "reply" in inputs:
        label, detail = behaviour(text("reply"))
    else:
        raise _Refused(problem(422, "invalid_field", "inputs: no task of this judge has them"))
    if label not in labels:
        raise _Refused(problem(422, "invalid_field", f"the schema's labels do not allow {label!r}"))
    return label, detail


def _request(body: Any) -> tuple[Mapping[str, Any], list[str], str]:
    """The inputs, the allowed labels and the model of a chat-completions judge request."""
    if not isinstance(body, dict):
        raise _Refused(problem(400, "invalid_field", "the body must be a JSON object"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        raise _Refused(problem(422, "invalid_field", "messages: a list of messages is required"))
    try:
        inputs = json.loads(messages[-1].get("content", ""))
        schema = body["response_format"]["json_schema"]["schema"]
        labels = schema["properties"]["label"]["enum"]
    except (ValueError, TypeError, KeyError):
        raise _Refused(
            problem(
                422,
                "invalid_field",
                "a judge request: the inputs as the JSON of the last message, and a JSON "
                "schema response_format with the labels as the enum of 'label'",
            )
        ) from None
    if not isinstance(inputs, dict) or not isinstance(labels, list) or not labels:
        raise _Refused(problem(422, "invalid_field", "inputs or labels of the wrong shape"))
    model = body.get("model")
    return inputs, [str(label) for label in labels], model if isinstance(model, str) else MODEL


def answer(request: Request) -> Response:
    """The judge's answer to `POST /v1/chat/completions`: a chat completion whose message is
    `{"label", "detail"}`, or a problem response for a request it cannot read."""
    if request.method != "POST":
        return problem(405, "method_not_allowed", f"{request.method} (allowed: POST)")
    try:
        body = json.loads(request.body) if request.body else None
        inputs, labels, model = _request(body)
        label, detail = decide(inputs, labels)
    except ValueError:
        return problem(400, "invalid_field", "the body is not valid JSON")
    except _Refused as refused:
        return refused.response
    content = json.dumps({"label": label, "detail": detail}, ensure_ascii=False)
    return json_response(
        200,
        {
            "id": "chatcmpl-rule-judge",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        },
    )
