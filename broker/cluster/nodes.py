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

Reassignments (AlterPartitionReassignments) give a partition its own replica list over the
topic's placement. One completes as soon as every target replica is live (the data is one copy:
a live replica has caught up at once); a target replica on a stopped node keeps it in progress,
listed with its adding and removing replicas, until that node starts or it is cancelled. The
leader stays where it was while it remains an in-sync replica (Kafka's election on a replica
change), else the first live replica of the new list leads.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from .reassignment import Reassignment, UncleanRevertError, completed, plan, revert

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
        # (topic, partition) -> its replicas as a reassignment set them (with the adding and
        # removing replicas of one in progress), over the topic's placement
        self._reassigned: dict[tuple[str, int], Reassignment] = {}

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
        if topic in self._replication or (self._reassigned and
                                          (topic, partition) in self._reassigned):
            return next((n for n in self.replicas(topic, partition) if self.nodes[n].live), -1)
        if topic == OFFSETS_TOPIC:  # the coordinators: partition p on the p-th node
            return self.preferred(partition)
        return self.preferred(zlib.crc32(topic.encode()) + partition)

    def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        self.check_live(node_id)
        if ((topic in self._replication or (topic, partition) in self._reassigned)
                and node_id not in self.replicas(topic, partition)):
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
        for key in [k for k in self._reassigned if k[0] == topic]:
            del self._reassigned[key]

    def replication_factor(self, topic: str) -> int:
        return self._replication.get(topic, (1, []))[0]

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The partition's replicas, the preferred leader first."""
        if self._reassigned:
            reassigned = self._reassigned.get((topic, partition))
            if reassigned is not None:
                return reassigned.replicas
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

    # Reassignments ---------------------------------------------------------------------------
    def reassign(self, topic: str, partition: int, target: list[int]) -> bool:
        """Move the partition to the replicas ``target`` (AlterPartitionReassignments): True
        when that is done at once, False when it waits for a target replica to go live."""
        key = (topic, partition)
        leader = self.leader(topic, partition)
        self._reassigned[key] = plan(self.replicas(topic, partition), target)
        done = self._complete(key)
        self._keep_leader(key, leader)
        return done

    def cancel_reassignment(self, topic: str, partition: int, *, allow_unclean: bool) -> bool:
        """Put back the replicas the partition had before its reassignment in progress; False
        when none is in progress. UncleanRevertError when none of them is in sync and
        ``allow_unclean`` (unclean.leader.election.enable) is false."""
        key = (topic, partition)
        reassignment = self._reassigned.get(key)
        if reassignment is None or not reassignment.in_progress:
            return False
        replicas, unclean = revert(reassignment, self.isr(topic, partition))
        if unclean and not allow_unclean:
            raise UncleanRevertError(f"{topic}:{partition}")
        leader = self.leader(topic, partition)
        self._reassigned[key] = Reassignment(replicas)
        self._keep_leader(key, leader)
        return True

    def reassignment(self, topic: str, partition: int) -> Reassignment | None:
        """The partition's reassignment in progress, None when there is none."""
        reassignment = self._reassigned.get((topic, partition))
        return reassignment if reassignment is not None and reassignment.in_progress else None

    def reassigning(self) -> dict[str, list[int]]:
        """topic -> its partitions with a reassignment in progress, in order."""
        out: dict[str, list[int]] = {}
        for (topic, partition), reassignment in sorted(self._reassigned.items()):
            if reassignment.in_progress:
                out.setdefault(topic, []).append(partition)
        return out

    def complete_reassignments(self) -> list[tuple[str, int]]:
        """Complete the reassignments whose target replicas are all live now (after a node
        started); returns the partitions completed."""
        done = []
        for key, reassignment in list(self._reassigned.items()):
            if reassignment.in_progress:
                leader = self.leader(*key)
                if self._complete(key):
                    self._keep_leader(key, leader)
                    done.append(key)
        return done

    def reassigned(self) -> dict[str, dict[int, Reassignment]]:
        """Every partition a reassignment placed, by topic (what is stored with the replicas)."""
        out: dict[str, dict[int, Reassignment]] = {}
        for (topic, partition), reassignment in sorted(self._reassigned.items()):
            out.setdefault(topic, {})[partition] = reassignment
        return out

    def restore_reassigned(self, topic: str, partition: int, reassignment: Reassignment) -> None:
        """Put back a stored reassignment; without the nodes this cluster does not have, only its
        target is kept (or nothing, when none of it is left)."""
        known = set(self._ids)
        listed = {*reassignment.replicas, *reassignment.adding, *reassignment.removing}
        if not listed <= known:
            target = [n for n in reassignment.target if n in known]
            if not target:
                return
            reassignment = Reassignment(target)
        self._reassigned[(topic, partition)] = reassignment

    def _complete(self, key: tuple[str, int]) -> bool:
        reassignment = self._reassigned[key]
        if not reassignment.in_progress:
            return True
        final = completed(reassignment, self.isr(*key))
        if final is None:
            return False
        self._reassigned[key] = Reassignment(final)
        return True

    def _keep_leader(self, key: tuple[str, int], leader: int) -> None:
        """Kafka's election on a replica change: the leader stays while it is a live replica,
        else the first live replica leads."""
        self._leader_moves.pop(key, None)
        if (leader >= 0 and self.nodes[leader].live and leader in self.replicas(*key)
                and self.leader(*key) != leader):
            self._leader_moves[key] = leader

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
