"""What every admin request passes first: the Host header check and JSON errors.

The admin server is meant for the machine it runs on (or the network it was bound to). A web
page a developer opens elsewhere can make their browser send requests to it; with DNS rebinding
(a name of the attacker's that resolves to 127.0.0.1) those requests even count as same-origin.
They carry the attacker's name in ``Host``, so a request is served only when its Host names this
server: ``localhost``, a loopback address, the address it was bound to, or, bound to every
interface (0.0.0.0 or ::), any IP address or this machine's own name. An IP address in Host cannot
be rebound. Anything else is answered 403.

A state change (POST, PUT, PATCH, DELETE) is refused 403 when it comes from a web page of
another origin (its ``Origin`` header names another host and port than ``Host``), and one that
carries a body must say ``Content-Type: application/json``, which a page of another origin cannot
send without the browser asking first (415 otherwise). With ``admin.auth.token`` set, every
request needs ``Authorization: Bearer <token>`` or basic auth with the token as password (any
user name; a browser asks for it once and the console keeps working); 401 otherwise.

Errors of the JSON API (``/v1/...``) are JSON: ``{"error": "one line"}`` with the HTTP status.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

log = logging.getLogger("kafkette.admin")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
WILDCARDS = ("0.0.0.0", "::", "")


def host_name(header: str) -> str:
    """The name or address of a Host header, without its port and brackets, lower case."""
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8080
        return header[1:header.find("]")] if "]" in header else header
    if header.count(":") == 1:
        header = header.split(":", 1)[0]
    return header.rstrip(".")


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class HostCheck:
    def __init__(self, bound_host: str) -> None:
        self.bound = bound_host.strip("[]").lower()
        self.wildcard = self.bound in WILDCARDS
        self.names = {"localhost", self.bound}
        if self.wildcard:
            self.names |= {socket.gethostname().lower(), socket.getfqdn().lower()}

    def allows(self, header: str | None) -> bool:
        if header is None or not header.strip():  # HTTP/1.0 without Host: not a browser
            return True
        name = host_name(header)
        if name in self.names or name.endswith(".localhost"):
            return True
        ip = _ip(name)
        if ip is None:
            return False
        return ip.is_loopback or self.wildcard or ip == _ip(self.bound)


def json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


STATE_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def cross_origin(request: web.Request) -> str | None:
    """The ``Origin`` of a request from a page of another origin than this server, else None."""
    origin = request.headers.get("Origin")
    if origin is None:  # not from a web page (curl, the CLI), or a same-origin GET
        return None
    parts = urlsplit(origin)
    default = 443 if parts.scheme == "https" else 80
    try:
        origin_port = parts.port or default
    except ValueError:
        return origin
    host = request.headers.get("Host", "")
    own = urlsplit("//" + host)
    try:
        own_port = own.port or default
    except ValueError:
        return origin
    if (parts.hostname or "", origin_port) == (own.hostname or "", own_port):
        return None
    return origin


def authorized(request: web.Request, token: str) -> bool:
    """``Authorization: Bearer <token>``, or Basic with the token as password."""
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() == "bearer":
        given = credentials.strip()
    elif scheme.lower() == "basic":
        try:
            given = base64.b64decode(credentials.strip(), validate=True).decode().partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return False
    else:
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def guard(check: HostCheck, token: str = "") -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if not check.allows(host):
            log.warning("admin request refused: Host %r is not this server (DNS rebinding?)",
                        host)
            return json_error(403, f"Host {host!r} is not allowed: use localhost, 127.0.0.1, "
                                   "[::1] or the address the admin server is bound to")
        if token and not authorized(request, token):
            response = json_error(401, "this admin server needs admin.auth.token: send "
                                       "'Authorization: Bearer <token>' (or basic auth with it "
                                       "as the password)")
            response.headers["WWW-Authenticate"] = 'Basic realm="kafkette admin"'
            return response
        if request.method in STATE_CHANGES:
            origin = cross_origin(request)
            if origin is not None:
                log.warning("admin %s %s refused: from a page of another origin (%s)",
                            request.method, request.path, origin)
                return json_error(403, f"cross-origin {request.method} refused (Origin "
                                       f"{origin!r} is not this server)")
            if request.can_read_body and request.content_type != "application/json":
                return json_error(415, f"{request.method} {request.path} takes "
                                       "'Content-Type: application/json'")
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400 or not request.path.startswith("/v1/"):
                raise
            text = exc.text or exc.reason
            if text.startswith(f"{exc.status}: "):  # aiohttp's default body ("404: Not Found")
                text = text[len(f"{exc.status}: "):]
            return json_error(exc.status, text)

    return middleware
