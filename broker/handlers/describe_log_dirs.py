"""DescribeLogDirs (key 35), versions 1-4: the log directory, the size of each partition this
node holds in it, and the volume's total and usable bytes (v4).

As Kafka's ReplicaManager.describeLogDirs: all partitions the node holds when the topics are
null, else the ones asked that it holds (unknown ones are left out); topics without a listed
partition are left out; the offset lag is 0 (every replica is the log itself). A directory that
cannot be read answers KAFKA_STORAGE_ERROR. With several nodes, each node lists the partitions
it is a replica of.
"""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make

from ..context import RequestContext
from ..routes import api
from ..security.acl import CLUSTER_NAME, AclOperation, ResourceType

log = logging.getLogger("kafkette.admin")


@api(35, 1, 4)
def handle_describe_log_dirs(ctx: RequestContext, req: Any) -> Any:
    cls = ctx.response_type
    result_cls = item_type(cls, "results")
    topic_cls = item_type(result_cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        # Kafka: no directory listed (the code exists from v3 on)
        return make(cls, throttle_time=timedelta(0),
                    error_code=ErrorCode.cluster_authorization_failed, results=())
    records = ctx.services.records
    cluster = ctx.cluster
    if req.topics is None:
        wanted = [(t.name, p) for t in ctx.services.topics.all() for p in range(t.partitions)]
    else:
        wanted = sorted({(t.topic, int(p)) for t in req.topics for p in t.partitions})
    by_topic: dict[str, list[Any]] = {}
    for topic, p in wanted:
        size = records.partition_size(topic, p)
        if size is None or not cluster.hosts(topic, p):
            continue
        by_topic.setdefault(topic, []).append(make(
            part_cls, partition_index=p, partition_size=size, offset_lag=0, is_future_key=False))
    log_dir = records.log_dir
    try:
        usage = shutil.disk_usage(log_dir)
    except OSError as exc:
        log.warning("DescribeLogDirs: log directory %s: %s", log_dir, exc)
        result = make(result_cls, error_code=ErrorCode.kafka_storage_error, log_dir=log_dir,
                      topics=(), total_bytes=-1, usable_bytes=-1)
    else:
        result = make(result_cls, error_code=ErrorCode.none, log_dir=log_dir,
                      topics=tuple(make(topic_cls, name=name, partitions=tuple(parts))
                                   for name, parts in sorted(by_topic.items())),
                      total_bytes=usage.total, usable_bytes=usage.free)
    return make(cls, throttle_time=timedelta(0), error_code=ErrorCode.none, results=(result,))
