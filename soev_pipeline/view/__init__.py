"""Looking at runs (docs/view.md): the viewer's web application and the HTML report."""

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
