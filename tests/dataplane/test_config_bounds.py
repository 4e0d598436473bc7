"""Topic and broker configs outside Kafka's bounds are refused with Kafka's wording.

Kafka 4.x's LogConfig: segment.bytes at least 1 MiB (KIP-1030), retention.ms at least -1, an INT
config within int32... CreateTopics and IncrementalAlterConfigs answer INVALID_CONFIG "Invalid
value V for configuration NAME: ..."; a dynamic broker config out of bounds is refused too, and
a static one stops the broker with a clear config error.
"""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.config import BrokerConfig
from kafkette.broker.config_def import ConfigError
from kafkette.protocol.codec import request_type
from tests.dataplane.test_wire import create_topic
from tests.wire import WireClient, entity

REFUSED = [
    ("segment.bytes", "14", "Value must be at least 1048576"),
    ("segment.bytes", "1048575", "Value must be at least 1048576"),
    ("segment.bytes", "99999999999", "Not a number of type INT"),
    ("retention.ms", "-5", "Value must be at least -1"),
    ("segment.ms", "0", "Value must be at least 1"),
    ("flush.messages", "0", "Value must be at least 1"),
    ("max.message.bytes", "-1", "Value must be at least 0"),
    ("min.insync.replicas", "0", "Value must be at least 1"),
    ("min.cleanable.dirty.ratio", "1.5", "Value must be no more than 1"),
    ("retention.bytes", "99999999999999999999", "Not a number of type LONG"),
]


def incremental(w: WireClient, name: str, rtype: int, **values: str):
    cls = request_type(44, 1)
    r_cls = type(entity(cls, "resources", resource_type=rtype, resource_name=name, configs=()))
    configs = tuple(entity(r_cls, "configs", name=k, config_operation=0, value=v)
                    for k, v in values.items())
    return w.request(44, 1, resources=(entity(cls, "resources", resource_type=rtype,
                                              resource_name=name, configs=configs),),
                     validate_only=False).responses[0]


@pytest.mark.parametrize(("name", "value", "complaint"), REFUSED)
def test_out_of_bounds_topic_configs_are_refused(kafka_broker_session, name, value, complaint):
    message = f"Invalid value {value} for configuration {name}: {complaint}"
    with WireClient(kafka_broker_session.bootstrap) as w:
        created = create_topic(w, f"bounds-{name}-{value}".replace("-", "m")[:200], 1,
                               {name: value})
        assert (created.error_code, created.error_message) == (ErrorCode.invalid_config, message)
        create_topic(w, "bounds-ok", 1)
        altered = incremental(w, "bounds-ok", 2, **{name: value})
        assert (altered.error_code, altered.error_message) == (ErrorCode.invalid_config, message)


def test_in_bounds_values_are_accepted(kafka_broker_session):
    with WireClient(kafka_broker_session.bootstrap) as w:
        ok = {"segment.bytes": "1048576", "retention.ms": "-1", "min.cleanable.dirty.ratio": "1"}
        assert create_topic(w, "bounds-edge", 1, ok).error_code == ErrorCode.none
        # Kafka's internal.segment.bytes still allows small segments (tests, tools).
        assert create_topic(w, "bounds-small", 1, {"internal.segment.bytes": "2000"}
                            ).error_code == ErrorCode.none


@pytest.mark.parametrize(("name", "value", "complaint"), [
    ("log.segment.bytes", "14", "Value must be at least 1048576"),
    ("log.retention.ms", "-5", "Value must be at least -1"),
    ("log.segment.bytes", "99999999999", "Not a number of type INT"),
    ("log.flush.interval.messages", "0", "Value must be at least 1"),
    ("log.preallocate", "maybe", "Expected value to be either true or false"),
])
def test_out_of_bounds_broker_configs_are_refused(kafka_broker_session, name, value, complaint):
    message = f"Invalid value {value} for configuration {name}: {complaint}"
    with WireClient(kafka_broker_session.bootstrap) as w:
        altered = incremental(w, "", 4, **{name: value})
        assert altered.error_code != ErrorCode.none and altered.error_message == message
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.from_sources(None, [f"{name}={value}"]).validate()
