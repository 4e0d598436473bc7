"""Who this node is: node id, cluster id and the address clients are told to use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkette.coordinator.runtime.serving import SERVING_NODE

if TYPE_CHECKING:
    from ..cluster.nodes import ClusterNodes
    from ..cluster.reassignment import Reassignment


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    node_id: int
    cluster_id: str
    # The advertised (host, port); known only once the listener is bound.
    address: Callable[[], tuple[str, int]]
    # Several nodes in one process (broker/cluster/nodes.py); None for a single node.
    nodes: ClusterNodes | None = None
    listener: str = ""  # the listener name the request came in on

    @property
    def advertised(self) -> tuple[str, int]:
        return self.address()

    def serving_node_setter(self) -> Callable[[int], object] | None:
        """What a connection calls with its node id before each request when several nodes
        share one group coordinator, which then answers as the node the request came to; None
        for a single node (the coordinator's own node serves every request)."""
        return None if self.nodes is None else SERVING_NODE.set

    def brokers(self) -> list[tuple[int, str, int]]:
        """(node id, host, port) of every live node, as advertised on this listener."""
        if self.nodes is None:
            return [(self.node_id, *self.address())]
        return self.nodes.addresses(self.listener)

    def registered_brokers(self) -> list[tuple[int, str, int, bool]]:
        """(node id, host, port, fenced) of every node, stopped (fenced) ones included."""
        if self.nodes is None:
            return [(self.node_id, *self.address(), False)]
        return self.nodes.registered_addresses(self.listener)

    def hosts(self, topic: str, partition: int) -> bool:
        """Whether this node holds a replica of the partition."""
        return self.nodes is None or self.node_id in self.nodes.replicas(topic, partition)

    def elect_preferred(self, topic: str, partition: int) -> bool | None:
        """Make the preferred replica the leader (ElectLeaders PREFERRED): True if it now
        leads, False if it already did, None if it is not live."""
        return False if self.nodes is None else self.nodes.elect_preferred(topic, partition)

    def reassign(self, topic: str, partition: int, target: list[int]) -> None:
        """Move the partition's replicas to ``target`` (AlterPartitionReassignments); one node
        has nothing to move (its only valid target is itself)."""
        if self.nodes is not None:
            self.nodes.reassign(topic, partition, target)

    def cancel_reassignment(self, topic: str, partition: int, *, allow_unclean: bool) -> bool:
        """Cancel the partition's reassignment in progress; False when there is none.
        UncleanRevertError (broker/cluster/reassignment.py) when that takes an unclean
        election ``allow_unclean`` forbids."""
        return self.nodes is not None and self.nodes.cancel_reassignment(
            topic, partition, allow_unclean=allow_unclean)

    def reassignment(self, topic: str, partition: int) -> Reassignment | None:
        """The partition's reassignment in progress (replicas, adding, removing), if any."""
        return None if self.nodes is None else self.nodes.reassignment(topic, partition)

    def reassigning(self) -> dict[str, list[int]]:
        """topic -> its partitions with a reassignment in progress."""
        return {} if self.nodes is None else self.nodes.reassigning()

    def controller(self) -> int:
        return self.node_id if self.nodes is None else self.nodes.controller()

    def leader(self, topic: str, partition: int) -> int:
        return self.node_id if self.nodes is None else self.nodes.leader(topic, partition)

    def partition_state(self, topic: str, partition: int) -> tuple[int, list[int], list[int],
                                                                  list[int]]:
        """(leader, replicas, in-sync replicas, offline replicas); leader -1: none is live."""
        if self.nodes is None:
            return self.node_id, [self.node_id], [self.node_id], []
        nodes = self.nodes
        return (nodes.leader(topic, partition), nodes.replicas(topic, partition),
                nodes.isr(topic, partition), nodes.offline_replicas(topic, partition))

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        if node_id == self.node_id:
            return self.address()
        return None if self.nodes is None else self.nodes.address_of(node_id, self.listener)
