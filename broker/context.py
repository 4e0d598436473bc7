"""What a handler knows about the request it serves, and the services it may call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkette.protocol.build import field_names
from kafkette.protocol.codec import response_type

if TYPE_CHECKING:
    from .config import BrokerConfig
    from .services import Services
    from .services.cluster import ClusterInfo


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
    # Mutes the connection the request came on for that many ms (a quota's throttle: Kafka
    # stops reading the client's requests); None where there is no connection.
    mute: Callable[[int], None] | None = None

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
