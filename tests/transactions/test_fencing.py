"""Producer fencing, transaction timeouts and transactional offsets (confluent-kafka and the
raw wire client at the versions kafka-python and aiokafka send)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.wire import WireClient

from .helpers import FAST, create_topic, read_all, txn_offset_commit, txn_producer
from .test_isolation import _list_offset

INIT_PRODUCER_ID, ADD_OFFSETS, END_TXN, OFFSET_FETCH = 22, 25, 26, 9
UNSTABLE_OFFSET_COMMIT, PRODUCER_FENCED, INVALID_PRODUCER_EPOCH = 88, 90, 47
CONCURRENT_TRANSACTIONS = 51
DELETE_GROUPS = 42


def test_zombie_producer_is_fenced(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "z", partitions=2)
    zombie = txn_producer(broker.bootstrap, "zombie-app")
    zombie.init_transactions(20)
    zombie.begin_transaction()
    zombie.produce("z", b"zombie-0")
    zombie.flush(10)
    successor = txn_producer(broker.bootstrap, "zombie-app")
    successor.init_transactions(20)  # aborts the zombie's open transaction, bumps the epoch
    zombie.produce("z", b"zombie-1", partition=0)
    zombie.produce("z", b"zombie-2", partition=1)  # a partition its transaction never had
    with pytest.raises(KafkaException) as failed:
        zombie.commit_transaction(20)
    assert failed.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                           KafkaError.INVALID_PRODUCER_EPOCH)
    successor.begin_transaction()
    successor.produce("z", b"successor")
    successor.commit_transaction(20)
    assert read_all(broker.bootstrap, "z", "read_committed", partitions=2) == [b"successor"]
    # no hanging transaction: the zombie's writes were refused, the LSO is the log end
    assert _list_offset(broker.bootstrap, "z", 1, partition=1) == \
        _list_offset(broker.bootstrap, "z", 0, partition=1)


def _init(w: WireClient, tid: str, version: int = 4, timeout_ms: int = 60_000,
          pid: int = -1, epoch: int = -1) -> tuple[int, int, int]:
    fields = dict(transactional_id=tid, transaction_timeout=timeout_ms)
    if version >= 3:
        fields.update(producer_id=pid, producer_epoch=epoch)
    for _ in range(100):
        r = w.request(INIT_PRODUCER_ID, version, **fields)
        if r.error_code not in (15, CONCURRENT_TRANSACTIONS):  # not yet loaded / completing
            return r.error_code, r.producer_id, r.producer_epoch
        time.sleep(0.05)
    raise AssertionError("InitProducerId kept answering a retriable error")


def test_init_producer_id_bumps_epoch_and_end_txn_fences_the_old_one(kafka_broker) -> None:
    with WireClient(kafka_broker) as w:
        error, pid, epoch = _init(w, "wire-app")  # kafka-python's version
        assert error == 0 and pid >= 0 and epoch == 0
        error, pid2, epoch2 = _init(w, "wire-app", version=0)  # aiokafka's version
        assert (error, pid2, epoch2) == (0, pid, 1)
        old = dict(transactional_id="wire-app", producer_id=pid, producer_epoch=0,
                   committed=True)
        assert w.request(END_TXN, 2, **old).error_code == PRODUCER_FENCED
        assert w.request(END_TXN, 0, **old).error_code == INVALID_PRODUCER_EPOCH
        # the epoch before the current one is a retry of the last init (Kafka's
        # isValidProducerId): answered with the current epoch
        assert _init(w, "wire-app", version=4, pid=pid, epoch=0) == (0, pid, 1)
        assert _init(w, "wire-app", version=4, pid=pid, epoch=1) == (0, pid, 2)
        assert _init(w, "wire-app", version=4, pid=pid, epoch=0)[0] == PRODUCER_FENCED
        assert _init(w, "wire-app", version=3, pid=pid, epoch=0)[0] == INVALID_PRODUCER_EPOCH


def test_open_transaction_is_aborted_after_its_timeout(kafka_broker_factory) -> None:
    clock = ManualClock()
    broker = kafka_broker_factory(FAST, clock=clock)
    create_topic(broker.bootstrap, "slow")
    producer = txn_producer(broker.bootstrap, "slow-app", **{"transaction.timeout.ms": 60_000})
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("slow", b"never-committed")
    producer.flush(10)
    assert _list_offset(broker.bootstrap, "slow", 1) == 0
    broker.run(clock.advance, 60_001)
    deadline = time.monotonic() + 10
    while _list_offset(broker.bootstrap, "slow", 1) != 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # the abort's markers are written after its PrepareAbort is durable
    assert _list_offset(broker.bootstrap, "slow", 1) == 2  # record + ABORT marker
    with pytest.raises(KafkaException):
        producer.commit_transaction(20)
    assert read_all(broker.bootstrap, "slow", "read_committed", timeout=2) == []
    assert read_all(broker.bootstrap, "slow", "read_uncommitted") == [b"never-committed"]


def _txn_commit(w: WireClient, tid: str, pid: int, epoch: int, offset: int) -> int:
    return txn_offset_commit(w, tid, pid, epoch, offset, group="stable-group", version=3)


def _fetch(w: WireClient, require_stable: bool) -> tuple[int, int]:
    cls = request_type(OFFSET_FETCH, 7)
    topic_cls = item_type(cls, "topics")
    r = w.request(OFFSET_FETCH, 7, group_id="stable-group", require_stable=require_stable,
                  topics=(make(topic_cls, name="in", partition_indexes=(0,)),))
    part = r.topics[0].partitions[0]
    return part.error_code, part.committed_offset


def _pending_txn_commit(w: WireClient, tid: str, offset: int) -> dict:
    """A transaction of ``tid`` with a pending TxnOffsetCommit of stable-group's in-0;
    the producer ids of its requests."""
    _error, pid, epoch = _init(w, tid)
    ids = dict(transactional_id=tid, producer_id=pid, producer_epoch=epoch)
    assert w.request(ADD_OFFSETS, 3, group_id="stable-group", **ids).error_code == 0
    assert _txn_commit(w, tid, pid, epoch, offset) == 0
    assert _fetch(w, require_stable=True) == (UNSTABLE_OFFSET_COMMIT, -1)
    return ids


def _wait_loaded(w: WireClient) -> None:
    for _ in range(100):
        if _fetch(w, require_stable=True)[0] != 14:  # COORDINATOR_LOAD_IN_PROGRESS
            return
        time.sleep(0.05)


def test_require_stable_while_a_transactional_commit_is_pending(kafka_broker_factory) -> None:
    """Scenario 39b: UNSTABLE_OFFSET_COMMIT while TxnOffsetCommit waits for its marker, also
    after a restart (pending offsets are replayed); COMMIT makes them visible, ABORT drops
    them."""
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "in")
    with WireClient(broker.bootstrap) as w:
        ids = _pending_txn_commit(w, "stable-app", 5)
        pid, epoch = ids["producer_id"], ids["producer_epoch"]
        assert _fetch(w, require_stable=False) == (0, -1)
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        _wait_loaded(w)
        assert _fetch(w, require_stable=True) == (UNSTABLE_OFFSET_COMMIT, -1)
        assert w.request(END_TXN, 3, committed=True, **ids).error_code == 0
        deadline = time.monotonic() + 10
        while _fetch(w, require_stable=True) != (0, 5) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _fetch(w, require_stable=True) == (0, 5)
        # the next transaction aborts: its offset never shows
        for _ in range(100):
            error = w.request(ADD_OFFSETS, 3, group_id="stable-group", **ids).error_code
            if error != CONCURRENT_TRANSACTIONS:
                break
            time.sleep(0.05)
        assert error == 0
        assert _txn_commit(w, "stable-app", pid, epoch, 9) == 0
        assert w.request(END_TXN, 3, committed=False, **ids).error_code == 0
        while _fetch(w, require_stable=True)[0] != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _fetch(w, require_stable=True) == (0, 5)


def test_transactions_cli_and_admin_apis(kafka_broker_factory) -> None:
    import argparse
    import io

    from kafkette.broker.cli import transactions_command

    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "cli")
    producer = txn_producer(broker.bootstrap, "cli-app")
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("cli", b"x")
    producer.flush(10)

    def run(action: str, **extra: str) -> str:
        out = io.StringIO()
        args = argparse.Namespace(bootstrap_server=broker.bootstrap, action=action, **extra)
        assert transactions_command.run(args, out) == 0
        return out.getvalue()

    listed = run("list").splitlines()
    assert listed[0].split() == ["TransactionalId", "Coordinator", "ProducerId",
                                 "TransactionState"]
    assert listed[1].split()[0] == "cli-app" and listed[1].split()[-1] == "Ongoing"
    described = run("describe", transactional_id="cli-app").splitlines()[1].split()
    assert described[4] == "Ongoing" and described[-1] == "cli-0"
    producer.commit_transaction(20)  # answered once PrepareCommit is durable; markers follow
    deadline = time.monotonic() + 10
    while run("list").splitlines()[1].split()[-1] != "CompleteCommit" and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert run("list").splitlines()[1].split()[-1] == "CompleteCommit"
    with WireClient(broker.bootstrap) as w:
        missing = transactions_command.describe_transaction(w, "nobody")
        assert missing["error"] == 105 and missing["start_ms"] == -1  # TRANSACTIONAL_ID_NOT_FOUND
        r = w.request(66, 1, state_filters=("Ongoing", "Bogus"), producer_id_filters=(),
                      duration_filter=-1)
        assert r.unknown_state_filters == ("Bogus",) and r.transaction_states == ()


def _produce_txn(w: WireClient, tid: str, topic: str, pid: int, epoch: int) -> int:
    from datetime import timedelta

    from kafkette.protocol.records import build_batch
    from tests.wire import entity

    cls = request_type(0, 9)
    part_cls = item_type(item_type(cls, "topic_data"), "partition_data")
    batch = build_batch([(None, b"v")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                        transactional=True)
    tdata = entity(cls, "topic_data", name=topic,
                   partition_data=(make(part_cls, index=0, records=batch),))
    r = w.request(0, 9, transactional_id=tid, acks=-1, timeout=timedelta(seconds=5),
                  topic_data=(tdata,))
    return r.responses[0].partition_responses[0].error_code


def test_produce_is_verified_against_the_transaction(kafka_broker_factory) -> None:
    """A transactional batch into a partition its transaction never added is refused
    (INVALID_TXN_STATE), so no zombie leaves a hanging transaction behind."""
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "v")
    with WireClient(broker.bootstrap) as w:
        _error, pid, epoch = _init(w, "verify-app")
        assert _produce_txn(w, "verify-app", "v", pid, epoch) == 48  # INVALID_TXN_STATE
        assert _list_offset(broker.bootstrap, "v", 1) == 0  # nothing was appended
        cls = request_type(24, 3)
        topic_cls = item_type(cls, "v3_and_below_topics")
        r = w.request(24, 3, v3_and_below_transactional_id="verify-app",
                      v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                      v3_and_below_topics=(make(topic_cls, name="v", partitions=(0,)),))
        assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        assert _produce_txn(w, "verify-app", "v", pid, epoch) == 0
        assert _list_offset(broker.bootstrap, "v", 1) == 0  # open: the LSO holds


def test_delete_groups_drops_pending_transactional_offsets(kafka_broker_factory) -> None:
    """Kafka's deleteAllOffsets: DeleteGroups of a group whose only offset is a pending
    TxnOffsetCommit tombstones it, so the COMMIT marker that follows materialises nothing,
    also after a restart."""
    broker = kafka_broker_factory(FAST)
    create_topic(broker.bootstrap, "in")
    with WireClient(broker.bootstrap) as w:
        ids = _pending_txn_commit(w, "deleting-app", 5)
        deleted = w.request(DELETE_GROUPS, 2, groups_names=("stable-group",))
        assert [(r.group_id, r.error_code) for r in deleted.results] == [("stable-group", 0)]
        assert _fetch(w, require_stable=True) == (0, -1)  # nothing pending any more
        assert w.request(END_TXN, 3, committed=True, **ids).error_code == 0
        time.sleep(0.3)  # the COMMIT marker reaches __consumer_offsets after the PrepareCommit
        assert _fetch(w, require_stable=True) == (0, -1)
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        _wait_loaded(w)
        assert _fetch(w, require_stable=True) == (0, -1)
