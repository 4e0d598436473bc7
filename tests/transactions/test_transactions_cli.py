"""``kafkette transactions`` as kafka-transactions.sh: find-hanging reports a transaction whose
coordinator does not hold the partition (a transactional batch written without
AddPartitionsToTxn while transaction.partition.verification.enable=false, as in Kafka) and not
an open or abandoned one it does hold; abort writes its ABORT marker so the last stable offset
moves on; list and describe find the right brokers of a three-node cluster."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from datetime import timedelta

import pytest

from kafkette.broker.cli.main import main as kafkette
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch
from tests.wire import WireClient, entity

from .helpers import FAST, create_topic, read_all, txn_producer
from .test_fencing import _init
from .test_isolation import _list_offset

UNVERIFIED = {**FAST, "transaction.partition.verification.enable": "false"}
READ_COMMITTED = 1
HANGING_HEADER = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                  "StartOffset", "LastTimestamp", "Duration(min)"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[list[str]], str]:
    """(exit status, stdout cells by line (tab-separated, as Kafka's tables), stderr)."""
    capsys.readouterr()
    code = kafkette(["transactions", *argv])
    captured = capsys.readouterr()
    rows = [[cell.strip() for cell in line.split("\t")[:-1]]
            for line in captured.out.splitlines()]
    return code, rows, captured.err


def produce_unadded(bootstrap: str, tid: str, topic: str, partition: int, pid: int, epoch: int,
                    value: bytes = b"zombie") -> int:
    """A transactional batch by Produce v9 (no implicit add of transaction version 2) into a
    partition the producer's transaction never added; the partition's error code."""
    cls = request_type(0, 9)
    part_cls = item_type(item_type(cls, "topic_data"), "partition_data")
    batch = build_batch([(None, value)], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                        transactional=True, base_timestamp=int(time.time() * 1000))
    with WireClient(bootstrap) as w:
        r = w.request(0, 9, transactional_id=tid, acks=-1, timeout=timedelta(seconds=5),
                      topic_data=(entity(cls, "topic_data", name=topic, partition_data=(
                          make(part_cls, index=partition, records=batch),)),))
    return r.responses[0].partition_responses[0].error_code


def produce_plain(bootstrap: str, topic: str, partition: int, value: bytes) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce(topic, value, partition=partition)
    assert producer.flush(10) == 0


def test_find_hanging_then_abort_moves_the_last_stable_offset(kafka_broker_factory, capsys):
    broker = kafka_broker_factory(UNVERIFIED)
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "hang", partitions=2)
    with WireClient(bootstrap) as w:
        _error, pid, epoch = _init(w, "zombie-app")
    assert produce_unadded(bootstrap, "zombie-app", "hang", 0, pid, epoch) == 0
    produce_plain(bootstrap, "hang", 0, b"after")
    live = txn_producer(bootstrap, "live-app")  # open, and its coordinator holds hang-1
    live.init_transactions(20)
    live.begin_transaction()
    live.produce("hang", b"open", partition=1)
    assert live.flush(10) == 0
    assert _list_offset(bootstrap, "hang", READ_COMMITTED) == 0  # held by the hanging batch
    time.sleep(0.01)

    code, rows, _ = run(capsys, "--bootstrap-server", bootstrap, "find-hanging", "--topic",
                        "hang", "--max-transaction-timeout", "0")
    assert code == 0 and rows[0] == HANGING_HEADER
    assert [r[:6] for r in rows[1:]] == [["hang", "0", str(pid), str(epoch), "-1", "0"]]
    # the default timeout (15 minutes) leaves this young transaction out
    code, rows, _ = run(capsys, "--bootstrap-server", bootstrap, "find-hanging", "--topic",
                        "hang")
    assert (code, rows) == (0, [HANGING_HEADER])
    code, rows, _ = run(capsys, "--bootstrap-server", bootstrap, "describe-producers",
                        "--topic", "hang", "--partition", "0")
    assert rows[0] == ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                       "LastTimestamp", "CurrentTransactionStartOffset"]
    assert [r[0] for r in rows[1:] if r[-1] == "0"] == [str(pid)]

    code, rows, err = run(capsys, "--bootstrap-server", bootstrap, "abort", "--topic", "hang",
                          "--partition", "0", "--start-offset", "7")
    assert (code, rows) == (1, [])
    assert err == "Could not find any open transactions starting at offset 7 on partition " \
                  "hang-0\n"
    code, rows, err = run(capsys, "--bootstrap-server", bootstrap, "abort", "--topic", "hang",
                          "--partition", "0", "--start-offset", "0")
    assert (code, rows, err) == (0, [], "")
    # zombie batch 0, "after" 1, the ABORT marker 2: nothing is unstable any more
    assert _list_offset(bootstrap, "hang", READ_COMMITTED) == 3
    assert read_all(bootstrap, "hang", "read_committed", expect=1) == [b"after"]
    code, rows, _ = run(capsys, "--bootstrap-server", bootstrap, "find-hanging", "--topic",
                        "hang", "--max-transaction-timeout", "0")
    assert (code, rows) == (0, [HANGING_HEADER])
    live.abort_transaction(20)


