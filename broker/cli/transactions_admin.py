"""The admin calls behind ``kafkette transactions`` (broker/cli/transactions_command.py), each
sent where Kafka's Admin client sends it: DescribeTransactions to the transactional id's
coordinator (FindCoordinator key type 1), ListTransactions to every broker, DescribeProducers
and WriteTxnMarkers (Admin.abortTransaction) to the partition's leader, or to one broker when
asked (``describe-producers --broker-id``). Every connection logs in with the
``--command-config`` properties.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .admin_client import METADATA, OURS, AdminClient, AdminError, CoordinatorMoved, error_name
from .node_connections import NodeConnections
from .wire_client import WireClient

DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
WRITE_TXN_MARKERS = 27
TXN_OURS: dict[int, tuple[int, int]] = {
    **OURS, DESCRIBE_PRODUCERS: (0, 0), DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 1), WRITE_TXN_MARKERS: (1, 1)}
RETRIES, BACKOFF_S = 10, 0.2
TRANSACTION_KEY = 1  # FindCoordinator key type of a transactional id
TopicPartition = tuple[str, int]


class TxnAdminClient(AdminClient):
    known_versions = TXN_OURS


@dataclass(frozen=True, slots=True)
class ProducerRow:
    """One producer of DescribeProducers (Kafka's ProducerState); -1: none known."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]


class TxnAdminError(AdminError):
    """A call answered an error: ``error`` is its name (UPPER_CASE), the message Kafka's."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


class TransactionsAdmin(NodeConnections):
    client_class = TxnAdminClient

    def __init__(self, bootstrap: str, timeout: float = 15,
                 client_id: str = "kafkette-transactions",
                 security: Mapping[str, str] | None = None) -> None:
        super().__init__(bootstrap, timeout, client_id, security)

    def unavailable(self, node: int) -> Exception:
        return TxnAdminError("BROKER_NOT_AVAILABLE", f"Broker {node} is not available")

    # Topics -----------------------------------------------------------------------------------
    def topics(self, names: Iterable[str] | None = None, include_internal: bool = True
               ) -> dict[str, list[PartitionInfo]]:
        """Partitions (leader, replicas) of the named topics, or of every topic (None);
        UNKNOWN_TOPIC_OR_PARTITION for a named topic the cluster does not have."""
        version = self.bootstrap.versions[METADATA]
        wanted = None if names is None else sorted(set(names))
        topic_cls = item_type(request_type(METADATA, version), "topics")
        _, r = self.bootstrap.call(
            METADATA, topics=None if wanted is None else tuple(
                make(topic_cls, name=t, topic_id=None) for t in wanted),
            allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False)
        out: dict[str, list[PartitionInfo]] = {}
        for t in r.topics:
            if t.is_internal and not include_internal:
                continue
            if t.error_code != ErrorCode.none:
                raise TxnAdminError(error_name(t.error_code), error_message(t.error_code))
            out[t.name] = sorted((PartitionInfo(int(p.partition_index), int(p.leader_id),
                                                tuple(int(n) for n in p.replica_nodes))
                                  for p in t.partitions), key=lambda info: info.partition)
        return out

    def leaders(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        wanted = list(tps)
        described = self.topics(t for t, _ in wanted)
        out = {}
        for topic, partition in wanted:
            found = [p for p in described.get(topic, ()) if p.partition == partition]
            if not found:
                raise TxnAdminError("UNKNOWN_TOPIC_OR_PARTITION",
                                    error_message(ErrorCode.unknown_topic_or_partition))
            if found[0].leader < 0:
                raise TxnAdminError("LEADER_NOT_AVAILABLE",
                                    error_message(ErrorCode.leader_not_available))
            out[(topic, partition)] = found[0].leader
        return out

    # Producers ----------------------------------------------------------------------------------
    def describe_producers(self, tps: Iterable[TopicPartition], broker: int | None = None
                           ) -> dict[TopicPartition, list[ProducerRow]]:
        """DescribeProducers of each partition, asked of its leader (or of ``broker``)."""
        wanted = list(tps)
        if broker is not None:
            by_node = {broker: wanted}
        else:
            by_node = {}
            for tp, leader in self.leaders(wanted).items():
                by_node.setdefault(leader, []).append(tp)
        out: dict[TopicPartition, list[ProducerRow]] = {}
        for node, part in sorted(by_node.items()):
            out.update(_describe_producers(self.node(node), part))
        return out

    def abort(self, tp: TopicPartition, producer_id: int, producer_epoch: int,
              coordinator_epoch: int) -> None:
        """WriteTxnMarkers (ABORT) to the partition's leader (Admin.abortTransaction)."""
        for attempt in range(RETRIES):
            leader = self.leaders([tp])[tp]
            error = _write_abort(self.node(leader), tp, producer_id, producer_epoch,
                                 coordinator_epoch)
            if error == ErrorCode.none:
                return
            if error not in (ErrorCode.not_leader_or_follower,
                             ErrorCode.unknown_topic_or_partition) or attempt == RETRIES - 1:
                raise TxnAdminError(error_name(error), error_message(error))
            time.sleep(BACKOFF_S)

    # Transactions -------------------------------------------------------------------------------
    def list_transactions(self, producer_ids: Iterable[int] = ()
                          ) -> dict[int, list[tuple[str, int, str]]]:
        """(transactional id, producer id, state) of the transactions each broker
        coordinates, by broker id (Admin.listTransactions().allByBrokerId())."""
        out = {}
        for node in sorted(self.addresses()):
            _, r = self.node(node).call(LIST_TRANSACTIONS, state_filters=(),
                                        producer_id_filters=tuple(producer_ids),
                                        duration_filter=-1)
            if r.error_code != ErrorCode.none:
                raise TxnAdminError(error_name(r.error_code), error_message(r.error_code))
            out[node] = [(t.transactional_id, int(t.producer_id), t.transaction_state)
                         for t in r.transaction_states]
        return out

    def describe_transaction(self, tid: str) -> dict[str, Any]:
        """DescribeTransactions of ``tid`` on its coordinator (found again when it moved);
        the answer as :func:`describe_transaction` decodes it, plus ``coordinator``."""
        for attempt in range(RETRIES):
            try:
                node, _host, _port = self.bootstrap.find_coordinator(tid, TRANSACTION_KEY)
            except CoordinatorMoved:
                if attempt == RETRIES - 1:
                    raise
                time.sleep(BACKOFF_S)
                continue
            state = describe_transaction(self.node(node), tid)
            if error_name(state["error"]) not in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
                                                  "COORDINATOR_LOAD_IN_PROGRESS") \
                    or attempt == RETRIES - 1:
                state["coordinator"] = node
                return state
            time.sleep(BACKOFF_S)
        raise AssertionError("unreachable")


