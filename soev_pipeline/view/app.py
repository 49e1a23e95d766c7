"""The viewer's web application (`soev-evals view`, docs/view.md), on Starlette.

Pages are server-rendered; the endpoints that read files are plain functions, which
Starlette runs in its thread pool, so a large run being indexed never stalls the others.
The one write is a label: a POST carrying the page's anti-forgery token, checked against
the project's case (a test case is refused) and the run's archived reply, appended to the
project's label file.
"""

from __future__ import annotations

import contextlib
import functools
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlencode

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from soev_pipeline.calibration import (
    LabelLine,
    append_label,
    check_label,
    criterion_name,
    is_judged,
    label_target,
    why_not_labelled,
)
from soev_pipeline.core.errors import ProjectError
from soev_pipeline.core.http import register_config_secrets
from soev_pipeline.project import LoadedProject
from soev_pipeline.project.paths import RunsDir

from . import i18n
from .attempts import unlabelled_words
from .case_pages import case_page, compare_page, unit_page
from .pages import Filters, run_page, runs_page
from .probe_pages import item_page, probes_page
from .queue import queue_of, queue_page, skipped_ids
from .render import QUEUE_PATH, ServerLinks, queue_script, render, stylesheet
from .security import LOOPBACK_NAMES, SecurityHeaders, TokenGate, is_loopback, same, weak_token
from .store import NotFound, RunStore
from .translate import _

REVIEWER_COOKIE = "soev_view_by"
MAX_FORM_BYTES = 64 * 1024


MAX_FORM_FIELDS = 32
"""The label forms have at most eleven fields; a form with more is refused unread."""


class BadRequest(ValueError):
    """A request the viewer refuses, with the one line that says why."""


@dataclass
class Viewer:
    """What every request of one viewer shares."""

    store: RunStore
    csrf: str
    labels: Path
    language: i18n.Language = i18n.DEFAULT_LANGUAGE

    def page(self, template: str, code: int = 200, **context: object) -> HTMLResponse:
        html = render(template, links=ServerLinks(), project=self.store.project, **context)
        return HTMLResponse(html, status_code=code)

    def problem(self, code: int, heading: str, message: str) -> HTMLResponse:
        return self.page("error.html", code, status=code, heading=heading, message=message)

    @property
    def labels_shown(self) -> str:
        """The label file as a reviewer knows it: its path in the project folder."""
        directory = self.store.loaded.directory
        shown = (
            self.labels.relative_to(directory)
            if self.labels.is_relative_to(directory)
            else self.labels.name
        )
        return str(shown)


def _viewer(request: Request) -> Viewer:
    return _viewer_of(request.app)


Endpoint = Callable[[Request], Response]


FAILURES = (NotFound, BadRequest, ProjectError, OSError)


def _problem(viewer: Viewer, exc: Exception) -> HTMLResponse:
    """The page of a failure, with its one line: 404 for what is not there (or not shown),
    400 for a refused label, 500 for a file that does not read or write."""
    if isinstance(exc, NotFound):
        return viewer.problem(404, _("Not found"), str(exc))
    if isinstance(exc, BadRequest):
        return viewer.problem(400, _("Not saved"), str(exc))
    return viewer.problem(500, _("A file of the project does not read or write"), str(exc))


def _guarded(endpoint: Endpoint) -> Endpoint:
    """An endpoint whose failures (`FAILURES`) answer with their page, not a traceback."""

    @functools.wraps(endpoint)
    def guarded(request: Request) -> Response:
        with i18n.speaking(_viewer(request).language):
            try:
                return endpoint(request)
            except FAILURES as exc:
                return _problem(_viewer(request), exc)

    return guarded


def _int(request: Request, name: str) -> int:
    try:
        return int(request.query_params.get(name, "1"))
    except ValueError:
        return 1


def runs(request: Request) -> Response:
    viewer = _viewer(request)
    return viewer.page("runs.html", page=runs_page(viewer.store))