def test_abort_by_producer_id_and_refusals(kafka_broker_factory, capsys):
    broker = kafka_broker_factory(UNVERIFIED)
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "old")
    with WireClient(bootstrap) as w:
        _error, pid, epoch = _init(w, "old-app")
    assert produce_unadded(bootstrap, "old-app", "old", 0, pid, epoch) == 0
    base = ("--bootstrap-server", bootstrap, "abort", "--topic", "old", "--partition", "0")
    code, _, err = run(capsys, *base)
    assert code == 1 and err.startswith("The transaction to abort must be identified either "
                                        "with --start-offset")
    code, _, err = run(capsys, *base, "--producer-id", str(pid))
    assert (code, err) == (1, "Missing required argument --producer-epoch\n")
    code, _, err = run(capsys, *base, "--producer-id", str(pid), "--producer-epoch", str(epoch))
    assert (code, err) == (1, "Missing required argument --coordinator-epoch\n")
    code, _, err = run(capsys, *base, "--producer-id", str(pid), "--producer-epoch", str(epoch),
                       "--coordinator-epoch", "-1")
    assert (code, err) == (0, "")
    assert _list_offset(bootstrap, "old", READ_COMMITTED) == 2
    code, _, err = run(capsys, "--bootstrap-server", bootstrap, "find-hanging")
    assert code == 1 and err == ("The `find-hanging` command requires either --topic or "
                                 "--broker-id to limit the scope of the search\n")
    code, _, err = run(capsys, "--bootstrap-server", bootstrap, "find-hanging", "--broker-id",
                       "1", "--partition", "0")
    assert (code, err) == (1, "The --partition argument requires --topic to be provided\n")
    code, _, err = run(capsys, "--bootstrap-server", bootstrap, "describe-producers", "--topic",
                       "nope", "--partition", "0")
    assert code == 1 and err.startswith("Failed to describe producers for partition nope-0 on "
                                        "leader: This server does not host this "
                                        "topic-partition.")


