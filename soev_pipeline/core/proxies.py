"""Proxies from the environment, for the transports that do not read them themselves.

Teams behind a corporate proxy set `HTTP_PROXY`, `HTTPS_PROXY` (or `ALL_PROXY`) and
`NO_PROXY`, upper or lower case. httpx reads them for a client that has its own transport,
the judge's; it turns them off for a client given a transport, so the system's client
(which sends through aiohttp, `core.transport`) and the reachability check read them here,
as the standard library (`urllib.request.getproxies_environment`) and curl read them:
`NO_PROXY` lists host names (each also covering its subdomains; a leading dot changes
nothing), addresses and `*`, each with an optional port. A proxy URL's credentials are
secrets of the command (`core.secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit
from urllib.request import getproxies_environment

from .secrets import register_url_secrets

PROXY_SCHEMES = ("http", "https")
"""The proxies a transport can speak to: aiohttp tunnels HTTPS through either."""


class ProxyConfigError(ValueError):
    """The environment names a proxy that cannot be used; the message says which, redacted."""


@dataclass(frozen=True)
class EnvironmentProxies:
    """The proxies of the environment, read once: by URL scheme, `all`, and `no`.

    Make it with `read()`; `for_url` picks the proxy of one request.
    """

    proxies: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls) -> EnvironmentProxies:
        """The proxies that the environment names now; their credentials become secrets.

        A proxy written without a scheme (`proxy.example:3128`) is an `http://` proxy.

        Raises:
            ProxyConfigError: a proxy is not an `http://` or `https://` URL (a SOCKS
                proxy, say), which the system's transport cannot speak to.
        """
        proxies: dict[str, str] = {}
        for scheme, value in getproxies_environment().items():
            if scheme == "no":
                proxies[scheme] = value
                continue
            url = value.strip()
            if not url:
                continue
            if "://" not in url:
                url = "http://" + url
            register_url_secrets(url)
            if urlsplit(url).scheme.lower() not in PROXY_SCHEMES:
                raise ProxyConfigError(
                    f"the environment's {scheme.upper()}_PROXY is a "
                    f"{urlsplit(url).scheme}:// proxy; only http:// and https:// proxies "
                    "can be used"
                )
            proxies[scheme] = url
        return cls(proxies)

    def for_url(self, url: str) -> str | None:
        """The proxy URL for a request to `url`, or None to connect directly.

        The proxy of the URL's scheme, else `ALL_PROXY`'s; none when `NO_PROXY` names the
        host (or the host and port).
        """
        parts = urlsplit(url)
        proxy = self.proxies.get(parts.scheme.lower()) or self.proxies.get("all")
        if proxy is None:
            return None
        host = parts.netloc.rpartition("@")[2].lower()
        return None if bypassed(host, self.proxies.get("no", "")) else proxy


def bypassed(host: str, no_proxy: str) -> bool:
    """Whether `NO_PROXY` (`no_proxy`) names `host` (`name` or `name:port`) or a domain of it."""
    if no_proxy.strip() == "*":
        return True
    name_only = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    for entry in no_proxy.split(","):
        entry = entry.strip().lstrip(".").lower()
        if entry and any(h == entry or h.endswith("." + entry) for h in (host, name_only)):
            return True
    return False
