"""`python -m soev_pipeline.reference`: prints its URL when ready, stops on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys

import httpx
import pytest

from soev_pipeline.reference import main
from tests.reference.wire import SSE, THREADS, body, parse_frames


@pytest.mark.e2e
def test_the_command_prints_the_url_when_ready_and_stops_on_interrupt() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "soev_pipeline.reference", "--port", "0", "--latency-ms", "10"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/")
        response = httpx.post(url + THREADS, json=body("Wat is overmacht?"), headers=SSE)
        assert response.status_code == 201
        assert parse_frames(response.text)[-1].data["state"] == "idle"
    finally:
        process.send_signal(signal.SIGINT)
        _, errors = process.communicate(timeout=60)  # a hang guard, not a deadline

    assert process.returncode == 0
    assert errors == ""


@pytest.mark.parametrize(
    "argv",
    [["--failure-rate", "1.5"], ["--latency-ms", "-1"], ["--token-env", "SOEV_NOT_SET_ANYWHERE"]],
)
def test_bad_arguments_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)

    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err
