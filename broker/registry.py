"""API routing table: which API keys and versions the broker serves, and by which handler.

A handler module registers itself with ``@api(key, min_version, max_version)``. A handler takes
``(ctx, request)`` — ``request`` is the kio request dataclass of ``ctx.api_version`` — and returns
the kio response dataclass of the same version, or an awaitable of it.
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


def api(key: int, min_version: int, max_version: int, *, min_accepted: int | None = None):
    def register(fn: Handler) -> Handler:
        ROUTES[key] = ApiRoute(
            key, min_version, max_version, fn,
            min_version if min_accepted is None else min_accepted,
        )
        return fn

    return register