def test_verified_produce_leaves_nothing_hanging(kafka_broker_factory, capsys):
    """With verification on (the default) the unadded batch is refused; a producer killed
    mid-transaction is not hanging: its coordinator holds the partition and aborts it at the
    transaction timeout, after which the last stable offset moves on."""
    broker = kafka_broker_factory(FAST)
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "k")
    with WireClient(bootstrap) as w:
        _error, pid, epoch = _init(w, "verified-app")
    assert produce_unadded(bootstrap, "verified-app", "k", 0, pid, epoch) == 48  # INVALID_TXN_STATE
    script = textwrap.dedent(f"""
        import sys, time
        from confluent_kafka import Producer
        p = Producer({{"bootstrap.servers": "{bootstrap}", "transactional.id": "killed-app",
                      "transaction.timeout.ms": 2000, "linger.ms": 0}})
        p.init_transactions(20)
        p.begin_transaction()
        p.produce("k", b"lost")
        p.flush(10)
        print("ready", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    finally:
        child.kill()
        child.wait()
    assert _list_offset(bootstrap, "k", READ_COMMITTED) == 0
    code, rows, _ = run(capsys, "--bootstrap-server", bootstrap, "find-hanging", "--topic", "k",
                        "--max-transaction-timeout", "0")
    assert (code, rows) == (0, [HANGING_HEADER])
    deadline = time.monotonic() + 15
    while _list_offset(bootstrap, "k", READ_COMMITTED) == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _list_offset(bootstrap, "k", READ_COMMITTED) == 2  # "lost" 0, ABORT marker 1


def _coordinator(bootstrap: str, tid: str) -> int:
    with WireClient(bootstrap.split(",")[0]) as w:
        for _ in range(100):
            r = w.request(10, 3, key=tid, key_type=1)
            if r.error_code == 0:
                return r.node_id
            time.sleep(0.05)
    raise AssertionError(f"no coordinator for {tid}")


def test_list_and_describe_on_three_nodes(kafka_cluster_factory, capsys):
    cluster = kafka_cluster_factory(3, UNVERIFIED)
    first = cluster.bootstrap.split(",")[0]  # the tool is given one node, or all of them
    create_topic(cluster.bootstrap, "spread", partitions=3)
    coordinators = {tid: _coordinator(first, tid) for tid in ("app-a", "app-b", "app-c")}
    producers = []
    for tid in coordinators:
        producer = txn_producer(cluster.bootstrap, tid)
        producer.init_transactions(20)
        producer.begin_transaction()
        producer.produce("spread", b"x", partition=0)
        assert producer.flush(10) == 0
        producers.append(producer)

    code, rows, _ = run(capsys, "--bootstrap-server", cluster.bootstrap, "list")
    assert code == 0 and rows[0] == ["TransactionalId", "Coordinator", "ProducerId",
                                     "TransactionState"]
    assert sorted((r[0], r[3]) for r in rows[1:]) == [(tid, "Ongoing") for tid in coordinators]
    for tid, node in coordinators.items():
        code, rows, err = run(capsys, "--bootstrap-server", first, "describe",
                              "--transactional-id", tid)
        assert code == 0, err
        assert rows[0][0] == "CoordinatorId" and rows[0][7] == "TransactionDurationMs"
        assert rows[1][0] == str(node) and rows[1][1] == tid and rows[1][4] == "Ongoing"
        assert rows[1][-1] == "spread-0"

    # a hanging transaction on a partition led by another node: found and aborted there
    nodes = {n["id"]: f"{n['host']}:{n['port']}" for n in cluster.nodes}
    first_id = next(i for i, address in nodes.items() if address == first)
    leader = cluster.leader_of("spread", 2)
    if leader == first_id:
        leader = next(i for i in nodes if i != first_id)
        cluster.move_leader("spread", 2, leader)
    with WireClient(first) as w:
        _error, pid, epoch = _init(w, "stray-app")
    assert produce_unadded(nodes[leader], "stray-app", "spread", 2, pid, epoch) == 0
    time.sleep(0.01)
    code, rows, _ = run(capsys, "--bootstrap-server", first, "find-hanging", "--broker-id",
                        str(leader), "--max-transaction-timeout", "0")
    assert code == 0 and [r[:3] for r in rows[1:]] == [["spread", "2", str(pid)]]
    code, _, err = run(capsys, "--bootstrap-server", first, "abort", "--topic", "spread",
                       "--partition", "2", "--start-offset", "0")
    assert (code, err) == (0, "")
    code, rows, _ = run(capsys, "--bootstrap-server", first, "find-hanging", "--topic",
                        "spread", "--max-transaction-timeout", "0")
    assert (code, rows) == (0, [HANGING_HEADER])
    for producer in producers:
        producer.abort_transaction(20)
