"""Two static aiokafka consumers: the rebalance's leader is answered before the member that
joined, as on Kafka.

Consumer 1 runs alone; consumer 2 (another static member) joins, the group rebalances and
consumer 1, the leader, sends the assignment. Its SyncGroup waits until the assignment is
durable; consumer 2's SyncGroup, arriving once the group is Stable, is answered at once. Kafka
answers the parked leader at the transition, so by the time consumer 2's ``start()`` and
``seek_to_committed()`` return, consumer 1 has its new assignment — which consumer apps and
their tests rely on.
"""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer
from aiokafka.abc import ConsumerRebalanceListener

from kafkette.broker.testing import BrokerProcess
from kafkette.broker.testing import test_config as broker_config

from .helpers import parts, wait_until

ROUNDS = 50
PARTITIONS = 4


class Recorder(ConsumerRebalanceListener):
    """The partitions of every on_partitions_assigned call, in order."""

    def __init__(self) -> None:
        self.assigned: list[set[int]] = []

    async def on_partitions_revoked(self, revoked) -> None:
        pass

    async def on_partitions_assigned(self, assigned) -> None:
        self.assigned.append(parts(assigned))


def static_consumer(bootstrap: str, topic: str, group: str, instance: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
        enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
        heartbeat_interval_ms=50, retry_backoff_ms=20, metadata_max_age_ms=60000)


async def test_leader_assignment_is_not_overtaken_by_the_joining_member(tmp_path):
    # The broker in its own process, as clients meet it: its loop and the clients' run in
    # parallel, as in the race this guards against.
    b = BrokerProcess(broker_config(str(tmp_path), **{
        "num.partitions": PARTITIONS, "group.initial.rebalance.delay.ms": 0}))
    try:
        await rounds(b.bootstrap)
    finally:
        b.kill()


async def rounds(bootstrap: str) -> None:
    topic = "parked-order"
    for round_ in range(ROUNDS):
        group = f"parked-order-{round_}"
        first, second = Recorder(), Recorder()
        c1 = static_consumer(bootstrap, topic, group, "inst-1")
        c2 = static_consumer(bootstrap, topic, group, "inst-2")
        c1.subscribe([topic], listener=first)
        c2.subscribe([topic], listener=second)
        try:
            await c1.start()
            await wait_until(lambda: first.assigned == [set(range(PARTITIONS))])  # noqa: B023
            await c2.start()
            await c2.seek_to_committed()
            mine = parts(c2.assignment())
            assert mine and len(first.assigned) >= 2, (round_, first.assigned, mine)
            # consumer 1 already runs with the rebalance's assignment: the rest
            assert first.assigned[-1] == set(range(PARTITIONS)) - mine, (
                round_, first.assigned, mine)
        finally:
            await c2.stop()
            await c1.stop()
