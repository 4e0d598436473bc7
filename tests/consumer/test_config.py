"""Consumer group configs: Kafka 4.0 names, defaults and validation."""

from __future__ import annotations

import pytest

from kafkette.coordinator.group.consumer.consumer_group_config import DEFAULTS, ConsumerGroupConfig


def config(**overrides):
    values = dict(DEFAULTS)
    values.update({k.replace("_", "."): v for k, v in overrides.items()})
    return ConsumerGroupConfig.from_config(values.__getitem__)


def test_defaults_are_kafkas():
    c = ConsumerGroupConfig.from_config({}.__getitem__)  # every key missing: defaults
    assert c.enabled and c.upgrade_enabled and c.downgrade_enabled
    assert (c.heartbeat_interval_ms, c.session_timeout_ms, c.max_size) == (5000, 45000, 2**31 - 1)
    assert [a.name for a in c.assignors] == ["uniform", "range"]
    settings = c.heartbeat_settings()
    assert settings.assignors[0].name == "uniform" and settings.heartbeat_interval_ms == 5000


def test_fast_test_settings_and_switches():
    c = config(**{"group.consumer.min.heartbeat.interval.ms": "100",
                  "group.consumer.heartbeat.interval.ms": "250",
                  "group.consumer.min.session.timeout.ms": "2000",
                  "group.consumer.session.timeout.ms": "3000",
                  "group.consumer.assignors": "range",
                  "group.consumer.migration.policy": "UPGRADE",
                  "group.coordinator.rebalance.protocols": "classic"})
    assert (c.heartbeat_interval_ms, c.session_timeout_ms) == (250, 3000)
    assert [a.name for a in c.assignors] == ["range"]
    assert c.upgrade_enabled and not c.downgrade_enabled and not c.enabled


@pytest.mark.parametrize("overrides,fragment", [
    ({"group.consumer.session.timeout.ms": "1000"}, "must lie between"),
    ({"group.consumer.heartbeat.interval.ms": "x"}, "must be an integer"),
    ({"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "5000",
      "group.consumer.heartbeat.interval.ms": "5000"}, "must be lower than"),
    ({"group.consumer.migration.policy": "sideways"}, "migration.policy"),
    ({"group.coordinator.rebalance.protocols": "consumer"}, "must contain classic"),
    ({"group.consumer.assignors": "sticky"}, "unknown consumer group assignor"),
    ({"group.consumer.max.size": "0"}, "at least 1"),
])
def test_invalid_values_are_refused_with_the_config_name(overrides, fragment):
    with pytest.raises(ValueError, match=fragment):
        config(**overrides)
