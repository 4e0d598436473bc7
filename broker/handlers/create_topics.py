"""CreateTopics (key 19), versions 2-7."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import has_field, item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType
from ..services import ServiceError
from ._quota import mutation_quota, mutation_throttle

log = logging.getLogger("kafkette.admin")
ZERO_UUID = uuid.UUID(int=0)


@api(19, 2, 7)
async def handle_create_topics(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "topics")
    config_cls = item_type(result_cls, "configs") if has_field(result_cls, "configs") else None
    topics = ctx.services.topics
    counts = Counter(t.name for t in req.topics)
    # CREATE on the cluster covers every topic, else CREATE on each; the configs of the answer
    # need DESCRIBE_CONFIGS on the topic
    names = [t.name for t in req.topics]
    refused = frozenset() if ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER,
                                           CLUSTER_NAME) \
        else ctx.denied(AclOperation.CREATE, ResourceType.TOPIC, names)
    hidden_configs = ctx.denied(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names)
    try:  # the per-request partition limit counts the topics the principal may create
        topics.check_new_partition_total([(t.num_partitions, len(t.assignments))
                                          for t in req.topics if t.name not in refused])
    except ServiceError as rej:
        log.info("create topics %s rejected: %s", names[:10], rej.message)
        return make(cls, throttle_time=timedelta(0), topics=tuple(
            make(result_cls, name=t.name, topic_id=ZERO_UUID,
                 error_code=(ErrorCode.topic_authorization_failed if t.name in refused
                             else rej.code),
                 error_message=("Authorization failed." if t.name in refused else rej.message),
                 num_partitions=-1, replication_factor=-1, configs=None) for t in req.topics))
    quota = mutation_quota(ctx, strict_since=6)  # controller_mutation_rate (KIP-599)
    results = []
    for t in req.topics:
        fields: dict[str, Any] = dict(name=t.name, topic_id=ZERO_UUID, error_code=ErrorCode.none,
                                      error_message=None, num_partitions=-1, replication_factor=-1,
                                      configs=None)
        try:
            if counts[t.name] > 1:
                raise ServiceError(
                    ErrorCode.invalid_request,
                    f"Create topics request from client `{ctx.client_id}` contains multiple "
                    f"entries for the following topics: {t.name}")
            if t.name in refused:
                raise ServiceError(ErrorCode.topic_authorization_failed, "Authorization failed.")
            created = await topics.create(
                t.name, t.num_partitions, t.replication_factor,
                [a.broker_ids for a in t.assignments], {c.name: c.value for c in t.configs},
                validate_only=req.validate_only, quota=quota)
            fields.update(topic_id=created.topic_id, num_partitions=created.partitions,
                          replication_factor=created.replication_factor)
            if t.name in hidden_configs:
                fields["topic_config_error_code"] = ErrorCode.topic_authorization_failed
            elif config_cls is not None:
                fields["configs"] = tuple(
                    make(config_cls, name=e["name"], value=e["value"], read_only=False,
                         config_source=e["source"], is_sensitive=False)
                    for e in topics.new_topic_config_entries(created))
        except ServiceError as rej:
            fields.update(error_code=rej.code, error_message=rej.message)
            log.info("create topic %r rejected: %s", t.name, rej.message or rej.code.name)
        results.append(make(result_cls, **fields))
    return make(cls, throttle_time=mutation_throttle(ctx, quota), topics=tuple(results))
