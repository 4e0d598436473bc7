"""The one place the admin server reads the group coordinator.

Everything the console and the metrics know about groups comes through these functions, which
use the coordinator's public-ish surface (``active_shards``, ``shard_for``, a shard's
``groups``, ``list_groups``, ``describe_group``, ``fetch_offsets`` and ``events``). When the
coordinator changes, only this module follows it. All of them run on the broker's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkette.coordinator.group.events import GroupEvent, GroupEventLog
from kafkette.coordinator.runtime.error_codes import CoordinatorError
from kafkette.coordinator.runtime.serving import SERVING_NODE
from kafkette.protocol.consumer_protocol import assignment_partitions_or_empty

CONSUMER_PROTOCOL = "consumer"


@dataclass(frozen=True, slots=True)
class GroupSummary:
    group_id: str
    state: str
    protocol_type: str
    protocol: str | None
    generation: int
    leader: str | None
    members: int


@dataclass(frozen=True, slots=True)
class MemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[tuple[str, int]]  # (topic, partition); [] unless the consumer protocol


def _shards(broker: Any) -> list[Any]:
    coordinator = broker.coordinator
    if coordinator is None:
        return []
    if broker.cluster_nodes is None:
        return coordinator.active_shards()
    # Several nodes share the coordinator: every node's shards.
    return [shard for node in broker.node_ids for shard in _as_node(node, coordinator.active_shards)]


def _shard_of(broker: Any, group_id: str) -> Any | None:
    coordinator = broker.coordinator
    if coordinator is None:
        return None
    try:
        if broker.cluster_nodes is None:
            return coordinator.shard_for(group_id)
        node = coordinator.coordinator_node(group_id)
        return _as_node(node, lambda: coordinator.shard_for(group_id))
    except CoordinatorError:
        return None


def _as_node(node_id: int, fn: Any) -> Any:
    """``fn()`` as a request to node ``node_id`` would run it."""
    token = SERVING_NODE.set(node_id)
    try:
        return fn()
    finally:
        SERVING_NODE.reset(token)


def _summary(shard: Any, group_id: str, protocol_type: str, state: str) -> GroupSummary:
    group = shard.groups.get(group_id)
    if group is None:  # a consumer (KIP-848) or share (KIP-932) group: its epoch, no leader
        modern = shard.consumer_groups.get(group_id) or shard.share_groups.get(group_id)
        return GroupSummary(group_id, state, protocol_type, None,
                            0 if modern is None else modern.group_epoch, None,
                            0 if modern is None else len(modern.members))
    return GroupSummary(group_id, state, protocol_type, group.protocol_name, group.generation,
                        group.leader_id, len(group.members))


def list_groups(broker: Any) -> list[GroupSummary]:
    """Every group this node coordinates, sorted by id."""
    out = [_summary(shard, group_id, protocol_type, state)
           for shard in _shards(broker)
           for group_id, protocol_type, state, _type in shard.list_groups(set(), set())]
    return sorted(out, key=lambda g: g.group_id)


def describe_group(broker: Any, group_id: str) -> tuple[GroupSummary, list[MemberView]] | None:
    """The group and its members with their assignments; None if there is no such group."""
    shard = _shard_of(broker, group_id)
    if shard is None:
        return None
    described = shard.describe_group(group_id, 5)
    if described.state == "Dead" or group_id not in shard.groups:
        return None
    consumer = described.protocol_type == CONSUMER_PROTOCOL
    members = [MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                          assignment_partitions_or_empty(m.assignment) if consumer else [])
               for m, _metadata in described.members]
    return _summary(shard, group_id, described.protocol_type, described.state), members


def committed_offsets(broker: Any, group_id: str) -> list[tuple[str, int, int]]:
    """(topic, partition, committed offset) of every offset the group has committed."""
    shard = _shard_of(broker, group_id)
    if shard is None:
        return []
    return [(topic, partition, offset)
            for topic, rows in shard.fetch_offsets(group_id, None)
            for partition, offset, _epoch, _metadata, error in rows if error == 0]


def group_events(broker: Any, group_id: str, after_seq: int = 0) -> list[GroupEvent]:
    """The coordinator's latest events of a group (joins, leaves, expiries, rebalances)."""
    shard = _shard_of(broker, group_id)
    return shard.events.recent(group_id, after_seq) if shard is not None else []


def event_logs(broker: Any) -> list[GroupEventLog]:
    """The event logs of every shard: rebalance and commit counts, load times."""
    return [shard.events for shard in _shards(broker)]