def run(request: Request) -> Response:
    viewer = _viewer(request)
    params = request.query_params
    filters = Filters(
        suite=params.get("suite", ""),
        status=params.get("status", ""),
        criterion=params.get("criterion", ""),
        query=params.get("q", ""),
        page=_int(request, "page"),
    )
    run_id = request.path_params["run_id"]
    response = viewer.page("run.html", page=run_page(viewer.store, run_id, filters))
    response.background = BackgroundTask(viewer.store.prefetch, run_id)
    return response


def _reviewer(request: Request) -> str:
    """The reviewer's name as the last label saved from this browser gave it."""
    return unquote(request.cookies.get(REVIEWER_COOKIE, ""))[:200]


def case(request: Request) -> Response:
    viewer = _viewer(request)
    built = case_page(viewer.store, request.path_params["run_id"], request.path_params["case_id"])
    return viewer.page(
        "case.html",
        case=built,
        csrf=viewer.csrf,
        reviewer=_reviewer(request),
        saved=request.query_params.get("saved", ""),
        labels_file=viewer.labels_shown,
    )


def label_queue(request: Request) -> Response:
    """The labelling queue: the next item for this reviewer, of `?run=` or the newest run."""
    viewer = _viewer(request)
    params = request.query_params
    built = queue_page(
        viewer.store,
        params.get("run") or None,
        _reviewer(request),
        skipped_ids(params.get("skip", "")),
    )
    saved, criterion = params.get("saved", ""), params.get("criterion", "")[:200]
    notice = None
    if viewer.store.dev_case(saved) is not None:  # an address names no other text to show
        notice = _("Saved: your label of %(item)s is in %(file)s.") % {
            "item": f"{saved} · {criterion}",
            "file": viewer.labels_shown,
        }
    return viewer.page("label.html", q=built, csrf=viewer.csrf, notice=notice)


def compare(request: Request) -> Response:
    viewer = _viewer(request)
    built = compare_page(
        viewer.store,
        request.path_params["run_id"],
        request.query_params.get("baseline", "previous"),
        _int(request, "page"),
    )
    return viewer.page("compare.html", cmp=built)


def unit(request: Request) -> Response:
    viewer = _viewer(request)
    params = request.query_params
    built = unit_page(
        viewer.store, request.path_params["unit_id"], params.get("run"), params.get("case")
    )
    return viewer.page("unit.html", page=built)


def probes(request: Request) -> Response:
    viewer = _viewer(request)
    return viewer.page("probes.html", page=probes_page(viewer.store))


def probe_item(request: Request) -> Response:
    viewer = _viewer(request)
    return viewer.page(
        "probe_item.html", item=item_page(viewer.store, request.path_params["item_id"])
    )


def glossary(request: Request) -> Response:
    return _viewer(request).page("glossary.html")


def css(request: Request) -> Response:
    return Response(stylesheet(), media_type="text/css")


def keys_script(request: Request) -> Response:
    return Response(queue_script(), media_type="text/javascript")


def no_icon(request: Request) -> Response:
    return Response(status_code=204)


async def _form(request: Request) -> dict[str, str]:
    if request.headers.get("content-type", "").split(";")[0] != "application/x-www-form-urlencoded":
        raise BadRequest(_("send the label form as application/x-www-form-urlencoded"))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise BadRequest(_("the form is larger than {n} bytes").format(n=MAX_FORM_BYTES))
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(_("the form is not UTF-8")) from None
    try:
        return dict(parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS))
    except ValueError:  # more fields than that: no form of ours
        raise BadRequest(_("the form has more than {n} fields").format(n=MAX_FORM_FIELDS)) from None


