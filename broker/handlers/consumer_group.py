"""ConsumerGroupHeartbeat (key 68) and ConsumerGroupDescribe (key 69), v0-1: the KIP-848
consumer protocol is advertised but disabled, answered exactly as Kafka 4.0 answers with
``consumer`` missing from ``group.coordinator.rebalance.protocols``: UNSUPPORTED_VERSION in
``getErrorResponse`` form. Advertising it turns librdkafka's silent hang on
``group.protocol=consumer`` (it loops when key 68 is missing) into an immediate error.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..registry import api

ZERO = timedelta(0)
DISABLED = ErrorCode.unsupported_version


@api(68, 0, 1)
def handle_consumer_group_heartbeat(ctx: RequestContext, req: Any):
    return make(ctx.response_type, throttle_time=ZERO, error_code=DISABLED, error_message=None,
                member_id=None, member_epoch=0, heartbeat_interval=ZERO, assignment=None)


@api(69, 0, 1)
def handle_consumer_group_describe(ctx: RequestContext, req: Any):
    group_cls = item_type(ctx.response_type, "groups")
    groups = tuple(
        make(group_cls, error_code=DISABLED, error_message=None, group_id=group_id,
             group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=())
        for group_id in req.group_ids)
    return make(ctx.response_type, throttle_time=ZERO, groups=groups)
