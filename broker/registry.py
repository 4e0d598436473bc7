"""API routing: which API keys and versions the broker serves, and by which handler.

``ROUTES`` is built from the static table of ``routes.py``, so ApiVersions and the connection's
version check import no handler. A handler module is imported when its API is first requested:
until then a route's ``handler`` is a stub that imports the module (which registers its function
with ``routes.api``), puts the real handler in its place and calls it. A handler takes
``(ctx, request)`` — ``request`` is the kio request dataclass of ``ctx.api_version`` — and
returns the kio response dataclass of the same version, or one of the other answers listed in
``responses``, or a Future/awaitable of one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .api_versions import API_VERSIONS_KEY, unsupported_version_answer
from .routes import (
    IDENTICAL_REPEATS,
    PIPELINED,
    REGISTERED,
    TABLE,
    DuplicateRouteError,
    Handler,
    api,
)

__all__ = ["ROUTES", "ApiRoute", "DuplicateRouteError", "Handler", "api", "load_all"]


# (api codec, response) answering a request of a version the route does not serve
VersionRefusal = Callable[[], tuple[Any, Any]]


class ApiRoute:
    """One API key: its versions, its handler's module, its handler (a stub until loaded), and
    what the connection may do with its requests (see routes.py): ``pipelined``,
    ``identical_repeats``, and ``refuse_version``, the answer to a version it does not serve
    (None: the connection is closed)."""

    __slots__ = ("api_key", "min_version", "max_version", "min_accepted", "module", "handler",
                 "pipelined", "identical_repeats", "refuse_version", "_stub")

    def __init__(self, api_key: int, min_version: int, max_version: int, min_accepted: int,
                 module: str) -> None:
        self.api_key = api_key
        self.min_version = min_version
        self.max_version = max_version
        # Versions advertised but refused on the wire (Produce v0-2: KAFKA-18659 advertises 0).
        self.min_accepted = min_accepted
        self.module = module
        self.pipelined = api_key in PIPELINED
        self.identical_repeats = api_key in IDENTICAL_REPEATS
        self.refuse_version: VersionRefusal | None = (
            unsupported_version_answer if api_key == API_VERSIONS_KEY else None)

        def stub(ctx: Any, request: Any) -> Any:
            # Also what a caller that kept this stub calls after the load: one extra call.
            handler = self.handler
            return (self.load() if handler is stub else handler)(ctx, request)

        self._stub: Handler = stub
        self.handler: Handler = stub

    @property
    def loaded(self) -> bool:
        return self.handler is not self._stub

    def load(self) -> Handler:
        """The real handler, importing its module first if need be."""
        if self.handler is self._stub:
            importlib.import_module(self.module)
            if self.api_key not in REGISTERED:
                raise RuntimeError(f"{self.module} registers no handler for api key "
                                   f"{self.api_key}")
            # The module's other APIs are ready too (JoinGroup's load readies Heartbeat).
            for route in ROUTES.values():
                if route.module == self.module and route.api_key in REGISTERED:
                    route.handler = REGISTERED[route.api_key]
        return self.handler

    def __repr__(self) -> str:
        return f"ApiRoute({self.api_key}, v{self.min_version}-{self.max_version}, {self.module})"


ROUTES: dict[int, ApiRoute] = {key: ApiRoute(key, lo, hi, accepted, module)
                               for key, (lo, hi, accepted, module) in TABLE.items()}


def load_all() -> None:
    """Import every handler module (for tools and tests that want every real handler)."""
    for route in ROUTES.values():
        route.load()
