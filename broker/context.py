"""What a handler knows about the request it serves, and the services it may call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkette.protocol.build import field_names
from kafkette.protocol.codec import response_type

if TYPE_CHECKING:
    from .config import BrokerConfig
    from .services import Services
    from .services.cluster import ClusterInfo


log = logging.getLogger("kafkette.connection")


class ConnectionClosing:
    """Callbacks a connection runs once, when it closes. Any handler may register one under a
    key of its own (a new registration under the same key replaces the old): a share session
    ends with the connection that opened it, for instance."""

    __slots__ = ("_callbacks",)

    def __init__(self) -> None:
        self._callbacks: dict[Hashable, Callable[[], object]] = {}

    def when_closed(self, key: Hashable, callback: Callable[[], object]) -> None:
        self._callbacks[key] = callback

    def forget(self, key: Hashable) -> None:
        self._callbacks.pop(key, None)

    def run(self) -> None:
        callbacks, self._callbacks = self._callbacks, {}
        for key, callback in callbacks.items():
            try:
                callback()
            except Exception:  # noqa: BLE001 - one failing callback must not skip the others
                log.exception("connection close callback %r failed", key)


@dataclass(slots=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str  # Java InetAddress.toString() form: "/127.0.0.1"
    services: Services
    # (request body, what the handler derived from it): the connection hands a hot API's
    # repeated request (byte-identical but for the correlation id) the same context and body
    # again (broker/request_memo.py), so a handler may keep its conversion here.
    derived: tuple[Any, Any] | None = None
    # Who sent it, as Kafka's KafkaPrincipal.toString(): "User:ANONYMOUS" on an unauthenticated
    # listener, "User:<name>" after SASL, the mapped certificate name with mutual TLS.
    principal: str = "User:ANONYMOUS"
    # The listener the request came in on (its name in `listeners`, e.g. "PLAINTEXT").
    listener: str = "PLAINTEXT"
    # What to run when the request's connection closes (None outside a connection).
    closing: ConnectionClosing | None = None

    @property
    def config(self) -> BrokerConfig:
        return self.services.config

    @property
    def cluster(self) -> ClusterInfo:
        return self.services.cluster

    @property
    def response_type(self) -> type:
        """The kio response dataclass for this request's API version."""
        return response_type(self.api_key, self.api_version)

    def respond(self, **fields: Any) -> Any:
        """Build this version's response, dropping fields the version does not have."""
        cls = self.response_type
        names = field_names(cls)
        return cls(**{k: v for k, v in fields.items() if k in names})
