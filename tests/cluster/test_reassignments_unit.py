"""Partition reassignments without a socket: Kafka's replica arithmetic (adding, removing,
completion, revert), the emulation's replicas, ISR and leader through a move, and the
validation of each requested partition (broker/services/reassignments.py) on a topic service
whose replicas file lives in a temporary directory."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.cluster.nodes import ClusterNodes
from kafkette.broker.cluster.reassignment import (
    Reassignment,
    UncleanRevertError,
    completed,
    plan,
    revert,
)
from kafkette.broker.services.cluster import ClusterInfo
from kafkette.broker.services.reassignments import PartitionReassignments
from kafkette.broker.services.topic_service import REPLICAS_FILE, TopicService
from kafkette.storage.topics import TopicInfo


def test_plan_lists_the_target_then_the_replicas_removed() -> None:
    moved = plan([1, 2, 3], [4, 3, 2])
    assert (moved.replicas, moved.adding, moved.removing) == ([4, 3, 2, 1], [4], [1])
    assert moved.in_progress and moved.target == [4, 3, 2] and moved.original == [3, 2, 1]
    reordered = plan([1, 2], [2, 1])
    assert (reordered.replicas, reordered.in_progress) == ([2, 1], False)


def test_completion_needs_every_target_replica_in_sync() -> None:
    moved = plan([1, 2], [2, 3])
    assert completed(moved, [1, 2]) is None  # 3 not caught up
    assert completed(moved, [1, 2, 3]) == [2, 3]
    assert completed(plan([1], [2]), [1]) is None  # only the removed replica in sync
    assert completed(Reassignment([1, 2]), [1, 2]) is None  # nothing in progress


def test_revert_keeps_the_removed_replicas_and_drops_the_added() -> None:
    moved = plan([1, 2], [2, 3])
    assert revert(moved, [1, 2]) == ([2, 1], False)
    assert revert(plan([1], [2]), [2]) == ([1], True)  # only the added one is in sync


def test_a_move_keeps_the_leader_until_it_is_removed() -> None:
    nodes = ClusterNodes([1, 2, 3])
    nodes.set_replication("t", 2, [[1, 2]])
    assert nodes.reassign("t", 0, [2, 1]) is True
    assert (nodes.replicas("t", 0), nodes.leader("t", 0)) == ([2, 1], 1)
    assert nodes.elect_preferred("t", 0) is True and nodes.leader("t", 0) == 2  # ElectLeaders
    assert nodes.reassign("t", 0, [3, 2]) is True  # 2 stays a replica: it keeps the lead
    assert (nodes.replicas("t", 0), nodes.isr("t", 0), nodes.leader("t", 0)) == ([3, 2], [3, 2], 2)
    assert nodes.reassign("t", 0, [1, 3]) is True  # 2 removed: the first live replica leads
    assert (nodes.replicas("t", 0), nodes.leader("t", 0)) == ([1, 3], 1)
    assert nodes.reassignment("t", 0) is None and nodes.reassigning() == {}


def test_a_move_to_a_stopped_node_waits_until_it_starts_or_is_cancelled() -> None:
    nodes = ClusterNodes([1, 2, 3])
    nodes.nodes[3].live = False
    assert nodes.reassign("t", 4, [3]) is False  # an RF-1 topic following its preferred slot
    waiting = nodes.reassignment("t", 4)
    assert waiting is not None and (waiting.adding, nodes.reassigning()) == ([3], {"t": [4]})
    before = waiting.removing
    assert nodes.leader("t", 4) == before[0]  # the old replica still leads
    assert nodes.cancel_reassignment("t", 4, allow_unclean=False) is True
    assert nodes.replicas("t", 4) == before and nodes.reassigning() == {}
    assert nodes.cancel_reassignment("t", 4, allow_unclean=False) is False
    nodes.reassign("t", 4, [3])
    assert nodes.complete_reassignments() == []
    nodes.nodes[3].live = True
    assert nodes.complete_reassignments() == [("t", 4)]
    assert (nodes.replicas("t", 4), nodes.leader("t", 4)) == ([3], 3)
    nodes.forget("t")
    assert nodes.reassigned() == {}


def test_cancelling_into_an_offline_partition_is_unclean() -> None:
    nodes = ClusterNodes([1, 2, 3])
    nodes.set_replication("t", 1, [[1]])
    nodes.nodes[3].live = False
    nodes.reassign("t", 0, [2, 3])
    nodes.nodes[1].live = False  # only the added 2 is in sync now
    with pytest.raises(UncleanRevertError):
        nodes.cancel_reassignment("t", 0, allow_unclean=False)
    assert nodes.cancel_reassignment("t", 0, allow_unclean=True) is True
    assert nodes.replicas("t", 0) == [1]


def test_restore_drops_nodes_the_cluster_lacks() -> None:
    nodes = ClusterNodes([1, 2])
    nodes.restore_reassigned("t", 0, Reassignment([2, 5, 1], [5], [1]))
    assert nodes.replicas("t", 0) == [2] and nodes.reassigning() == {}
    nodes.restore_reassigned("t", 1, Reassignment([7]))
    assert ("t", 1) not in {(t, p) for t, ps in nodes.reassigned().items() for p in ps}


class _Logs:
    def __init__(self, directory: Path, topics: list[TopicInfo]) -> None:
        self.directory = directory
        self._topics = {t.name: t for t in topics}

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)


class _Config:
    node_id = 1

    def get(self, key: str, default: Any = None) -> Any:
        return default


def _service(tmp_path: Path, nodes: ClusterNodes | None) -> tuple[PartitionReassignments, Any]:
    info = TopicInfo("t", uuid.uuid4(), 2)
    topics = TopicService(_Logs(tmp_path, [info]), _Config(), nodes)  # type: ignore[arg-type]
    cluster = ClusterInfo(1, "cluster", lambda: ("127.0.0.1", 9), nodes)
    return PartitionReassignments(topics, cluster, _Config()), info


def _alter(service: PartitionReassignments, moves: list[tuple[str, int, list[int] | None]],
           allow: bool = True) -> list[tuple[str, int, ErrorCode]]:
    answers = asyncio.run(service.alter([(t, [(p, r)]) for t, p, r in moves],
                                        allow_replication_factor_change=allow))
    return [(topic, a.partition, a.error) for topic, answered in answers for a in answered]


def test_each_partition_is_checked_and_the_moves_are_stored(tmp_path: Path) -> None:
    nodes = ClusterNodes([1, 2, 3])
    service, info = _service(tmp_path, nodes)
    nodes.set_replication("t", 2, [[1, 2], [2, 3]])
    assert _alter(service, [("t", 0, [3, 1]), ("t", 1, None), ("t", 2, [1]), ("u", 0, [1]),
                            ("t", 0, []), ("t", 0, [2, 2]), ("t", 0, [4])]) == [
        ("t", 0, ErrorCode.none), ("t", 1, ErrorCode.no_reassignment_in_progress),
        ("t", 2, ErrorCode.unknown_topic_or_partition),
        ("u", 0, ErrorCode.unknown_topic_or_partition),
        ("t", 0, ErrorCode.invalid_replica_assignment),
        ("t", 0, ErrorCode.invalid_replica_assignment),
        ("t", 0, ErrorCode.invalid_replica_assignment)]
    assert _alter(service, [("t", 1, [1]), ("t", 1, [1, 3])], allow=False) == [
        ("t", 1, ErrorCode.invalid_replication_factor), ("t", 1, ErrorCode.none)]
    stored = json.loads((tmp_path / REPLICAS_FILE).read_text())["topics"]["t"]
    assert stored["topic_id"] == str(info.topic_id)
    assert stored["reassigned"] == {"0": {"replicas": [3, 1], "adding": [], "removing": []},
                                    "1": {"replicas": [1, 3], "adding": [], "removing": []}}
    restored = ClusterNodes([1, 2, 3])  # a restart: same file, same topic id
    topics = TopicService(_Logs(tmp_path, [info]), _Config(), restored)  # type: ignore[arg-type]
    topics.load_replicas()
    assert [restored.replicas("t", p) for p in (0, 1)] == [[3, 1], [1, 3]]


def test_one_node_accepts_only_itself(tmp_path: Path) -> None:
    service, _ = _service(tmp_path, None)
    assert _alter(service, [("t", 0, [1]), ("t", 0, [2]), ("t", 1, None)]) == [
        ("t", 0, ErrorCode.none), ("t", 0, ErrorCode.invalid_replica_assignment),
        ("t", 1, ErrorCode.no_reassignment_in_progress)]
    assert service.ongoing(None) == [] and not (tmp_path / REPLICAS_FILE).exists()
