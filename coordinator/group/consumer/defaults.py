"""Consumer group protocol configs, Kafka 4.0 names and defaults (KIP-848 §8), as plain data:
``broker.config_def.DEFAULTS`` merges them in before the broker's listeners are up (broker/boot.py),
so this module imports nothing. ``config.ConsumerGroupConfig`` reads and validates them.
"""

DEFAULTS: dict[str, str] = {
    "group.coordinator.rebalance.protocols": "classic,consumer",
    "group.consumer.heartbeat.interval.ms": "5000",
    "group.consumer.min.heartbeat.interval.ms": "5000",
    "group.consumer.max.heartbeat.interval.ms": "15000",
    "group.consumer.session.timeout.ms": "45000",
    "group.consumer.min.session.timeout.ms": "45000",
    "group.consumer.max.session.timeout.ms": "60000",
    "group.consumer.max.size": "2147483647",
    "group.consumer.assignors": ("org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
                                 "org.apache.kafka.coordinator.group.assignor.RangeAssignor"),
    "group.consumer.migration.policy": "bidirectional",
}
