"""InitProducerId (key 22), versions 0-5: a fresh producer id for idempotent producers; with a
transactional id, the transaction coordinator's id and (bumped) epoch."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.runtime.error_codes import COORDINATOR_NOT_AVAILABLE, fenced_for
from kafkette.protocol.build import make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ._groups_common import ms


@api(22, 0, 5)
async def handle_init_producer_id(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    refused = _refused(ctx, req) if ctx.authorizing else None
    if refused is not None:
        return make(cls, throttle_time=timedelta(0), error_code=refused, producer_id=-1,
                    producer_epoch=-1)
    if req.transactional_id is not None:
        coord = ctx.services.groups.transaction_coordinator()
        if coord is None:
            error, pid, epoch = COORDINATOR_NOT_AVAILABLE, -1, -1
        else:
            error, pid, epoch = await coord.init_producer_id(
                req.transactional_id, ms(req.transaction_timeout),
                getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1))
            error = fenced_for(error, ctx.api_version, 4)
        return make(cls, throttle_time=timedelta(0), error_code=ErrorCode(error),
                    producer_id=pid, producer_epoch=epoch)
    # As Kafka does for non-transactional producers: a fresh id, epoch 0, whatever was sent.
    pid = await ctx.services.records.allocate_producer_id()
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, producer_id=pid,
                producer_epoch=0)


def _refused(ctx: RequestContext, req: Any) -> ErrorCode | None:
    """Kafka 4's checks: a transactional producer needs WRITE on its transactional id; an
    idempotent one IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    if req.transactional_id is not None:
        if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                             req.transactional_id):
            return ErrorCode.transactional_id_authorization_failed
        return None
    if ctx.authorize(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) or \
            ctx.authorize_any(AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.cluster_authorization_failed
