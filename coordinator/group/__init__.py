"""The group coordinator (Kafka's group-coordinator module) over ``__consumer_offsets``.

``group_service`` (what the handlers call) routes a group to its partition's ``group_shard``,
which holds the groups of one partition and dispatches to their managers:

- ``classic/``: classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup);
- ``consumer/``: KIP-848 consumer groups (ConsumerGroupHeartbeat), loaded on first use;
- ``assignor/``: the server-side partition assignors;
- ``offsets/``: committed offsets, their compact store and bulk replay, transactional offsets.

Share groups (KIP-932: ShareGroupHeartbeat, share sessions) go in ``share/``, a third group
type beside ``classic/`` and ``consumer/`` in the same shard.
"""
