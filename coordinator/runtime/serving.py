"""The node a request came in on, when several nodes share one group coordinator (the broker's
cluster emulation sets it per request); None: the coordinator's own node_id.

Its own module so that the connection can set it without importing the coordinator."""

from __future__ import annotations

from contextvars import ContextVar

SERVING_NODE: ContextVar[int | None] = ContextVar("kafkette_serving_node", default=None)
