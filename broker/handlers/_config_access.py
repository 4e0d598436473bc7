"""Who may describe or alter the configs of a resource (Kafka's ConfigHelper / AuthHelper):
DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic, on the group, or on the cluster for a broker."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from ..context import RequestContext
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType

# config resource type (DescribeConfigs / AlterConfigs codes) -> (ACL resource, its refusal)
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
_REFUSALS: dict[int, tuple[ResourceType, ErrorCode, str]] = {
    TOPIC: (ResourceType.TOPIC, ErrorCode.topic_authorization_failed,
            "Topic authorization failed."),
    GROUP: (ResourceType.GROUP, ErrorCode.group_authorization_failed,
            "Group authorization failed."),
    BROKER: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed,
             "Cluster authorization failed."),
    BROKER_LOGGER: (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed,
                    "Cluster authorization failed."),
}


def config_refusal(ctx: RequestContext, operation: AclOperation, config_type: int,
                   name: str) -> tuple[ErrorCode, str] | None:
    """The error and message for a config resource this request may not access, or None."""
    refusal = _REFUSALS.get(config_type)
    if refusal is None or not ctx.authorizing:
        return None
    resource_type, code, message = refusal
    resource_name = CLUSTER_NAME if resource_type == ResourceType.CLUSTER else name
    return None if ctx.authorize(operation, resource_type, resource_name) else (code, message)
