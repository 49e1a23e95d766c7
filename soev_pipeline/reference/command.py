"""The command line of the reference assistant: `python -m soev_pipeline.reference`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from .server import serve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m soev_pipeline.reference",
        description="Serve the reference assistant over the soev thread API. "
        "Prints the base URL on one line once it listens.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (the default) picks a free port")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="time per turn")
    parser.add_argument(
        "--failure-rate", type=float, default=0.0, help="probability that a turn fails"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the failure draws")
    parser.add_argument("--corpus", default=None, help="a corpus lookup file (JSON Lines)")
    parser.add_argument(
        "--token-env",
        default=None,
        metavar="NAME",
        help="require the bearer token held by this environment variable",
    )
    parser.add_argument(
        "--envelopes",
        action="store_true",
        help="wrap durable events the way the real service does",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until interrupted and return 0; a usage error exits with status 2.

    The base URL goes to standard output on one line once the server listens, so a
    script that starts the server can wait for that line.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.latency_ms < 0:
        parser.error("--latency-ms must not be negative")
    if not 0.0 <= args.failure_rate <= 1.0:
        parser.error("--failure-rate must be between 0 and 1")
    token = None
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            parser.error(f"the environment variable {args.token_env} is not set")

    def ready(url: str) -> None:
        print(url, flush=True)

    serve(
        args.host,
        args.port,
        latency_s=args.latency_ms / 1000.0,
        failure_rate=args.failure_rate,
        seed=args.seed,
        corpus=args.corpus,
        token=token,
        envelopes=args.envelopes,
        ready=ready,
    )
    return 0
