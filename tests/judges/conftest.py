"""A real chat/completions server on 127.0.0.1 for the judge tests, and its helpers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """What the server answers to one request.

    `content` becomes the message text of a chat completion; `body` replaces the whole
    response body; `delay_s` waits before answering (for timeouts).
    """

    status: int = 200
    content: str | None = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def verdict(label: str, detail: str = "fine") -> Reply:
    """A well-formed answer with `label`."""
    return Reply(content=json.dumps({"label": label, "detail": detail}))


def first_label(body: dict[str, Any]) -> Reply:
    """Answer with the first label that the request's schema allows."""
    schema = body["response_format"]["json_schema"]["schema"]
    return verdict(schema["properties"]["label"]["enum"][0])


class JudgeServer:
    """Speaks chat/completions; records every request; answers from a script, then `answer`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: list[Reply] = []
        self.answer: Callable[[dict[str, Any]], Reply] = first_label
        self.inflight = 0
        self.max_inflight = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1/"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def user_inputs(self, index: int = -1) -> dict[str, Any]:
        """The inputs of a recorded request, decoded from its user message."""
        messages = self.requests[index]["messages"]
        decoded: dict[str, Any] = json.loads(messages[1]["content"])
        return decoded

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
            scripted = self.script.pop(0) if self.script else None
        return scripted if scripted is not None else self.answer(body)

    def _done(self) -> None:
        with self._lock:
            self.inflight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                reply = server._reply(body, {k.lower(): v for k, v in self.headers.items()})
                try:
                    if reply.delay_s and server.stop.wait(reply.delay_s):
                        return
                    payload = reply.body
                    if payload is None:
                        completion = {
                            "id": "cmpl-1",
                            "object": "chat.completion",
                            "model": body.get("model"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": reply.content},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                        payload = json.dumps(completion).encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    server._done()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    judge_server = JudgeServer()
    judge_server.start()
    try:
        yield judge_server
    finally:
        judge_server.close()


@pytest.fixture
def reply() -> type[Reply]:
    return Reply


@pytest.fixture
def answer_with() -> Callable[[str, str], Reply]:
    return verdict
