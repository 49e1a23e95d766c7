"""What stands between the viewer and a hostile network, page or reply.

- `SecurityHeaders`: every response carries a strict Content-Security-Policy (no script
  at all, styles and images from the server itself or `data:` plots; the labelling queue
  alone may run the viewer's own keys script, `QUEUE_CSP`), is neither framed
  nor sniffed, and sends its address as a referrer to itself only (so that a form's POST
  still carries the `Origin` that `save_label` checks).
- `TokenGate`: when the viewer has a token (it must, off loopback, and a strong one:
  `weak_token`), every request carries it: in `?token=` once (then a cookie, set on a
  redirect to the same path on the viewer, without the token), in the cookie, or as
  `Authorization: Bearer`. Any other request gets 401.
- Loopback without a token answers only to loopback host names (`TrustedHostMiddleware`),
  so a web page cannot reach it through DNS rebinding; label writes need the page's
  anti-forgery token besides (see `app.py`).
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import quote, urlencode

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .render import QUEUE_CSP, QUEUE_PATH, SERVER_CSP

TOKEN_COOKIE = "soev_view_token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")

HEADERS = {
    "content-security-policy": SERVER_CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address to listen on) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


MIN_TOKEN_LENGTH = 16
MIN_TOKEN_DISTINCT = 8
_CLASSES = (str.islower, str.isupper, str.isdigit, lambda char: not char.isalnum())


def weak_token(token: str) -> str | None:
    """Why `token` is too weak to guard a viewer that others can reach, or None.

    A strong token has at least `MIN_TOKEN_LENGTH` characters, all printable ASCII without
    spaces (so it survives a URL, a header and a shell), at least `MIN_TOKEN_DISTINCT`
    different ones, of at least two classes (lower case, upper case, digits, symbols):
    `openssl rand -hex 16` and `python -c "import secrets; print(secrets.token_urlsafe())"`
    give one.
    """
    if len(token) < MIN_TOKEN_LENGTH:
        return f"it has {len(token)} characters, fewer than {MIN_TOKEN_LENGTH}"
    if not all("!" <= char <= "~" for char in token):
        return "it holds a space, a control character or a character that is not ASCII"
    if len(set(token)) < MIN_TOKEN_DISTINCT:
        return f"it has fewer than {MIN_TOKEN_DISTINCT} different characters"
    if sum(any(kind(char) for char in token) for kind in _CLASSES) < 2:
        return "it uses one class of characters only (lower case, upper case, digits, symbols)"
    return None


def same(given: str | None, expected: str) -> bool:
    """Compare a secret in constant time."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class SecurityHeaders:
    """Adds `HEADERS` to every HTTP response (`QUEUE_CSP` on the queue's page)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
                if scope["path"] == QUEUE_PATH:
                    headers["content-security-policy"] = QUEUE_CSP
            await send(message)

        await self.app(scope, receive, with_headers)


class TokenGate:
    """Lets a request through only when it carries the viewer's token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        in_query = request.query_params.get("token")
        if same(in_query, self.token) and request.method in ("GET", "HEAD"):
            await self._remember(request)(scope, receive, send)
            return
        bearer = Headers(scope=scope).get("authorization", "")
        if (
            same(in_query, self.token)
            or same(request.cookies.get(TOKEN_COOKIE), self.token)
            or (bearer[:7].lower() == "bearer " and same(bearer[7:].strip(), self.token))
        ):
            await self.app(scope, receive, send)
            return
        await PlainTextResponse(
            "401: this viewer needs its token. Open the address that `soev-evals view` "
            "printed (it ends in ?token=...), or send `Authorization: Bearer TOKEN`.\n",
            status_code=401,
            headers={"www-authenticate": "Bearer"},
        )(scope, receive, send)

    def _remember(self, request: Request) -> Response:
        """A redirect to the same address without the token, setting the cookie."""
        rest = [(key, value) for key, value in request.query_params.multi_items() if key != "token"]
        # `//host/x` or `/\\host/x` would be read as another site's address: one slash
        path = "/" + quote(request.url.path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")
        location = path + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(location, status_code=303)
        response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/")
        return response
