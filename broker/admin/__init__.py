"""The admin HTTP server: Prometheus ``/metrics``, a web console and its JSON API.

Off unless ``admin.listener`` (``kafkette serve --admin HOST:PORT``) is set; its libraries
(aiohttp, prometheus_client) are imported only then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..boot import StartupError, listen_failure
from ..config_def import ConfigError

if TYPE_CHECKING:
    from .http_server import AdminServer


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` = every interface; ``http://`` allowed) of admin.listener."""
    address = value.strip().removeprefix("http://").rstrip("/")
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"admin.listener {value!r} must look like HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


def admin_address(config: Mapping[str, str]) -> tuple[str, int] | None:
    """Where the admin server listens, None when it is off; ConfigError if malformed."""
    value = config.get("admin.listener", "").strip()
    return parse_address(value) if value else None


async def start_admin(broker: Any) -> AdminServer | None:
    """Start the admin server of ``broker`` if its config names an ``admin.listener``."""
    address = admin_address(broker.config)
    if address is None:
        return None
    from .http_server import AdminServer

    server = AdminServer(broker, *address)
    try:
        await server.start()
    except OSError as exc:
        await server.stop()
        host, port = address
        raise StartupError(f"admin.listener: cannot listen on {host}:{port}: "
                           f"{listen_failure(exc)}") from exc
    return server


async def stop_admin(server: AdminServer | None) -> None:
    """Stop ``server`` (None: nothing to do)."""
    if server is not None:
        await server.stop()
