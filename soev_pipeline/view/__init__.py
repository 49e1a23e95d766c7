"""Looking at runs (SPEC.md section 12): the viewer's web application and the HTML report."""

from .app import create_app
from .html_report import html_report, write_html_report
from .store import RunStore

__all__ = ["RunStore", "create_app", "html_report", "write_html_report"]
