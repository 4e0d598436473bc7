"""FindCoordinator key type 2 under several nodes: the node leading the key's
``__share_group_state`` partition answers, from whichever node is asked; a stopped node's
partitions move to the next live one."""

from __future__ import annotations

import time
import uuid

from kafkette.coordinator.runtime.partitioning import partition_for
from kafkette.protocol.share_state_records import coordinator_key
from tests.wire import WireClient

FIND = 10


def find(bootstrap: str, key: str):
    with WireClient(bootstrap) as client:
        for _ in range(50):  # the first ask creates __share_group_state
            (found,) = client.request(FIND, 6, key_type=2, coordinator_keys=(key,)).coordinators
            if found.error_code != 15:
                return found
            time.sleep(0.05)
        return found


def test_share_coordinator_is_the_state_partition_leader(kafka_cluster_factory) -> None:
    cluster = kafka_cluster_factory(3, **{"share.coordinator.state.topic.num.partitions": 6})
    by_partition: dict[int, str] = {}  # one key on each of the 6 state partitions
    for i in range(1000):
        key = coordinator_key("workers", uuid.UUID(int=i), 0)
        by_partition.setdefault(partition_for(key, 6), key)
    keys = [by_partition[p] for p in range(6)]
    addresses = {n["id"]: (n["host"], n["port"]) for n in cluster.nodes}
    for key in keys:
        leader = cluster.leader_of("__share_group_state", partition_for(key, 6))
        for node in cluster.nodes:
            found = find(f"{node['host']}:{node['port']}", key)
            assert (found.error_code, found.node_id) == (0, leader)
            assert (found.host, found.port) == addresses[leader]
    # a stopped node's state partitions are led by another node
    key = next(k for k in keys if cluster.leader_of("__share_group_state",
                                                    partition_for(k, 6)) == 2)
    cluster.stop_node(2)
    found = find(cluster.bootstrap.split(",")[0], key)
    assert found.error_code == 0 and found.node_id != 2
