"""The kafkette broker: asyncio TCP server, request routing, config and CLI."""

import kafkette.protocol  # noqa: F401  (must load before kio: see protocol/__init__.py)
