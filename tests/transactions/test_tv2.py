"""Transaction version 2 (KIP-890 part 2) over raw sockets: no installable client speaks it
(Java 3.9.1 sends EndTxn v4 at most, librdkafka 2.16 v1, aiokafka v0), so these tests send
the versions a Kafka 4.x Java producer sends: Produce v12 without AddPartitionsToTxn (the broker
adds the partition), TxnOffsetCommit v5 without AddOffsetsToTxn, EndTxn v5 (the epoch is bumped
per transaction and returned)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch, iter_batches
from tests.wire import WireClient, entity

from .helpers import FAST, create_topic, txn_offset_commit
from .test_fencing import _init

PRODUCE, FETCH, OFFSET_FETCH, API_VERSIONS, END_TXN, TXN_OFFSET_COMMIT = 0, 1, 9, 18, 26, 28
ADD_PARTITIONS, DESCRIBE_TXNS = 24, 65
TV2 = {**FAST, "transaction.version": "2"}
TV1 = {**FAST, "transaction.version": "1"}


def _produce(w: WireClient, tid: str, topic: str, pid: int, epoch: int, seq: int,
             value: bytes, version: int = 12) -> int:
    cls = request_type(PRODUCE, version)
    part_cls = item_type(item_type(cls, "topic_data"), "partition_data")
    batch = build_batch([(None, value)], producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, transactional=True)
    tdata = entity(cls, "topic_data", name=topic,
                   partition_data=(make(part_cls, index=0, records=batch),))
    r = w.request(PRODUCE, version, transactional_id=tid, acks=-1,
                  timeout=timedelta(seconds=5), topic_data=(tdata,))
    return r.responses[0].partition_responses[0].error_code


def _end(w: WireClient, tid: str, pid: int, epoch: int, commit: bool, version: int = 5) -> Any:
    return w.request(END_TXN, version, transactional_id=tid, producer_id=pid,
                     producer_epoch=epoch, committed=commit)


def _txn_commit(w: WireClient, tid: str, pid: int, epoch: int, offset: int) -> int:
    return txn_offset_commit(w, tid, pid, epoch, offset, group="tv2-group", version=5)


def _describe(w: WireClient, tid: str) -> Any:
    return w.request(DESCRIBE_TXNS, 0, transactional_ids=(tid,)).transaction_states[0]


def _batches(w: WireClient, topic: str) -> list[Any]:
    cls = request_type(FETCH, 4)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    r = w.request(FETCH, 4, replica_id=-1, max_wait=timedelta(0), min_bytes=0,
                  max_bytes=1 << 20, isolation_level=0, topics=(make(
                      topic_cls, topic=topic, partitions=(make(
                          part_cls, partition=0, fetch_offset=0,
                          partition_max_bytes=1 << 20),)),))
    raw = r.responses[0].partitions[0].records or b""
    return [header for header, _raw in iter_batches(raw)]


def _committed(w: WireClient) -> int:
    cls = request_type(OFFSET_FETCH, 7)
    topic_cls = item_type(cls, "topics")
    r = w.request(OFFSET_FETCH, 7, group_id="tv2-group", require_stable=True,
                  topics=(make(topic_cls, name="in", partition_indexes=(0,)),))
    part = r.topics[0].partitions[0]
    return part.error_code or part.committed_offset


def _wait_complete(w: WireClient, tid: str) -> Any:
    deadline = time.monotonic() + 5
    while True:
        state = _describe(w, tid)
        if state.transaction_state.startswith("Complete") or time.monotonic() > deadline:
            return state
        time.sleep(0.02)


def test_api_versions_advertise_the_finalized_transaction_version(kafka_broker_factory) -> None:
    for level, end_txn_max in ((TV2, 5), (TV1, 4)):
        broker = kafka_broker_factory(level)
        with WireClient(broker.bootstrap) as w:
            r = w.request(API_VERSIONS, 3, client_software_name="t", client_software_version="1")
        maxes = {k.api_key: k.max_version for k in r.api_keys}
        assert maxes[END_TXN] == end_txn_max
        assert maxes[ADD_PARTITIONS] == (5 if end_txn_max == 5 else 3)
        assert maxes[TXN_OFFSET_COMMIT] == (5 if end_txn_max == 5 else 4)
        assert [(f.name, f.min_version, f.max_version) for f in r.supported_features
                if f.name == "transaction.version"] == [("transaction.version", 0, 2)]
        level_ = int(level["transaction.version"])
        assert [(f.name, f.min_version_level, f.max_version_level)
                for f in r.finalized_features if f.name == "transaction.version"] == \
            [("transaction.version", level_, level_)]
        assert r.finalized_features_epoch >= 0


def test_transaction_version_2_end_to_end(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(TV2)
    create_topic(broker.bootstrap, "out")
    create_topic(broker.bootstrap, "in")
    with WireClient(broker.bootstrap) as w:
        error, pid, epoch = _init(w, "tv2-app", version=5)
        assert error == 0
        # no AddPartitionsToTxn: Produce v12 adds the partition, TxnOffsetCommit v5 the group's
        assert _produce(w, "tv2-app", "out", pid, epoch, 0, b"committed") == 0
        assert _txn_commit(w, "tv2-app", pid, epoch, 5) == 0
        state = _describe(w, "tv2-app")
        assert state.transaction_state == "Ongoing"
        assert {t.topic for t in state.topics} == {"out", "__consumer_offsets"}
        assert _committed(w) == 88  # UNSTABLE_OFFSET_COMMIT while the commit is pending
        r = _end(w, "tv2-app", pid, epoch, True)
        assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, epoch + 1)
        state = _wait_complete(w, "tv2-app")
        assert (state.transaction_state, state.producer_epoch) == ("CompleteCommit", epoch + 1)
        # a retried EndTxn (the response was lost) carries the old epoch: answered again
        r = _end(w, "tv2-app", pid, epoch, True)
        assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, epoch + 1)
        # the marker carries the bumped epoch; the committed offset is visible
        batches = _batches(w, "out")
        assert [(b.is_control, b.producer_epoch) for b in batches] == \
            [(False, epoch), (True, epoch + 1)]
        assert _committed(w) == 5
        # the old epoch is fenced; the next transaction uses the bumped one (sequence 0)
        assert _produce(w, "tv2-app", "out", pid, epoch, 1, b"zombie") in (47, 90)
        assert _produce(w, "tv2-app", "out", pid, epoch + 1, 0, b"aborted") == 0
        assert _txn_commit(w, "tv2-app", pid, epoch + 1, 9) == 0
        r = _end(w, "tv2-app", pid, epoch + 1, False)
        assert (r.error_code, r.producer_epoch) == (0, epoch + 2)
        assert _wait_complete(w, "tv2-app").transaction_state == "CompleteAbort"
        assert _committed(w) == 5  # the aborted commit was dropped
        assert [(b.is_control, b.producer_epoch) for b in _batches(w, "out")][2:] == \
            [(False, epoch + 1), (True, epoch + 2)]
        # EndTxn with a stale epoch on an Ongoing transaction is fenced
        assert _produce(w, "tv2-app", "out", pid, epoch + 2, 0, b"x") == 0
        assert _end(w, "tv2-app", pid, epoch + 1, True).error_code == 90  # PRODUCER_FENCED
        # a transaction version 1 client (EndTxn v4) still works on the same broker
        error, pid1, epoch1 = _init(w, "tv1-app", version=4)
        assert _produce(w, "tv1-app", "out", pid1, epoch1, 0, b"v1", version=9) == 48
        cls = request_type(ADD_PARTITIONS, 3)
        topic_cls = item_type(cls, "v3_and_below_topics")
        w.request(ADD_PARTITIONS, 3, v3_and_below_transactional_id="tv1-app",
                  v3_and_below_producer_id=pid1, v3_and_below_producer_epoch=epoch1,
                  v3_and_below_topics=(make(topic_cls, name="out", partitions=(0,)),))
        assert _produce(w, "tv1-app", "out", pid1, epoch1, 0, b"v1", version=9) == 0
        assert _end(w, "tv1-app", pid1, epoch1, True, version=4).error_code == 0
        assert _wait_complete(w, "tv1-app").producer_epoch == epoch1  # no bump


def test_batched_add_partitions_verify_only(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(TV2)
    create_topic(broker.bootstrap, "out", partitions=1)
    with WireClient(broker.bootstrap) as w:
        _error, pid, epoch = _init(w, "batch-app", version=5)
        cls = request_type(ADD_PARTITIONS, 5)
        txn_cls = item_type(cls, "transactions")
        topic_cls = item_type(txn_cls, "topics")

        def add(verify: bool, e: int = epoch) -> list[int]:
            r = w.request(ADD_PARTITIONS, 5, transactions=(make(
                txn_cls, transactional_id="batch-app", producer_id=pid, producer_epoch=e,
                verify_only=verify, topics=(make(topic_cls, name="out", partitions=(0,)),)),))
            return [p.partition_error_code for t in r.results_by_transaction
                    for tr in t.topic_results for p in tr.results_by_partition]

        assert add(True) == [120]  # TRANSACTION_ABORTABLE: not in the transaction
        assert add(False) == [0]
        assert add(True) == [0]
        assert add(True, epoch + 5) == [90]  # PRODUCER_FENCED


def test_produce_v12_adds_nothing_below_transaction_version_2(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(TV1)
    create_topic(broker.bootstrap, "out")
    with WireClient(broker.bootstrap) as w:
        _error, pid, epoch = _init(w, "v1-app", version=5)
        assert _produce(w, "v1-app", "out", pid, epoch, 0, b"x") == 48  # INVALID_TXN_STATE
        r = w.request(66, 0, state_filters=(), producer_id_filters=())
        assert [(t.transactional_id, t.transaction_state) for t in r.transaction_states] == \
            [("v1-app", "Empty")]  # (DescribeTransactions' start time -1 is beyond kio)


def test_transaction_version_2_survives_a_restart(kafka_broker_factory) -> None:
    broker = kafka_broker_factory(TV2)
    create_topic(broker.bootstrap, "out")
    with WireClient(broker.bootstrap) as w:
        _error, pid, epoch = _init(w, "restart-app", version=5)
        assert _produce(w, "restart-app", "out", pid, epoch, 0, b"a") == 0
        assert _end(w, "restart-app", pid, epoch, True).producer_epoch == epoch + 1
        _wait_complete(w, "restart-app")
    broker.restart()
    with WireClient(broker.bootstrap) as w:
        deadline = time.monotonic() + 10
        while (r := _end(w, "restart-app", pid, epoch, True)).error_code in (15, 16) and \
                time.monotonic() < deadline:
            time.sleep(0.05)  # the coordinator is loading
        # replayed as a version-2 transaction: the retry with the old epoch is answered
        assert (r.error_code, r.producer_id, r.producer_epoch) == (0, pid, epoch + 1)
        assert _produce(w, "restart-app", "out", pid, epoch + 1, 0, b"b") == 0
        assert _end(w, "restart-app", pid, epoch + 1, True).producer_epoch == epoch + 2
