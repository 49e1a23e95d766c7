"""The viewer's HTTP server: a request whose headers do not arrive is cut off."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette

from soev_pipeline.view import create_app
from soev_pipeline.view.server import make_server
from tests.view.conftest import TwoRuns

pytestmark = pytest.mark.e2e


@pytest.fixture
def listening(two_runs: TwoRuns) -> Iterator[tuple[str, int]]:
    app: Starlette = create_app(two_runs.loaded, two_runs.runs)
    server = make_server(app, header_timeout=0.5)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    yield sock.getsockname()
    server.should_exit = True
    thread.join(30)
    sock.close()


def test_a_request_whose_headers_stop_halfway_is_closed(listening: tuple[str, int]) -> None:
    with socket.create_connection(listening, timeout=60) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert slow.recv(1024) == b""  # closed by the server, not by the 60 s of the test
    with socket.create_connection(listening, timeout=60) as silent:
        assert silent.recv(1024) == b""  # connected, never said a word
    with socket.create_connection(listening, timeout=60) as whole:
        whole.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert whole.recv(1024).startswith(b"HTTP/1.1 200 ")
