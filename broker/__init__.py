"""The kafkette broker: asyncio TCP server, request routing, config and CLI."""
