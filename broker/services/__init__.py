"""The service layer between request handlers and storage/coordinator.

Handlers decode a request, call one service method per topic/partition/group, and encode the
answer; services hold the rules and raise :class:`ServiceError` with Kafka's error code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import BrokerConfig
from .broker_configs import BrokerConfigService
from .client_quotas import ClientQuotas
from .client_telemetry import ClientTelemetry
from .cluster import ClusterInfo
from .errors import ServiceError
from .group_configs import GroupConfigService
from .groups import GroupService
from .record_service import RecordService
from .scram_credentials import ScramCredentialService
from .share_state import ShareStateService
from .shares import ShareService
from .topic_service import TopicService

if TYPE_CHECKING:
    from ..security.acl_store import AclStore


@dataclass(frozen=True, slots=True)
class Services:
    config: BrokerConfig
    cluster: ClusterInfo
    topics: TopicService
    records: RecordService
    groups: GroupService
    broker_configs: BrokerConfigService
    group_configs: GroupConfigService
    # the share-state coordinator on __share_group_state: the broker's share Persister
    share_state: ShareStateService
    shares: ShareService
    quotas: ClientQuotas
    telemetry: ClientTelemetry
    # The ACLs and their authorizer; None without ``authorizer.class.name`` (all allowed).
    acls: AclStore | None = None
    # SCRAM users (DescribeUserScramCredentials / AlterUserScramCredentials, SASL/SCRAM logins)
    scram_credentials: ScramCredentialService | None = None

    def __post_init__(self) -> None:
        self.topics.on_change.append(self.groups.on_topics_changed)


__all__ = ["BrokerConfigService", "ClientQuotas", "ClientTelemetry", "ClusterInfo",
           "GroupConfigService", "GroupService", "RecordService", "ScramCredentialService",
           "ServiceError", "Services", "ShareService", "ShareStateService", "TopicService"]