def _save_label(viewer: Viewer, run_id: str, form: dict[str, str]) -> str:
    """Append the label the form describes; return the page to go back to: the queue, for
    a form of the queue, else the case page at the verdict's label, where the page says
    it is saved.

    Raises:
        NotFound: no such run or dev case.
        BadRequest: the form does not describe a judged verdict of an attempt with a reply.
    """
    store = viewer.store
    archive, _manifest = store.archive(run_id)
    case_id = form.get("case_id", "")
    if store.dev_case(case_id) is None:
        raise NotFound(_("no such dev case in the project"))
    index = store.index(archive)
    if index is None:
        raise NotFound(_("this run has not been graded yet"))
    try:
        attempt, nth = int(form.get("attempt", "")), int(form.get("nth", ""))
    except ValueError:
        raise BadRequest(_("the form names no attempt and criterion")) from None
    kind = form.get("kind", "")
    graded = next((g for g in index.graded(case_id) if g.attempt == attempt), None)
    if graded is None:
        raise NotFound(_("no such attempt of this case"))
    same_kind = [verdict for verdict in graded.verdicts if verdict.kind == kind]
    if not 0 <= nth < len(same_kind):
        raise BadRequest(
            _("attempt %(attempt)s has no criterion %(kind)r #%(nth)s")
            % {"attempt": attempt, "kind": kind, "nth": nth}
        )
    evidence = index.evidence(case_id).get(attempt)
    reply = None if evidence is None else evidence.reply
    verdict = same_kind[nth]
    why = why_not_labelled(
        store.dev_case(case_id),
        kind,
        nth,
        verdict.status,
        judged=is_judged(verdict),
        has_reply=reply is not None,
    )
    if why is not None or reply is None:
        raise BadRequest(unlabelled_words(why or "no_reply"))
    if form.get("passed") not in ("true", "false"):
        raise BadRequest(_("say whether the criterion should pass or fail"))
    try:
        label = LabelLine.of(
            case_id=case_id,
            reply=reply,
            kind=kind,
            nth=nth,
            passed=form["passed"] == "true",
            label=form.get("label") or None,
            by=form.get("by", ""),
            note=form.get("note", "").strip() or None,
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "label"
        raise BadRequest(f"{field}: {first['msg']}") from None
    refused = check_label(label, store.cases, store.loaded.registry)
    if refused is not None:
        raise BadRequest(refused)
    shown = viewer.labels_shown
    try:
        append_label(
            viewer.labels, label, store.cases, store.loaded.registry, inside=store.loaded.directory
        )
    except ProjectError:
        raise BadRequest(
            _(
                "%(file)s takes no labels: a label is appended only to a regular file "
                "inside the project"
            )
            % {"file": shown}
        ) from None
    except OSError as exc:
        raise OSError(
            _("the label could not be written to %(file)s: %(why)s")
            % {"file": shown, "why": exc.strerror or "error"}
        ) from None
    if form.get("back") == "queue":
        params = {"run": run_id, "saved": case_id, "criterion": criterion_name(kind, nth)}
        skip = ",".join(skipped_ids(form.get("skip", "")))
        return "/label?" + urlencode(params | ({"skip": skip} if skip else {}))
    anchor = f"label-{attempt}-{kind}-{nth}"
    path = f"/runs/{quote(run_id, safe='')}/cases/{quote(case_id, safe='')}"
    return f"{path}?{urlencode({'saved': anchor})}#{quote(anchor, safe='')}"


async def save_label(request: Request) -> Response:
    """The label form's POST: from the viewer's own page (its `Origin`, when the browser
    sends one, and its anti-forgery token), then `_save_label`; back to the case page."""
    viewer = _viewer(request)
    with i18n.speaking(viewer.language):
        return await _save_label_answer(viewer, request)


async def _save_label_answer(viewer: Viewer, request: Request) -> Response:
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host')}"
    if origin is not None and origin != own:  # scheme and host: https://host is another origin
        return viewer.problem(
            403, _("Refused"), _("a label must be sent from the viewer's own page")
        )
    try:
        form = await _form(request)
        if not same(form.get("csrf"), viewer.csrf):
            return _again(viewer, request.path_params["run_id"], form)
        back = await run_in_threadpool(_save_label, viewer, request.path_params["run_id"], form)
    except FAILURES as exc:
        return _problem(viewer, exc)
    response = RedirectResponse(back, status_code=303)
    response.set_cookie(
        REVIEWER_COOKIE, quote(form.get("by", "").strip()[:200]), httponly=True, samesite="strict"
    )
    return response


LABEL_FIELDS = (
    "case_id",
    "attempt",
    "kind",
    "nth",
    "passed",
    "label",
    "by",
    "note",
    "back",
    "skip",
)
"""The fields of a label form that a stale form's page keeps as they were typed."""


def _again(viewer: Viewer, run_id: str, form: dict[str, str]) -> HTMLResponse:
    """A label form whose anti-forgery token is stale (the viewer restarted since the page
    was loaded), shown again as it was filled in, with a fresh token, to send once more;
    a form that is no label form is refused with one line."""
    if not form.get("case_id") or not form.get("kind"):
        return viewer.problem(
            403,
            _("Refused"),
            _("the form's anti-forgery token is missing or stale: reload the page"),
        )
    kept = {name: form.get(name, "")[:10_000] for name in LABEL_FIELDS}
    return viewer.page("label_again.html", 403, form=kept, run_id=run_id, csrf=viewer.csrf)


def create_app(
    loaded: LoadedProject,
    runs_dir: RunsDir,
    *,
    token: str | None = None,
    host: str = "127.0.0.1",
    labels: Path | None = None,
    language: i18n.Language | None = None,
) -> Starlette:
    """The viewer of `loaded`'s runs in `runs_dir`.

    With `token`, every request must carry it (see `security.TokenGate`); without one, the
    viewer answers only to loopback host names, and `host` must be a loopback address.
    `labels` is the label file to append to (default: the project's, `label_target`).
    `language` is the pages' language: this, else the project's `language`, else English.

    Raises:
        ValueError: `host` is not loopback and there is no token, or a weak one
            (`security.weak_token`).
    """
    if token is None and not is_loopback(host):
        raise ValueError(f"host {host!r} is not a loopback address: a token is required")
    weak = None if token is None or is_loopback(host) else weak_token(token)
    if weak is not None:
        raise ValueError(f"host {host!r} is not a loopback address: the token is weak ({weak})")
    for config in (loaded.project.system, loaded.project.judge):
        if config is not None:  # so that a key pasted into a label's note is redacted
            register_config_secrets(config)
    viewer = Viewer(
        store=RunStore(loaded, runs_dir),
        csrf=secrets.token_urlsafe(32),
        labels=labels or label_target(loaded.directory, loaded.project.labels),
        language=language or loaded.project.language or i18n.DEFAULT_LANGUAGE,
    )
    routes = [
        Route("/", _guarded(runs)),
        Route("/static/view.css", css),
        Route("/static/queue.js", keys_script),
        Route("/favicon.ico", no_icon),
        Route("/runs/{run_id}", _guarded(run)),
        Route("/runs/{run_id}/compare", _guarded(compare)),
        Route("/runs/{run_id}/cases/{case_id:path}", _guarded(case)),
        Route("/runs/{run_id}/labels", save_label, methods=["POST"]),
        Route(QUEUE_PATH, _guarded(label_queue)),
        Route("/corpus/{unit_id:path}", _guarded(unit)),
        Route("/probes", _guarded(probes)),
        Route("/probes/{item_id}", _guarded(probe_item)),
        Route("/glossary", _guarded(glossary)),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if token is not None:
        middleware.append(Middleware(TokenGate, token=token))
    else:
        allowed = sorted({*LOOPBACK_NAMES, host})
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed))
    app = Starlette(routes=routes, middleware=middleware)
    app.state.viewer = viewer
    return app


def warm_up(app: Starlette, runs: int = 2) -> None:
    """Do the slow work of the first requests before they come: load the plot library,
    draw the runs page's plots, and build the newest runs' pages (their index, their plot),
    their text to search, and the newest run's labelling queue. Meant for a thread of its
    own while the server starts; a request that needs what is being built waits for it,
    and nothing is built twice."""
    viewer = _viewer_of(app)
    store = viewer.store
    with (
        i18n.speaking(viewer.language),
        contextlib.suppress(NotFound, ProjectError, OSError, ValueError),
    ):
        summaries = runs_page(store).runs[:runs]
        for summary in summaries:
            run_page(store, summary.run_id, Filters())
        for summary in summaries:
            index = store.index(store.archive(summary.run_id)[0])
            if index is not None:
                index.make_searchable()
        if summaries:  # the labelling queue's run: its judged verdicts, arranged
            index = store.index(store.archive(summaries[0].run_id)[0])
            if index is not None:
                queue_of(store, index)


def _viewer_of(app: Starlette) -> Viewer:
    viewer: Viewer = app.state.viewer
    return viewer
