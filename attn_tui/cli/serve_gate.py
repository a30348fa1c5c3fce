"""Who may reach `attn-tui serve`: the address it listens on, pages of that origin, and the run's secret.

One aiohttp middleware in front of every route (page, websocket, static files, downloads).
A request whose Host is not serve's address is a DNS-rebinding page and is refused; one
whose Origin is another site's is a page driving the app (cross-site websocket hijacking)
and is refused; one without the run's secret, from the URL serve printed or the cookie that
URL set, gets nothing. The secret is compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from attn_tui.i18n import _

TOKEN = "token"  # the query parameter of the URL serve prints
POLICY = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
          "img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def _bracket(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host.strip("[]")).version == 6 else host
    except ValueError:
        return host


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


@dataclass(frozen=True)
class Gate:
    secret: str
    cookie: str  # the cookie's name: one per port, as cookies are shared by every port of a host
    hosts: frozenset[str] | None  # the Host headers that name serve (None: any, serve listens on every address)
    origins: frozenset[str]  # origins beyond http://<an allowed host> (the public URL's)

    def host_allowed(self, host: str) -> bool:
        return bool(host) and (self.hosts is None or host.lower() in self.hosts)

    def origin_allowed(self, origin: str, host: str) -> bool:
        """A page of serve's own origin: the Host it asked for, over http, or the public URL's origin."""
        return origin.lower() == f"http://{host.lower()}" or origin.lower() in self.origins

    def has_secret(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), self.secret.encode())

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        hosts, origins = request.headers.getall("Host", []), request.headers.getall("Origin", [])
        host = hosts[0] if len(hosts) == 1 else ""
        # request.host is what the page's own addresses are built from: an absolute-form request line
        # (`GET http://elsewhere/`) sets it apart from the Host header, so both must name serve
        if not (self.host_allowed(host) and request.host == host):
            return _refused(_("this address is not the one attn-tui serve listens on"))
        if len(origins) > 1 or (origins and not self.origin_allowed(origins[0], host)):
            return _refused(_("a page of another site may not open attn-tui"))
        from_url = self.has_secret(request.query.get(TOKEN))
        if not (from_url or self.has_secret(request.cookies.get(self.cookie))):
            return _refused(_("open the address attn-tui serve printed: it holds this run's token"))
        response = await handler(request)
        if not response.prepared:  # the page: the cookie lets its websocket and downloads in; nobody else's pages
            if from_url:
                response.set_cookie(self.cookie, self.secret, httponly=True, samesite="Strict", path="/")
            response.headers["Content-Security-Policy"] = POLICY
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["Cache-Control"] = "no-store"
        return response


def _refused(reason: str) -> web.Response:
    return web.Response(status=403, text=f"attn-tui: {reason}\n", headers={"X-Content-Type-Options": "nosniff"})


def gate_for(host: str, port: int, public_url: str | None, secret: str) -> Gate:
    """The gate for serve on host:port (and behind `public_url`, when a proxy is in front)."""
    names = {host.lower().strip("[]")}
    if host.lower() == "localhost" or _loopback(host):
        names |= {"localhost", "127.0.0.1", "::1"}
    hosts: set[str] | None = None if _wildcard(host) else set()
    if hosts is not None:
        for name in names:
            hosts.add(f"{_bracket(name)}:{port}")
            if port == 80:
                hosts.add(_bracket(name))
    origins: set[str] = set()
    if public_url:
        parts = urlsplit(public_url)
        if parts.netloc:
            origins.add(f"{parts.scheme}://{parts.netloc}".lower())
            if hosts is not None:
                hosts.add(parts.netloc.lower())
    return Gate(secret, f"attn-tui-{port}", None if hosts is None else frozenset(hosts), frozenset(origins))


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
