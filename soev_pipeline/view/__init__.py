"""Looking at runs (docs/view.md): the viewer's web application and the HTML report.

Its names load on first use: a run writes its HTML report (`html_report`) without
importing the web application (`app`, Starlette and its pages), and `soev-evals run`
imports even that on its start-up thread, while the first requests are in flight.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app, warm_up
    from .html_report import (
        HTML_REPORT,
        render_html_report,
        write_html_report,
        write_scoring_pages,
    )
    from .store import RunStore

__all__ = [
    "HTML_REPORT",
    "RunStore",
    "create_app",
    "render_html_report",
    "warm_up",
    "write_html_report",
    "write_scoring_pages",
]

_HOMES = {
    "create_app": "app",
    "warm_up": "app",
    "HTML_REPORT": "html_report",
    "render_html_report": "html_report",
    "write_html_report": "html_report",
    "write_scoring_pages": "html_report",
    "RunStore": "store",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'soev_pipeline.view' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
