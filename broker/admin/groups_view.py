"""The one place the admin server reads the group coordinator.

Everything the console and the metrics know about groups comes through these functions, which
use the coordinator's public surface (``group_overviews``/``group_overview``: every group type
alike, see coordinator/group/overview.py; ``active_shards``, ``shard_for``, a shard's
``fetch_offsets`` and ``events``). When the
coordinator changes, only this module follows it. All of them run on the broker's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkette.coordinator.group.events import GroupEvent, GroupEventLog
from kafkette.coordinator.group.overview import GroupOverview
from kafkette.coordinator.runtime.error_codes import CoordinatorError
from kafkette.coordinator.runtime.serving import SERVING_NODE


@dataclass(frozen=True, slots=True)
class GroupSummary:
    group_id: str
    state: str
    protocol_type: str
    protocol: str | None
    generation: int
    leader: str | None
    members: int
    group_type: str  # "classic", "consumer" (KIP-848), "share"


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


def _summary(group: GroupOverview) -> GroupSummary:
    return GroupSummary(group.group_id, group.state, group.protocol_type, group.protocol,
                        group.epoch, group.leader, len(group.members), group.group_type)


def list_groups(broker: Any) -> list[GroupSummary]:
    """Every group this node coordinates, of every type, sorted by id."""
    coordinator = broker.coordinator
    if coordinator is None:
        return []
    if broker.cluster_nodes is None:
        overviews = coordinator.group_overviews()
    else:  # several nodes share the coordinator: every node's groups
        overviews = [g for node in broker.node_ids
                     for g in _as_node(node, coordinator.group_overviews)]
    return sorted((_summary(g) for g in overviews), key=lambda g: g.group_id)


def describe_group(broker: Any, group_id: str) -> tuple[GroupSummary, list[MemberView]] | None:
    """The group and its members with their assignments; None if there is no such group."""
    coordinator = broker.coordinator
    if coordinator is None:
        return None
    if broker.cluster_nodes is None:
        found = coordinator.group_overview(group_id)
    else:
        try:
            node = coordinator.coordinator_node(group_id)
        except CoordinatorError:
            return None
        found = _as_node(node, lambda: coordinator.group_overview(group_id))
    if found is None:
        return None
    members = [MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                          list(m.assignment)) for m in found.members]
    return _summary(found), members


def committed_offsets(broker: Any, group_id: str) -> list[tuple[str, int, int]]:
    """(topic, partition, committed offset) of every offset the group has committed."""
    shard = _shard_of(broker, group_id)
    if shard is None:
        return []
    try:
        fetched = shard.fetch_offsets(group_id, None)
    except CoordinatorError:  # a share group: it commits no offsets (see shares_view)
        return []
    return [(topic, partition, offset)
            for topic, rows in fetched
            for partition, offset, _epoch, _metadata, error in rows if error == 0]


def group_events(broker: Any, group_id: str, after_seq: int = 0) -> list[GroupEvent]:
    """The coordinator's latest events of a group (joins, leaves, expiries, rebalances)."""
    shard = _shard_of(broker, group_id)
    return shard.events.recent(group_id, after_seq) if shard is not None else []


def event_logs(broker: Any) -> list[GroupEventLog]:
    """The event logs of every shard: rebalance and commit counts, load times."""
    return [shard.events for shard in _shards(broker)]
