"""Node lifecycle of a multi-node broker (``Broker(nodes=N)``): stop and start a node, move a
group's coordinator or a partition's leader. Runs on the broker's event loop.

A group coordinator moves as in Kafka: its ``__consumer_offsets`` partition is unloaded where it
was and loaded again for the new node through the normal replay path (requests meanwhile get
NOT_COORDINATOR, then COORDINATOR_LOAD_IN_PROGRESS).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .nodes import OFFSETS_TOPIC

if TYPE_CHECKING:
    from kafkette.coordinator.group.group_service import GroupCoordinator

    from .nodes import ClusterNodes

log = logging.getLogger("kafkette.cluster")


async def coordinators_follow_leaders(nodes: ClusterNodes,
                                      coordinator: GroupCoordinator | None) -> None:
    """Every ``__consumer_offsets`` partition whose leader changed (a stopped node, an
    election, a reassignment, a moved leader) takes its groups' coordinator along: unloaded
    where it was, loaded again on the new leader. None: the coordinator is still loading."""
    if coordinator is None:
        return
    moves = [(p, nodes.coordinator_node(p)) for p, owner in coordinator.owners.items()
             if owner != nodes.coordinator_node(p)]
    await asyncio.gather(*(_move_partition(coordinator, p, to) for p, to in moves))


async def _move_partition(coordinator: GroupCoordinator, partition: int, node_id: int) -> None:
    coordinator.resign(partition, node_id)
    await coordinator.elect(partition, node_id)


class ClusterError(Exception):
    """A node operation that cannot be done (unknown node, stopped node, single node)."""


class NodeControl:
    def __init__(self, broker: Any) -> None:  # the Broker (server.py imports this module)
        self.broker = broker

    @property
    def nodes(self) -> ClusterNodes:
        if self.broker.cluster_nodes is None:
            raise ClusterError("this broker runs one node (start it with --nodes N)")
        return self.broker.cluster_nodes

    def _node(self, node_id: int) -> Any:
        node = self.nodes.nodes.get(node_id)
        if node is None:
            raise ClusterError(f"no node {node_id} (nodes: {', '.join(map(str, self.broker.node_ids))})")
        return node

    def describe(self) -> dict[str, Any]:
        nodes = self.broker.cluster_nodes
        if nodes is None:
            host, port = self.broker.advertised
            listed = [{"id": self.broker.config.node_id, "host": host, "port": port,
                       "state": "running"}]
            controller = self.broker.config.node_id
        else:
            listed, controller = nodes.to_json(), nodes.controller()
        return {"cluster_id": self.broker.cluster_id, "controller": controller, "nodes": listed}

    async def stop_node(self, node_id: int) -> None:
        """Close the node's listeners and connections; its partitions' leadership and its group
        coordinators move to live nodes."""
        node = self._node(node_id)
        if not node.live:
            raise ClusterError(f"node {node_id} is already stopped")
        if len(self.nodes.live_ids()) == 1:
            raise ClusterError(f"node {node_id} is the last running node")
        node.live = False
        broker = self.broker
        views = [v for v in broker.views if v.node_id == node_id]
        for view in views:
            view.server.close()
        for conn in list(broker.connections):
            if getattr(conn.broker, "node_id", None) == node_id:
                conn.close(None)
        for view in views:
            await view.server.wait_closed()
            broker._servers.remove(view.server)
        log.info("node %d stopped", node_id)
        await self._rebalance_coordinators()

    async def start_node(self, node_id: int) -> None:
        """Listen again on the node's addresses; preferred leaders and coordinators move back."""
        node = self._node(node_id)
        if node.live:
            raise ClusterError(f"node {node_id} is already running")
        broker = self.broker
        old = [v for v in broker.views if v.node_id == node_id]
        for view in old:
            broker.views.remove(view)
            await broker._listen(view.listener, node_id, view.bound[1])
        node.live = True
        log.info("node %d started", node_id)
        if self.nodes.complete_reassignments():  # their new replicas are live now
            await broker.services.topics.save_replicas()
        await self._rebalance_coordinators()

    async def _rebalance_coordinators(self) -> None:
        await coordinators_follow_leaders(self.nodes, self.broker.coordinator)

    async def move_coordinator(self, group_id: str, node_id: int) -> int:
        """Move the coordinator of ``group_id`` (its whole ``__consumer_offsets`` partition);
        returns that partition."""
        if not self._node(node_id).live:
            raise ClusterError(f"node {node_id} is stopped")
        coord = self.broker.coordinator
        if coord is None:
            raise ClusterError("the group coordinator is still loading")
        partition = coord.partition_for(group_id)
        self.nodes.move_leader(OFFSETS_TOPIC, partition, node_id)  # Metadata agrees
        if coord.owners.get(partition) != node_id:
            await _move_partition(coord, partition, node_id)
            log.info("coordinator of group %s (__consumer_offsets-%d) moved to node %d",
                     group_id, partition, node_id)
        return partition

    async def move_leader(self, topic: str, partition: int, node_id: int) -> None:
        """Move a partition's leader (a ``__consumer_offsets`` one takes its groups'
        coordinator along)."""
        if not self._node(node_id).live:
            raise ClusterError(f"node {node_id} is stopped")
        try:
            self.nodes.move_leader(topic, partition, node_id)
        except KeyError as exc:  # not one of the partition's replicas
            raise ClusterError(exc.args[0]) from None
        log.info("leader of %s-%d moved to node %d", topic, partition, node_id)
        if topic == OFFSETS_TOPIC:
            await self._rebalance_coordinators()
