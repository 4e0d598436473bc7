"""Share group coordinator configs, Kafka 4.2 names and defaults (KIP-932), as plain data:
``broker.config_def.DEFAULTS`` merges them in, so this module imports nothing.
``share_config.ShareGroupConfig`` reads and validates them.
"""

DEFAULTS: dict[str, str] = {
    # the finalized level of the share.version feature (Kafka 4.2 finalizes 1 on new clusters):
    # 0 turns share groups off (the share APIs answer UNSUPPORTED_VERSION)
    "share.version": "1",
    "group.share.heartbeat.interval.ms": "5000",
    "group.share.min.heartbeat.interval.ms": "5000",
    "group.share.max.heartbeat.interval.ms": "15000",
    "group.share.session.timeout.ms": "45000",
    "group.share.min.session.timeout.ms": "45000",
    "group.share.max.session.timeout.ms": "60000",
    "group.share.max.size": "200",
    "group.share.assignors": "simple",
}
