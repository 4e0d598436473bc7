"""Several nodes in one process, for testing clients (``kafkette serve --nodes N``).

An emulation: one LogManager and one group coordinator runtime serve every node; a node is its own
listener(s) and node id. ``ClusterNodes`` says which nodes are live, which node leads each
partition (preferred leaders spread over the nodes, overridden by ``move_leader``; a stopped
node's partitions go to the next live node) and which node hosts each ``__consumer_offsets``
partition, i.e. each group coordinator (``GroupCoordinator.owners``).

Replicas: a topic created with a replication factor above 1 (or a manual assignment) has that
many replicas per partition, spread from the preferred leader on as Kafka spreads them. The data
stays one copy; what clients see is Kafka's: the ISR is the live replicas (a stopped node leaves
it and comes back when started), the leader is the preferred replica or the first live one, and
a partition with no live replica has no leader. A topic of replication factor 1 keeps following
its preferred slot to the next live node, so single-replica tests keep working across stops.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass
class Node:
    node_id: int
    live: bool = True
    # listener name -> the advertised (host, port) of this node on it
    addresses: dict[str, Callable[[], tuple[str, int]]] = field(default_factory=dict)


class ClusterNodes:
    def __init__(self, node_ids: list[int]) -> None:
        self.nodes: dict[int, Node] = {n: Node(n) for n in node_ids}
        self._ids = sorted(node_ids)
        self._leader_moves: dict[tuple[str, int], int] = {}
        # topic -> (replication factor, manual replica lists of its first partitions)
        self._replication: dict[str, tuple[int, list[list[int]]]] = {}

    # Nodes -----------------------------------------------------------------------------------
    def live_ids(self) -> list[int]:
        return [n for n in self._ids if self.nodes[n].live]

    def controller(self) -> int:
        live = self.live_ids()
        return live[0] if live else -1

    def addresses(self, listener: str) -> list[tuple[int, str, int]]:
        """(node id, host, port) of every live node on ``listener``."""
        out = []
        for n in self.live_ids():
            address = self.nodes[n].addresses.get(listener)
            if address is not None:
                host, port = address()
                out.append((n, host, port))
        return out

    def registered_addresses(self, listener: str) -> list[tuple[int, str, int, bool]]:
        """(node id, host, port, fenced) of every node on ``listener``, stopped ones included
        (a stopped node is a fenced broker: registered, not live)."""
        out = []
        for n in self._ids:
            address = self.nodes[n].addresses.get(listener)
            if address is not None:
                host, port = address()
                out.append((n, host, port, not self.nodes[n].live))
        return out

    def address_of(self, node_id: int, listener: str) -> tuple[str, int] | None:
        node = self.nodes.get(node_id)
        if node is None or not node.live or listener not in node.addresses:
            return None
        return node.addresses[listener]()

    # Placement -------------------------------------------------------------------------------
    def preferred(self, key: int) -> int:
        """The preferred node of slot ``key``; the next live one when it is down."""
        ids = self._ids
        start = key % len(ids)
        for i in range(len(ids)):
            candidate = ids[(start + i) % len(ids)]
            if self.nodes[candidate].live:
                return candidate
        return -1

    def leader(self, topic: str, partition: int) -> int:
        moved = self._leader_moves.get((topic, partition))
        if moved is not None and self.nodes[moved].live:
            return moved
        if topic in self._replication:
            return next((n for n in self.replicas(topic, partition) if self.nodes[n].live), -1)
        if topic == OFFSETS_TOPIC:  # the coordinators: partition p on the p-th node
            return self.preferred(partition)
        return self.preferred(zlib.crc32(topic.encode()) + partition)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self.check_live(node_id)
        if topic in self._replication and node_id not in self.replicas(topic, partition):
            raise KeyError(f"node {node_id} is not a replica of {topic}-{partition}")
        self._leader_moves[(topic, partition)] = node_id

    def elect_preferred(self, topic: str, partition: int) -> bool | None:
        """A preferred leader election (ElectLeaders): the preferred replica (the first one)
        leads again when it is live. False: it already leads (no election needed); None: it is
        not live."""
        preferred = self.replicas(topic, partition)[0]
        if self.leader(topic, partition) == preferred:
            return False
        if preferred < 0 or not self.nodes[preferred].live:
            return None
        self._leader_moves.pop((topic, partition), None)
        if self.leader(topic, partition) != preferred:  # a replica list not led by its first
            self._leader_moves[(topic, partition)] = preferred
        return True

    # Replicas --------------------------------------------------------------------------------
    def registered(self) -> list[int]:
        """Every node id, stopped ones included (Kafka counts fenced brokers as registered)."""
        return list(self._ids)

    def set_replication(self, topic: str, factor: int,
                        assignment: list[list[int]] | None = None) -> None:
        """Record a new topic's replication factor, or its manual replica lists."""
        lists = [list(replicas) for replicas in assignment or ()]
        if factor > 1 or lists:
            self._replication[topic] = (len(lists[0]) if lists else factor, lists)
        else:
            self._replication.pop(topic, None)

    def add_replicas(self, topic: str, first: int, assignment: list[list[int]]) -> None:
        """Manual replica lists of partitions ``first``.. (CreatePartitions)."""
        factor, lists = self._replication.get(topic, (1, []))
        lists = lists + [self.replicas(topic, p) for p in range(len(lists), first)]
        self._replication[topic] = (factor, lists + [list(r) for r in assignment])

    def forget(self, topic: str) -> None:
        self._replication.pop(topic, None)
        for key in [k for k in self._leader_moves if k[0] == topic]:
            del self._leader_moves[key]

    def replication_factor(self, topic: str) -> int:
        return self._replication.get(topic, (1, []))[0]

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The partition's replicas, the preferred leader first."""
        spec = self._replication.get(topic)
        if spec is None:
            return [self.leader(topic, partition)]
        factor, lists = spec
        if partition < len(lists):
            return lists[partition]
        ids = self._ids
        start = (zlib.crc32(topic.encode()) + partition) % len(ids)
        return [ids[(start + i) % len(ids)] for i in range(min(factor, len(ids)))]

    def replication(self) -> dict[str, tuple[int, list[list[int]]]]:
        """Every replicated topic: (replication factor, manual replica lists)."""
        return {t: (factor, [list(r) for r in lists])
                for t, (factor, lists) in self._replication.items()}

    def restore_replication(self, topic: str, factor: int, assignment: list[list[int]]) -> None:
        """Put back a stored topic's replicas; nodes this cluster does not have are left out."""
        known = set(self._ids)
        lists = [[n for n in replicas if n in known] for replicas in assignment]
        if any(not replicas for replicas in lists):
            lists = []
        self.set_replication(topic, min(factor, len(self._ids)), lists)

    def isr(self, topic: str, partition: int) -> list[int]:
        """The in-sync replicas: the live ones."""
        return [n for n in self.replicas(topic, partition) if self.nodes[n].live]

    def offline_replicas(self, topic: str, partition: int) -> list[int]:
        return [n for n in self.replicas(topic, partition) if not self.nodes[n].live]

    def leads(self, node_id: int) -> Callable[[str, int], bool]:
        return lambda topic, partition: self.leader(topic, partition) == node_id

    def coordinator_node(self, offsets_partition: int) -> int:
        """Where ``__consumer_offsets-<p>`` (its groups' coordinator) belongs now: its leader."""
        return self.leader(OFFSETS_TOPIC, offsets_partition)

    def check_live(self, node_id: int) -> None:
        node = self.nodes.get(node_id)
        if node is None:
            raise KeyError(f"no node {node_id} (nodes: {', '.join(map(str, self._ids))})")
        if not node.live:
            raise KeyError(f"node {node_id} is stopped")

    def to_json(self) -> list[dict]:
        out = []
        for n in self._ids:
            node = self.nodes[n]
            first = next(iter(node.addresses.values()), None)
            host, port = first() if first is not None else ("", -1)
            out.append({"id": n, "host": host, "port": port,
                        "state": "running" if node.live else "stopped"})
        return out
