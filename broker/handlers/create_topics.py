"""CreateTopics (key 19), versions 2-7."""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import has_field, item_type, make
from kafkette.storage.log import KafkaStorageError
from kafkette.storage.topic_config import InvalidConfigError, validate_topic_configs
from kafkette.storage.topics import TopicExistsError

from ..context import RequestContext
from ..registry import api
from .describe_configs import topic_config_entries
from .metadata import valid_topic_name

log = logging.getLogger("kafkette.admin")
ZERO_UUID = uuid.UUID(int=0)


class _Reject(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _collides(logs: Any, name: str) -> str | None:
    norm = name.replace(".", "_")
    for t in logs.topics():
        if t.name != name and t.name.replace(".", "_") == norm:
            return t.name
    return None


def check_topic_request(ctx: RequestContext, name: str, partitions: int, rf: int,
                        assignments: Any, configs: dict[str, str | None]) -> tuple[int, int, dict[str, str]]:
    broker = ctx.broker
    node = broker.config.node_id
    if not valid_topic_name(name):
        raise _Reject(ErrorCode.invalid_topic_exception,
                      f"Topic name '{name}' is illegal, it contains a character other than "
                      "ASCII alphanumerics, '.', '_' and '-'" if name else "Topic name is illegal, it can't be empty")
    if broker.logs.topic(name) is not None:
        raise _Reject(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    other = _collides(broker.logs, name)
    if other is not None:
        raise _Reject(ErrorCode.invalid_topic_exception,
                      f"Topic '{name}' collides with existing topic: {other}")
    if assignments:
        if partitions != -1 or rf != -1:
            raise _Reject(ErrorCode.invalid_request,
                          "Both numPartitions or replicationFactor and replicasAssignments were set. "
                          "Both cannot be used at the same time.")
        for a in assignments:
            if tuple(a.broker_ids) != (node,):
                raise _Reject(ErrorCode.invalid_replica_assignment,
                              f"The manual partition assignment includes broker(s) other than {node}.")
        partitions, rf = len(assignments), 1
    if partitions == -1:
        partitions = broker.config.get_int("num.partitions")
    if partitions <= 0:
        raise _Reject(ErrorCode.invalid_partitions,
                      "Number of partitions was set to an invalid non-positive value.")
    if rf == -1:
        rf = broker.config.get_int("default.replication.factor")
    if rf <= 0:
        raise _Reject(ErrorCode.invalid_replication_factor,
                      "Replication factor must be larger than 0, or -1 to use the default value.")
    if rf > 1:
        raise _Reject(ErrorCode.invalid_replication_factor,
                      f"Unable to replicate the partition {rf} time(s): The target replication factor "
                      f"of {rf} cannot be reached because only 1 broker(s) are registered.")
    try:
        overrides = validate_topic_configs(configs)
    except InvalidConfigError as exc:
        raise _Reject(ErrorCode.invalid_config, str(exc)) from None
    return partitions, rf, overrides


@api(19, 2, 7)
async def handle_create_topics(ctx: RequestContext, req: Any):
    cls = ctx.response_type
    result_cls = item_type(cls, "topics")
    config_cls = item_type(result_cls, "configs") if has_field(result_cls, "configs") else None
    logs = ctx.broker.logs
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        fields: dict[str, Any] = dict(name=t.name, topic_id=ZERO_UUID, error_code=ErrorCode.none,
                                      error_message=None, num_partitions=-1, replication_factor=-1,
                                      configs=None)
        try:
            if counts[t.name] > 1:
                raise _Reject(ErrorCode.invalid_request,
                              f"Create topics request from client `{ctx.client_id}` contains multiple "
                              f"entries for the following topics: {t.name}")
            configs = {c.name: c.value for c in t.configs}
            partitions, rf, overrides = check_topic_request(
                ctx, t.name, t.num_partitions, t.replication_factor, t.assignments, configs)
            if not req.validate_only:
                try:
                    info = await logs.create_topic(t.name, partitions, overrides)
                except TopicExistsError:
                    raise _Reject(ErrorCode.topic_already_exists,
                                  f"Topic '{t.name}' already exists.") from None
                except KafkaStorageError as exc:
                    raise _Reject(ErrorCode.kafka_storage_error, str(exc)) from None
                fields["topic_id"] = info.topic_id
            fields.update(num_partitions=partitions, replication_factor=rf)
            if config_cls is not None:
                fields["configs"] = tuple(
                    make(config_cls, name=e["name"], value=e["value"], read_only=False,
                         config_source=e["source"], is_sensitive=False)
                    for e in topic_config_entries(overrides, ctx.broker.config))
        except _Reject as rej:
            fields.update(error_code=rej.code, error_message=rej.message)
            log.info("create topic %r rejected: %s", t.name, rej.message)
        results.append(make(result_cls, **fields))
    return make(cls, throttle_time=timedelta(0), topics=tuple(results))
