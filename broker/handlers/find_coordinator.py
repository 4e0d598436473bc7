"""FindCoordinator (key 10), v0-6: the node leading the group's __consumer_offsets partition."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkette.coordinator import errors as E
from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..registry import api
from ._groups_common import ZERO

GROUP, TRANSACTION = 0, 1


def _lookup(ctx: RequestContext, key: str, key_type: int) -> tuple[int, int, str, int]:
    """(error, node_id, host, port)."""
    if key_type == TRANSACTION:
        return E.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    if key_type != GROUP:
        return E.INVALID_REQUEST, -1, "", -1
    coord = ctx.services.groups.coordinator
    if coord is None or not coord.started:
        return E.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    node = coord.coordinator_node(key)
    if node != ctx.cluster.node_id:
        # Only this node exists today; a partition without a live leader is unavailable.
        return E.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    host, port = ctx.cluster.advertised
    return E.NONE, node, host, port


@api(10, 0, 6)
def handle_find_coordinator(ctx: RequestContext, req):
    key_type = getattr(req, "key_type", GROUP)
    if ctx.api_version >= 4:
        entry_cls = item_type(ctx.response_type, "coordinators")
        entries = []
        for key in req.coordinator_keys:
            error, node, host, port = _lookup(ctx, key, key_type)
            entries.append(make(entry_cls, key=key, node_id=node, host=host, port=port,
                                error_code=ErrorCode(error), error_message=None))
        return ctx.respond(throttle_time=ZERO, coordinators=tuple(entries))
    error, node, host, port = _lookup(ctx, req.key, key_type)
    return ctx.respond(throttle_time=ZERO, error_code=ErrorCode(error), error_message=None,
                       node_id=node, host=host, port=port)
