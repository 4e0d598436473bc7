"""The admin HTTP server: Prometheus ``/metrics``, a web console and its JSON API.

Off unless ``admin.listener`` (``kafkette serve --admin HOST:PORT``) is set; its libraries
(aiohttp, prometheus_client) are imported only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import AdminServer


async def start_admin(broker: Any) -> AdminServer | None:
    """Start the admin server of ``broker`` if its config names an ``admin.listener``."""
    address = broker.config.get("admin.listener", "").strip()
    if not address:
        return None
    from .server import AdminServer

    server = AdminServer(broker, address)
    await server.start()
    return server


async def stop_admin(server: AdminServer | None) -> None:
    """Stop ``server`` (None: nothing to do); returns None for ``broker.admin``."""
    if server is not None:
        await server.stop()
    return None
