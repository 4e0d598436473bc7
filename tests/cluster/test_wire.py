"""Several nodes in one process, on the wire: Metadata, wrong-node answers, node lifecycle."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import request_type
from tests.faults.test_wire import end_offset, produce
from tests.wire import WireClient, entity


def metadata(bootstrap: str, topic: str):
    cls = request_type(3, 12)
    with WireClient(bootstrap) as w:
        return w.request(3, 12, topics=(entity(cls, "topics", name=topic, topic_id=None),),
                         allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def address(cluster, node_id: int) -> str:
    node = next(n for n in cluster.nodes if n["id"] == node_id)
    return f"{node['host']}:{node['port']}"


def find_coordinator(bootstrap: str, group: str):
    with WireClient(bootstrap) as w:
        return w.request(10, 4, key_type=0, coordinator_keys=(group,)).coordinators[0]


def test_metadata_lists_every_node_and_spreads_leaders(kafka_cluster):
    kafka_cluster.runner.run(kafka_cluster.runner.broker.logs.create_topic("t", 6))
    assert [n["id"] for n in kafka_cluster.nodes] == [1, 2, 3]
    assert len({n["port"] for n in kafka_cluster.nodes}) == 3
    for node in kafka_cluster.nodes:
        r = metadata(f"{node['host']}:{node['port']}", "t")
        assert sorted((b.node_id, b.port) for b in r.brokers) == [
            (n["id"], n["port"]) for n in kafka_cluster.nodes]
        assert r.controller_id == 1
        leaders = [p.leader_id for p in r.topics[0].partitions]
        assert set(leaders) == {1, 2, 3}
        assert leaders == [kafka_cluster.leader_of("t", p) for p in range(6)]


def test_a_partition_asked_of_the_wrong_node_is_not_led_there(kafka_cluster):
    kafka_cluster.runner.run(kafka_cluster.runner.broker.logs.create_topic("t", 1))
    leader = kafka_cluster.leader_of("t", 0)
    other = next(n["id"] for n in kafka_cluster.nodes if n["id"] != leader)
    with WireClient(address(kafka_cluster, other)) as w:
        part = produce(w, "t", 0, b"x").responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.not_leader_or_follower
    with WireClient(address(kafka_cluster, leader)) as w:
        assert produce(w, "t", 0, b"x").responses[0].partition_responses[0].error_code \
            == ErrorCode.none
        assert end_offset(w, "t", 0) == 1
    kafka_cluster.move_leader("t", 0, other)
    with WireClient(address(kafka_cluster, other)) as w:
        assert produce(w, "t", 0, b"y").responses[0].partition_responses[0].error_code \
            == ErrorCode.none
        assert end_offset(w, "t", 0) == 2  # one copy of the data, whoever leads


def test_group_requests_to_the_wrong_node_get_not_coordinator(kafka_cluster):
    group = "billing"
    found = find_coordinator(address(kafka_cluster, 1), group)
    assert found.error_code == ErrorCode.none and found.node_id == kafka_cluster.coordinator_of(group)
    assert found.port == int(address(kafka_cluster, found.node_id).rsplit(":", 1)[1])
    other = next(n["id"] for n in kafka_cluster.nodes if n["id"] != found.node_id)
    for node_id, expected in ((other, ErrorCode.not_coordinator),
                              (found.node_id, ErrorCode.unknown_member_id)):
        with WireClient(address(kafka_cluster, node_id)) as w:
            r = w.request(12, 4, group_id=group, generation_id=1, member_id="m",
                          group_instance_id=None)
            assert r.error_code == expected


def test_stopping_a_node_moves_its_leaders_and_coordinators_and_starting_moves_them_back(
        kafka_cluster):
    kafka_cluster.runner.run(kafka_cluster.runner.broker.logs.create_topic("t", 6))
    group = "billing"
    home = kafka_cluster.coordinator_of(group)
    led = [p for p in range(6) if kafka_cluster.leader_of("t", p) == home]
    port = address(kafka_cluster, home)
    with WireClient(port) as w:
        kafka_cluster.stop_node(home)
        assert w.is_closed_by_peer(5)
    assert [n["state"] for n in kafka_cluster.nodes if n["id"] == home] == ["stopped"]
    assert all(kafka_cluster.leader_of("t", p) != home for p in led)
    moved = kafka_cluster.coordinator_of(group)
    assert moved != home
    r = metadata(kafka_cluster.bootstrap.split(",")[0], "t")
    assert home not in {b.node_id for b in r.brokers}
    assert find_coordinator(kafka_cluster.bootstrap.split(",")[0], group).node_id == moved
    kafka_cluster.start_node(home)
    assert address(kafka_cluster, home) == port
    assert kafka_cluster.coordinator_of(group) == home
    assert all(kafka_cluster.leader_of("t", p) == home for p in led)


def test_move_coordinator_on_demand_keeps_commits(kafka_cluster):
    from kafkette.broker.cli.admin_client import AdminClient

    kafka_cluster.runner.run(kafka_cluster.runner.broker.logs.create_topic("t", 1))
    group = "ledger"
    home = kafka_cluster.coordinator_of(group)
    admin = AdminClient(address(kafka_cluster, home))
    assert admin.commit(group, {("t", 0): 7}) == {("t", 0): "NONE"}
    admin.close()
    target = next(n["id"] for n in kafka_cluster.nodes if n["id"] != home)
    kafka_cluster.move_coordinator(group, target)
    assert kafka_cluster.coordinator_of(group) == target
    admin = AdminClient(address(kafka_cluster, target))  # state replayed from __consumer_offsets
    assert admin.committed(group) == {("t", 0): 7}
    admin.close()


def test_one_node_is_the_default_and_unchanged(kafka_broker):
    assert kafka_broker.runner.broker.cluster_nodes is None
    r = metadata(kafka_broker, "")
    assert [b.node_id for b in r.brokers] == [1] and r.controller_id == 1


def test_a_fault_for_one_node_hits_only_that_node(kafka_cluster):
    group = "billing"
    home = kafka_cluster.coordinator_of(group)
    other = next(n["id"] for n in kafka_cluster.nodes if n["id"] != home)
    kafka_cluster.inject("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=-1, node=home)
    assert find_coordinator(address(kafka_cluster, other), group).error_code == ErrorCode.none
    for _ in range(2):
        assert find_coordinator(address(kafka_cluster, home), group).error_code \
            == ErrorCode.coordinator_not_available
    assert kafka_cluster.clear_faults() == 1
    assert find_coordinator(address(kafka_cluster, home), group).error_code == ErrorCode.none


def test_a_cluster_restarts_on_the_same_ports_with_its_data(kafka_cluster):
    kafka_cluster.runner.run(kafka_cluster.runner.broker.logs.create_topic("t", 3))
    before = [(n["id"], n["port"]) for n in kafka_cluster.nodes]
    with WireClient(address(kafka_cluster, kafka_cluster.leader_of("t", 2))) as w:
        produce(w, "t", 2, b"kept")
    kafka_cluster.runner.restart()
    assert [(n["id"], n["port"]) for n in kafka_cluster.nodes] == before
    with WireClient(address(kafka_cluster, kafka_cluster.leader_of("t", 2))) as w:
        assert end_offset(w, "t", 2) == 1


def test_a_moving_coordinator_answers_not_coordinator_then_load_in_progress(kafka_cluster):
    """While its ``__consumer_offsets`` partition is unloaded and replayed for the new node, a
    group's requests to that node are refused as Kafka refuses them, then served."""

    from kafkette.coordinator.runtime.serving import SERVING_NODE

    group = "moving"
    home = kafka_cluster.coordinator_of(group)
    target = next(n["id"] for n in kafka_cluster.nodes if n["id"] != home)
    broker = kafka_cluster.runner.broker

    def state() -> int:
        """The error a group op gets now on the serving node (0: served)."""
        from kafkette.coordinator.runtime.error_codes import CoordinatorError

        try:
            broker.coordinator.shard_for(group)
        except CoordinatorError as exc:
            return exc.code
        return 0

    from kafkette.coordinator.group.group_shard import GroupCoordinatorShard

    during_replay: list[int] = []
    real_init = GroupCoordinatorShard.__init__

    def init(self, *args, **kwargs):  # the load's new shard: what a request gets meanwhile
        if not during_replay:
            during_replay.append(state())
        real_init(self, *args, **kwargs)

    async def probe() -> list[int]:
        coord = broker.coordinator
        p = coord.partition_for(group)
        SERVING_NODE.set(target)
        codes = []
        coord.resign(p, target)
        codes.append(state())
        GroupCoordinatorShard.__init__ = init
        try:
            await coord.elect(p, target)
        finally:
            GroupCoordinatorShard.__init__ = real_init
        codes += during_replay
        codes.append(state())
        return codes

    assert kafka_cluster.runner.run(probe()) == [
        ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress, 0]
    assert kafka_cluster.coordinator_of(group) == target


def test_metadata_leaders_of_consumer_offsets_are_the_coordinators(kafka_cluster):
    group = "billing"
    kafka_cluster.move_coordinator(group, 3)
    broker = kafka_cluster.runner.broker
    owners = kafka_cluster.runner.run(lambda: dict(broker.coordinator.owners))
    r = metadata(kafka_cluster.bootstrap.split(",")[0], "__consumer_offsets")
    assert {p.partition_index: p.leader_id for p in r.topics[0].partitions} == owners
    assert set(owners.values()) == {1, 2, 3}
