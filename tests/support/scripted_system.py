"""A scripted system under test that speaks the soev thread API on 127.0.0.1.

Each user turn is answered by `script(text, history)`, which returns a `Reply`. The server
counts what it was asked, so a test can prove that a rescore called nothing.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str
    refs: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = field(
        default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 20}
    )
    fail: str | None = None


Script = Callable[[str, list[str]], Reply]


def echo_script(text: str, history: list[str]) -> Reply:
    return Reply(f"U vroeg: {text}")


class ScriptedSystem:
    """A threaded HTTP server with SSE answers from a script. Use as a context manager."""

    def __init__(self, script: Script = echo_script) -> None:
        self.script = script
        self.opened = 0
        self.inputs = 0
        self.deleted = 0
        self.texts: list[str] = []
        self._threads: dict[str, list[str]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def calls(self) -> int:
        return self.opened + self.inputs

    def __enter__(self) -> ScriptedSystem:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _turn(self, thread_id: str, text: str) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            history = self._threads.setdefault(thread_id, [])
            self.texts.append(text)
        reply = self.script(text, list(history))
        history.append(text)
        if reply.fail:
            return [("failure", {"code": reply.fail, "detail": "scripted failure"})]
        elements = [
            {"id": f"el-{index}", "ref": ref, "text": "..."} for index, ref in enumerate(reply.refs)
        ]
        output: dict[str, Any] = {
            "content": reply.content,
            "citations": [
                {"source": element["id"], "at": 0, "status": "resolved"} for element in elements
            ],
        }
        if reply.usage is not None:
            output["usage"] = reply.usage
        frames: list[tuple[str, dict[str, Any]]] = []
        if elements:
            frames.append(("tool_output", {"call_id": "c1", "elements": elements}))
        frames += [("model_output", output), ("status", {"state": "idle"})]
        return frames

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        system = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                data: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
                return data

            def _stream(self, status: int, thread_id: str, frames: list[Any]) -> None:
                payload = b"".join(
                    f"id: {n}\nevent: {kind}\ndata: {json.dumps(data)}\n\n".encode()
                    for n, (kind, data) in enumerate(frames)
                )
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("X-Soev-Thread-Id", thread_id)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                body = self._body()
                parts = self.path.strip("/").split("/")
                if parts == ["v1", "chat", "threads"]:
                    with system._lock:
                        system.opened += 1
                        thread_id = f"t{next(system._ids)}"
                    self._stream(201, thread_id, system._turn(thread_id, body["input"]["text"]))
                elif len(parts) == 5 and parts[4] == "inputs":
                    with system._lock:
                        system.inputs += 1
                    thread_id = parts[3]
                    self._stream(200, thread_id, system._turn(thread_id, body["input"]["text"]))
                else:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

            def do_DELETE(self) -> None:
                with system._lock:
                    system.deleted += 1
                self.send_response(204)
                self.end_headers()

        return Handler
