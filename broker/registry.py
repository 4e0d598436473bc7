"""API routing table: which API keys and versions the broker serves, and by which handler.

A handler module registers itself with ``@api(key, min_version, max_version)``; registering a key
twice is an error at import. A handler takes ``(ctx, request)`` — ``request`` is the kio request
dataclass of ``ctx.api_version`` — and returns the kio response dataclass of the same version, or
one of the other answers listed in ``responses``, or a Future/awaitable of one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import RequestContext

Handler = Callable[["RequestContext", Any], Any | Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiRoute:
    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    # Versions advertised but refused on the wire (Produce v0-2: KAFKA-18659 advertises min 0).
    min_accepted: int


ROUTES: dict[int, ApiRoute] = {}


class DuplicateRouteError(RuntimeError):
    """Two handlers registered for the same API key."""


def api(key: int, min_version: int, max_version: int, *, min_accepted: int | None = None):
    def register(fn: Handler) -> Handler:
        existing = ROUTES.get(key)
        if existing is not None:
            raise DuplicateRouteError(
                f"api key {key} is already handled by {existing.handler.__module__}."
                f"{existing.handler.__qualname__}; cannot register {fn.__module__}.{fn.__qualname__}")
        ROUTES[key] = ApiRoute(
            key, min_version, max_version, fn,
            min_version if min_accepted is None else min_accepted,
        )
        return fn

    return register
