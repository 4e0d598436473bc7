"""FindCoordinator (key 10), v0-6: the node leading the group's __consumer_offsets partition
(key type 0), the transactional id's __transaction_state partition (key type 1), or the
share-partition's __share_group_state partition (key type 2, key "group:topicId:partition")."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ._groups_common import ZERO, coordinator

GROUP, TRANSACTION, SHARE = 0, 1, 2
COORDINATOR_NOT_AVAILABLE = 15
INVALID_REQUEST = 42
SHARE_STATE_TOPIC = "__share_group_state"


def _find(ctx: RequestContext, key: str, key_type: int) -> tuple[int, int, str, int]:
    # DESCRIBE on the group or transactional id the coordinator is asked for; a share
    # coordinator (brokers' own inter-broker use) needs CLUSTER_ACTION on the cluster
    if key_type == SHARE:
        if not ctx.authorize(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME):
            return int(ErrorCode.cluster_authorization_failed), -1, "", -1
        return _find_share(ctx, key)
    if key_type == TRANSACTION:
        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return int(ErrorCode.transactional_id_authorization_failed), -1, "", -1
    elif not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
        return int(ErrorCode.group_authorization_failed), -1, "", -1
    if key_type != TRANSACTION:
        return coordinator(ctx).find_coordinator(key, key_type)
    txn = ctx.services.groups.transaction_coordinator()
    error = COORDINATOR_NOT_AVAILABLE if txn is None else txn.find_coordinator(key)
    if error:
        return error, -1, "", -1
    return 0, ctx.cluster.node_id, "", -1


def _valid_share_key(key: str) -> bool:
    """Kafka's SharePartitionKey.validate: "group:topicId:partition", a non-empty group, a
    22-character topic id and a non-negative partition number."""
    parts = key.rsplit(":", 2)
    return (len(parts) == 3 and bool(parts[0]) and len(parts[1]) == 22
            and parts[2].isdigit())


def _find_share(ctx: RequestContext, key: str) -> tuple[int, int, str, int]:
    """The leader of the key's __share_group_state partition; the first ask creates the topic
    (COORDINATOR_NOT_AVAILABLE meanwhile, which clients retry)."""
    if not _valid_share_key(key):
        return INVALID_REQUEST, -1, "", -1
    coord = ctx.services.share_state.coordinator_now()
    error = COORDINATOR_NOT_AVAILABLE if coord is None else coord.find_coordinator(key)
    if error:
        return error, -1, "", -1
    assert coord is not None
    node = ctx.cluster.leader(SHARE_STATE_TOPIC, coord.partition_of(key))
    if node < 0:
        return COORDINATOR_NOT_AVAILABLE, -1, "", -1
    return 0, node, "", -1


@api(10, 0, 6)
def handle_find_coordinator(ctx: RequestContext, req):
    key_type = getattr(req, "key_type", GROUP)
    if ctx.api_version >= 4:
        entry_cls = item_type(ctx.response_type, "coordinators")
        entries = []
        for key in req.coordinator_keys:
            error, node, host, port = _on_this_listener(ctx, _find(ctx, key, key_type))
            entries.append(make(entry_cls, key=key, node_id=node, host=host, port=port,
                                error_code=ErrorCode(error), error_message=None))
        return ctx.respond(throttle_time=ZERO, coordinators=tuple(entries))
    error, node, host, port = _on_this_listener(ctx, _find(ctx, req.key, key_type))
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error), error_message=None,
                       node_id=node, host=host, port=port)


def _on_this_listener(ctx: RequestContext, found: tuple[int, int, str, int]
                      ) -> tuple[int, int, str, int]:
    """The coordinator's address as advertised on the listener the request came in on (the
    coordinators only know node ids)."""
    error, node, host, port = found
    if error == 0:
        address = ctx.cluster.address_of(node)
        if address is None:  # its node is not running
            return int(ErrorCode.coordinator_not_available), -1, "", -1
        host, port = address
    return error, node, host, port
