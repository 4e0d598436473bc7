"""DeleteTopics (key 20), versions 1-6."""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..services import ServiceError
from ._groups_common import coordinator
from ._quota import mutation_quota, mutation_throttle

ZERO_UUID = uuid.UUID(int=0)


@api(20, 1, 6)
async def handle_delete_topics(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "responses")
    if ctx.api_version >= 6:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    # DELETE on the cluster covers every topic, else DESCRIBE and DELETE on each (one named by
    # an id it may not DESCRIBE is answered without its name)
    everything = ctx.authorize(AclOperation.DELETE, ResourceType.CLUSTER, CLUSTER_NAME)
    quota = mutation_quota(ctx, strict_since=5)  # controller_mutation_rate (KIP-599)
    results = []
    for name, topic_id in wanted:
        try:
            if not everything:
                known = name if name is not None else _name_of(ctx, topic_id)
                if known is not None and not ctx.authorize(AclOperation.DESCRIBE,
                                                           ResourceType.TOPIC, known):
                    raise ServiceError(ErrorCode.topic_authorization_failed)
                if known is not None and not ctx.authorize(AclOperation.DELETE,
                                                           ResourceType.TOPIC, known):
                    name = known
                    raise ServiceError(ErrorCode.topic_authorization_failed)
            info = await ctx.services.topics.delete(name, topic_id, quota)
            await coordinator(ctx).on_partitions_deleted(
                [(info.name, p) for p in range(info.partitions)])
            name, topic_id, code, message = info.name, info.topic_id, ErrorCode.none, None
        except ServiceError as exc:
            code, message = exc.code, exc.message
        results.append(make(result_cls, name=name, topic_id=topic_id or ZERO_UUID,
                            error_code=code, error_message=message))
    return make(cls, throttle_time=mutation_throttle(ctx, quota), responses=tuple(results))


def _name_of(ctx: RequestContext, topic_id: uuid.UUID | None) -> str | None:
    info = ctx.services.topics.get_by_id(topic_id) if topic_id is not None else None
    return None if info is None else info.name
