"""InitProducerId (key 22), versions 0-5: producer ids for idempotent (non-transactional)
producers. Transactions are not supported."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import make

from ..context import RequestContext
from ..registry import api

log = logging.getLogger("kafkette.producer")


@api(22, 0, 5)
async def handle_init_producer_id(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    if req.transactional_id is not None:
        log.warning("client %s asked for transactional id %r: transactions are not supported",
                    ctx.client_id, req.transactional_id)
        return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.unsupported_version,
                    producer_id=-1, producer_epoch=-1)
    # As Kafka does for non-transactional producers: a fresh id, epoch 0, whatever was sent.
    pid = await ctx.services.records.allocate_producer_id()
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, producer_id=pid,
                producer_epoch=0)
