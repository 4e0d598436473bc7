"""The development preset: ``kafkette serve --dev``, the pytest plugin's brokers and docker
compose. Kafka's own keys, set for a broker on a developer's machine or in CI, where a group
should settle in a fraction of a second rather than in Kafka's production seconds.

One table, ``DEV_PRESET``: key -> value, each with the reason. Plain ``kafkette serve`` keeps
Kafka's defaults (broker/config.py). Under ``--dev`` the preset comes first and any other source
(``--config``, ``KAFKETTE_CFG_*``, ``--override``) wins over it. Keys of a feature this broker
does not serve yet are listed too and left out by :func:`dev_settings` until the broker knows
them (share groups, KIP-932). Plain data: imported before the listeners are up (broker/boot.py).
"""

from __future__ import annotations

from collections.abc import Callable

DEV_PRESET: dict[str, str] = {
    # Classic groups: the first rebalance of a new group starts at once (Kafka's shipped
    # config/server.properties sets the same), and members may ask for short sessions.
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "100",
    # Consumer groups (KIP-848): a revoked partition reaches its next owner one heartbeat after
    # the revocation, so the heartbeat interval sets how fast a group settles (10 members:
    # ~0.15 s here, ~5 s at Kafka's 5000 ms). Kafka's lower bounds come down with it, so a
    # group config or a test may go lower still.
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "100",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    # Share groups (KIP-932): the same heartbeat and session, and records a consumer took but
    # did not acknowledge come back after 5 s instead of 30 s.
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.heartbeat.interval.ms": "100",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.session.timeout.ms": "6000",
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": "5000",
}


def dev_settings(is_known: Callable[[str], bool]) -> dict[str, str]:
    """The preset's entries whose key this broker knows (``is_known(key)``)."""
    return {key: value for key, value in DEV_PRESET.items() if is_known(key)}