def _describe_producers(client: AdminClient, tps: list[TopicPartition]
                        ) -> dict[TopicPartition, list[ProducerRow]]:
    topic_cls = item_type(request_type(DESCRIBE_PRODUCERS, 0), "topics")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append(partition)
    _, r = client.call(DESCRIBE_PRODUCERS, topics=tuple(
        make(topic_cls, name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items()))
    out = {}
    for t in r.topics:
        for p in t.partitions:
            if p.error_code != ErrorCode.none:
                raise TxnAdminError(error_name(p.error_code),
                                    p.error_message or error_message(p.error_code))
            out[(t.name, int(p.partition_index))] = [
                ProducerRow(int(a.producer_id), int(a.producer_epoch), int(a.last_sequence),
                            int(a.last_timestamp), int(a.coordinator_epoch),
                            int(a.current_txn_start_offset)) for a in p.active_producers]
    return out


def _write_abort(client: AdminClient, tp: TopicPartition, producer_id: int, producer_epoch: int,
                 coordinator_epoch: int) -> ErrorCode:
    marker_cls = item_type(request_type(WRITE_TXN_MARKERS, 1), "markers")
    topic_cls = item_type(marker_cls, "topics")
    _, r = client.call(WRITE_TXN_MARKERS, markers=(make(
        marker_cls, producer_id=producer_id, producer_epoch=producer_epoch,
        transaction_result=False, coordinator_epoch=coordinator_epoch,
        topics=(make(topic_cls, name=tp[0], partition_indexes=(tp[1],)),)),))
    return ErrorCode(int(r.markers[0].topics[0].partitions[0].error_code))


def error_message(code: Any) -> str:
    """The message of Kafka's exception for an error code (its ``Errors`` description)."""
    return _MESSAGES.get(error_name(code), error_name(code))


_MESSAGES = {
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
    "LEADER_NOT_AVAILABLE": "There is no leader for this topic-partition as we are in the "
                            "middle of a leadership election.",
    "NOT_LEADER_OR_FOLLOWER": "For requests intended only for the leader, this error indicates "
                              "that the broker is not the current leader. For requests "
                              "intended for any replica, this error indicates that the broker "
                              "is not a replica of the topic partition.",
    "CLUSTER_AUTHORIZATION_FAILED": "Cluster authorization failed.",
    "TOPIC_AUTHORIZATION_FAILED": "Topic authorization failed.",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "Transactional Id authorization failed.",
    "INVALID_PRODUCER_EPOCH": "Producer attempted to produce with an old epoch.",
    "TRANSACTIONAL_ID_NOT_FOUND": "The transactionalId could not be found",
    "COORDINATOR_NOT_AVAILABLE": "The coordinator is not available.",
    "NOT_COORDINATOR": "This is not the correct coordinator.",
}


# DescribeTransactions, decoded here -----------------------------------------------------------

def describe_transaction(w: WireClient, tid: str) -> dict[str, Any]:
    """One DescribeTransactions v0 answer, decoded here: kio refuses the start time -1 that
    Kafka (and kafkette) send for a transactional id with no transaction open."""
    w.send(DESCRIBE_TRANSACTIONS, 0, make(request_type(DESCRIBE_TRANSACTIONS, 0),
                                          transactional_ids=(tid,)))
    r = _Reader(w.read_frame())
    r.pos = 4 + 1 + 4  # correlation id, header tags, throttle time
    r.uvarint()  # one state
    state: dict[str, Any] = {"error": r.fixed(">h"), "tid": r.string(), "state": r.string(),
                             "timeout_ms": r.fixed(">i"), "start_ms": r.fixed(">q"),
                             "producer_id": r.fixed(">q"), "epoch": r.fixed(">h")}
    partitions = []
    for _ in range(r.uvarint() - 1):
        topic = r.string()
        partitions += [f"{topic}-{r.fixed('>i')}" for _ in range(r.uvarint() - 1)]
        r.uvarint()  # tags
    state["partitions"] = partitions
    return state


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def fixed(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def string(self) -> str:
        n = self.uvarint() - 1
        self.pos += max(n, 0)
        return self.data[self.pos - max(n, 0):self.pos].decode()
