"""What a handler knows about the request it serves, and the services it may call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkette.protocol.build import field_names
from kafkette.protocol.codec import response_type

from .security.acl import AclOperation, ResourceType, all_operations

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

    # Authorization (broker/security/): with no authorizer configured everything is allowed,
    # at the cost of one attribute test.
    @property
    def authorizing(self) -> bool:
        """Whether an authorizer decides (``authorizer.class.name`` is set)."""
        return self.services.acls is not None

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether this request's principal, from its address, may do ``operation`` on the
        resource ``name`` of ``resource_type``."""
        acls = self.services.acls
        return acls is None or acls.authorizer.authorize(
            self.principal, self.client_host[1:], operation, resource_type, name)

    def denied(self, operation: AclOperation, resource_type: ResourceType,
               names: Iterable[str]) -> frozenset[str]:
        """Those of ``names`` this request may not do ``operation`` on (none without an
        authorizer; ``names`` is then not read)."""
        acls = self.services.acls
        if acls is None:
            return _NOTHING
        decide, principal, host = acls.authorizer.authorize, self.principal, self.client_host[1:]
        return frozenset(name for name in set(names)
                         if not decide(principal, host, operation, resource_type, name))

    def authorize_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether this request's principal may do ``operation`` on some resource of the type
        (Kafka's authorizeByResourceType)."""
        acls = self.services.acls
        return acls is None or acls.authorizer.authorize_by_resource_type(
            self.principal, self.client_host[1:], operation, resource_type)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The authorized-operations bit field of the resource for this request's principal:
        every operation the type supports without an authorizer, as Kafka reports."""
        acls = self.services.acls
        if acls is None:
            return all_operations(resource_type)
        return acls.authorizer.authorized_operations(self.principal, self.client_host[1:],
                                                     resource_type, name)

    def respond(self, **fields: Any) -> Any:
        """Build this version's response, dropping fields the version does not have."""
        cls = self.response_type
        names = field_names(cls)
        return cls(**{k: v for k, v in fields.items() if k in names})


_NOTHING: frozenset[str] = frozenset()
