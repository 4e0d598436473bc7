"""The raw Kafka client of the wire-level tests; it lives in broker/cli/wire_client.py."""

from kafkette.broker.cli.wire_client import WireClient, WireError, entity

__all__ = ["WireClient", "WireError", "entity"]
