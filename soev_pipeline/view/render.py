"""The templates, and the two ways their links point: into the server, or into one file.

One Jinja2 environment renders every page, with autoescaping on for every template
(`select_autoescape`): a reply that holds markup is shown as text. Its strings go through
the catalogs of `i18n` (Jinja2's i18n extension), in the language of the page being made.
The server's pages link to each other by path (`ServerLinks`); the HTML report is one
file, so its links are anchors to the sections it holds, and a link to anything it does
not hold is left out (`FileLinks`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from soev_pipeline.core.chars import xml_safe

from . import i18n
from .attempts import status_counts
from .tables import interval, p_value, pct, plain, points, score

STYLESHEET = "view.css"


@functools.cache
def stylesheet() -> str:
    """The vendored stylesheet of the pages (package data: soev_pipeline/view/static)."""
    return (resources.files(__package__) / "static" / STYLESHEET).read_text(encoding="utf-8")


def csp_hash(text: str) -> str:
    """The CSP source of an inline `<style>` or `<script>` element's exact text."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


SERVER_CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""The server's pages: its own stylesheet, plots as `data:` images, forms to itself; no
script at all."""
QUEUE_PATH = "/label"
QUEUE_CSP = SERVER_CSP + "; script-src 'self'"
"""The labelling queue's page: the same, and the viewer's own script file of its keys
(`static/queue.js`); no inline script, nothing from elsewhere."""
QUEUE_SCRIPT = "queue.js"


@functools.cache
def queue_script() -> str:
    """The labelling queue's keys (package data: soev_pipeline/view/static)."""
    return (resources.files(__package__) / "static" / QUEUE_SCRIPT).read_text(encoding="utf-8")


def file_csp() -> str:
    """The HTML report's policy: its one inline stylesheet (by hash), `data:` images only."""
    return (
        f"default-src 'none'; style-src {csp_hash(stylesheet())}; img-src data:; "
        "form-action 'none'; base-uri 'none'"
    )


def anchor(kind: str, name: str) -> str:
    """A stable HTML id for a case or unit of the report (ids are free text, ids are not)."""
    return f"{kind}-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


class ServerLinks:
    """Links between the server's pages, by path; every id is quoted.

    Links made `within` a case of a run carry it to the corpus units they open (`?run=…&case=…`),
    so that a unit's page leads back to the case.
    """

    standalone = False

    def __init__(self, origin: tuple[str, str] | None = None) -> None:
        self.origin = origin

    def within(self, run_id: str, case_id: str) -> ServerLinks:
        return ServerLinks((run_id, case_id))

    def runs(self) -> str:
        return "/"

    def run(self, run_id: str, params: Mapping[str, str] | None = None) -> str:
        path = f"/runs/{quote(run_id, safe='')}"
        return path + (f"?{urlencode(params)}" if params else "")

    def case(self, run_id: str, case_id: str) -> str | None:
        return f"/runs/{quote(run_id, safe='')}/cases/{quote(case_id, safe='')}"

    def compare(self, run_id: str, baseline: str = "previous", page: int = 1) -> str | None:
        params = {"baseline": baseline} | ({"page": str(page)} if page > 1 else {})
        return f"/runs/{quote(run_id, safe='')}/compare?{urlencode(params)}"

    def unit(self, unit_id: str | None) -> str | None:
        if unit_id is None:
            return None
        origin = (
            f"?{urlencode({'run': self.origin[0], 'case': self.origin[1]})}" if self.origin else ""
        )
        return f"/corpus/{quote(unit_id, safe='')}{origin}"

    def labels(self, run_id: str) -> str | None:
        return f"/runs/{quote(run_id, safe='')}/labels"

    def probes(self) -> str | None:
        return "/probes"

    def queue(self, run_id: str | None = None, skip: str = "") -> str | None:
        params = {name: value for name, value in (("run", run_id), ("skip", skip)) if value}
        return "/label" + (f"?{urlencode(params)}" if params else "")

    def probe_item(self, item_id: str) -> str | None:
        return f"/probes/{quote(item_id, safe='')}"

    def glossary(self, term: str = "") -> str | None:
        return "/glossary" + (f"#term-{term}" if term else "")


@dataclass
class FileLinks:
    """Links inside one HTML file: to the cases and units it holds, else none."""

    cases: set[str] = field(default_factory=set)
    units: set[str] = field(default_factory=set)
    comparison: bool = False
    standalone = True

    def within(self, run_id: str, case_id: str) -> FileLinks:
        return self

    def runs(self) -> str | None:
        return None

    def run(self, run_id: str, params: Mapping[str, str] | None = None) -> str | None:
        return None if params else "#run"

    def case(self, run_id: str, case_id: str) -> str | None:
        return "#" + anchor("case", case_id) if case_id in self.cases else None

    def compare(self, run_id: str, baseline: str = "previous", page: int = 1) -> str | None:
        return "#comparison" if self.comparison and page == 1 else None

    def unit(self, unit_id: str | None) -> str | None:
        return "#" + anchor("unit", unit_id) if unit_id in self.units else None

    def labels(self, run_id: str) -> str | None:
        return None

    def probes(self) -> str | None:
        return None

    def queue(self, run_id: str | None = None, skip: str = "") -> str | None:
        return None

    def probe_item(self, item_id: str) -> str | None:
        return None

    def glossary(self, term: str = "") -> str | None:
        return f"#term-{term}" if term else "#glossary"


def _visible(value: Any) -> Any:
    """What a page shows of a value: a text's control characters (NUL, ESC, the C1
    controls, bidirectional overrides, a lone surrogate) as visible escapes (`\\x1b`), as
    the JUnit file writes them, so that a page is valid HTML whatever a reply held. Markup
    the pages made themselves passes as it is."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return xml_safe(value)
    return value


@functools.cache
def environment() -> Environment:
    """The one template environment; autoescaping on, undefined names an error."""
    env = Environment(
        loader=PackageLoader(__package__ or "soev_pipeline.view", "templates"),
        extensions=["jinja2.ext.i18n"],
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_visible,
    )
    env.filters.update(
        pct=pct,
        interval=interval,
        points=points,
        p_value=p_value,
        score=score,
        plain=plain,
        anchor=lambda name, kind: anchor(kind, name),  # `case_id | anchor('case')`
        status_counts=status_counts,
        term=i18n.term,
        decimal=i18n.decimal,
    )
    # newstyle: `_("… %(n)s", n=…)` escapes its values; every string is a format string,
    # so a literal per cent sign is written `%%`
    env.install_gettext_callables(i18n.gettext, i18n.ngettext, newstyle=True)  # type: ignore[attr-defined]
    env.globals["language"] = i18n.current
    env.globals["code"] = lambda text: Markup("<code>{}</code>").format(text)
    return env


def render(template: str, **context: Any) -> str:
    """Render a page template with `context`."""
    return environment().get_template(template).render(**context)
