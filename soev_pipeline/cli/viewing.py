"""`soev-evals view` and `report RUN --html FILE` (docs/view.md).

The parser part is imported with the command line, so it imports nothing heavy; the
viewer, uvicorn and the project are imported when the command runs."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .errors import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from soev_pipeline.core.outputs import Owned
    from soev_pipeline.project import ProjectPaths
    from soev_pipeline.run.archive import RunArchive

TOKEN_ENV = "SOEV_VIEW_TOKEN"
LANGUAGES = ("en", "nl")
"""The choices of `--lang`: the languages of `soev_pipeline.view.i18n` (a test keeps them
equal), written out so that parsing the command line imports no more than it needs."""


def add_lang(parser: argparse.ArgumentParser) -> None:
    """`--lang`, the language of the pages, over the project's `language`."""
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        help="the language of the pages (default: the project's language, else en)",
    )


def add_view_parser(
    commands: argparse._SubParsersAction[Any],
    add_project: Callable[[argparse.ArgumentParser], None],
    add_runs_dir: Callable[[argparse.ArgumentParser], None],
) -> None:
    """The `view` subcommand and its arguments; `--project` and `--runs-dir` come from
    `main`, as every command's do."""
    view = commands.add_parser(
        "view",
        help="look at the runs in a browser: cases, replies, verdicts, comparisons, labels",
        description="Serve a local web application over the project's runs; prints its URL "
        "and runs until Ctrl-C.",
    )
    view.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    view.add_argument("--port", type=port, default=0, help="the port (default: a free one)")
    view.add_argument(
        "--token",
        metavar="T",
        help=f"require this token on every request (default: ${TOKEN_ENV}); "
        "needed for a host other than loopback",
    )
    add_lang(view)
    add_project(view)
    add_runs_dir(view)


def port(text: str) -> int:
    """An argparse type for a TCP port: 0 (any free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must lie in 0 to 65535, not {value}")
    return value


def _listening(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def _url(host: str, port: int, token: str | None) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={quote(token, safe='')}" if token else "")


def cmd_view(args: argparse.Namespace) -> int:
    """Load the project, listen, print the URL, and serve until Ctrl-C."""
    from soev_pipeline.project import load
    from soev_pipeline.view import create_app, warm_up
    from soev_pipeline.view.security import MIN_TOKEN_LENGTH, is_loopback, weak_token

    from .commands import _paths

    token = args.token or os.environ.get(TOKEN_ENV) or None
    if token is None and not is_loopback(args.host):
        print(
            f"soev-evals: error: --host {args.host} is not a loopback address: anyone who "
            f"reaches it could read the runs; give --token T or set ${TOKEN_ENV}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    weak = None if token is None or is_loopback(args.host) else weak_token(token)
    if weak is not None:
        print(
            f"soev-evals: error: --host {args.host} is not a loopback address, and the token is "
            f"too weak to guard it: {weak}; give one of at least {MIN_TOKEN_LENGTH} printable "
            "characters of two classes or more (openssl rand -hex 16)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    paths = _paths(args)
    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    app = create_app(loaded, paths.runs, token=token, host=args.host, language=args.lang)

    from soev_pipeline.view.server import make_server

    threading.Thread(target=warm_up, args=(app,), name="soev-view-warm-up", daemon=True).start()
    sock = _listening(args.host, args.port)
    port = int(sock.getsockname()[1])
    print(f"soev-evals view of {loaded.project.name!r}: {_url(args.host, port, token)}", flush=True)
    print("press Ctrl-C to stop", file=sys.stderr, flush=True)
    make_server(app).run(sockets=[sock])
    return EXIT_OK


def write_html(
    args: argparse.Namespace, paths: ProjectPaths, archive: RunArchive, owned: list[Owned]
) -> None:
    """`report RUN --html FILE`: write the run's HTML report (its case pages need the
    project's definitions and corpus, which `report` alone does not load), never onto one
    of the project's `owned` paths."""
    from soev_pipeline.project import load
    from soev_pipeline.view import write_html_report

    loaded = load(paths.project_file, suite_cache=paths.suite_cache)
    write_html_report(loaded, archive, args.html, owned=owned, language=args.lang)
