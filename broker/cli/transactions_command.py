"""``kafkette transactions`` (kafka-transactions.sh) over the wire: ``list``, ``describe``,
``describe-producers``, ``find-hanging`` and ``abort``, with Kafka's flags, tables (each cell
padded to its column and followed by a tab) and errors ("Failed to ...: <cause>. Enable debug
logging for additional detail." on stderr, exit status 1).

``find-hanging`` is Kafka's FindHangingTransactionsCommand: the open transactions the partition
leaders report (DescribeProducers) that have been open longer than --max-transaction-timeout
minutes, whose producer id no coordinator lists (ListTransactions) or whose transaction
(DescribeTransactions) does not hold the partition: the coordinator will never write their
marker. ``abort`` writes that marker (WriteTxnMarkers ABORT to the leader), for the producer
whose transaction starts at --start-offset (or the given producer id and epochs).

Its command line is parsed by broker/cli/main.py (which must not import this module to list it).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from .admin_client import AdminError
from .client_security import ClientConfigError, read_command_config
from .transactions_admin import (
    ProducerRow,
    TopicPartition,
    TransactionsAdmin,
    TxnAdminError,
    describe_transaction,
    error_message,
)

__all__ = ["describe_transaction", "run"]

PRODUCER_HEADERS = ("ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
                    "LastTimestamp", "CurrentTransactionStartOffset")
DESCRIBE_HEADERS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                    "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
                    "TransactionDurationMs", "TopicPartitions")
LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
HANGING_HEADERS = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                   "StartOffset", "LastTimestamp", "Duration(min)")
MINUTE_MS = 60_000


class Failed(Exception):
    """Kafka's printErrorAndExit: the message goes to stderr, the exit status is 1."""


def _failed(what: str, cause: Exception) -> Failed:
    return Failed(f"{what}: {cause}. Enable debug logging for additional detail.")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    command_config = getattr(args, "command_config", None)
    try:
        settings = read_command_config(command_config)
        with TransactionsAdmin(args.bootstrap_server,
                               client_id=settings.get("client.id", "kafkette-transactions"),
                               security=settings or None) as admin:
            COMMANDS[args.action](admin, args, out)
        return 0
    except Failed as exc:
        print(exc, file=sys.stderr)
        return 1
    except ClientConfigError as exc:
        print(f"kafkette transactions: {exc}", file=sys.stderr)
        return 1
    except (AdminError, OSError) as exc:
        print(f"kafkette transactions: cannot reach {args.bootstrap_server}: {exc}",
              file=sys.stderr)
        return 1


# list / describe ------------------------------------------------------------------------------

def cmd_list(admin: TransactionsAdmin, _args: argparse.Namespace, out: TextIO) -> None:
    try:
        by_broker = admin.list_transactions()
    except TxnAdminError as exc:
        raise _failed("Failed to list transactions", exc) from None
    # Each broker lists the transactions it coordinates; under ``kafkette serve --nodes N``
    # every node answers for the one shared coordinator, so an id is listed once (first broker).
    rows: dict[str, tuple[str, str, str, str]] = {}
    for node, listed in by_broker.items():
        for tid, pid, state in listed:
            rows.setdefault(tid, (tid, str(node), str(pid), state))
    table(LIST_HEADERS, list(rows.values()), out)


def cmd_describe(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    tid = args.transactional_id
    state = admin.describe_transaction(tid)
    if state["error"]:
        raise _failed(f"Failed to describe transaction state of transactional-id `{tid}`",
                      Exception(error_message(state["error"])))
    start = state["start_ms"]
    started, duration = ("None", "None") if start < 0 else \
        (str(start), str(int(time.time() * 1000) - start))
    table(DESCRIBE_HEADERS, [(str(state["coordinator"]), tid, str(state["producer_id"]),
                              str(state["epoch"]), state["state"], str(state["timeout_ms"]),
                              started, duration, ",".join(state["partitions"]))], out)


# describe-producers ---------------------------------------------------------------------------

def cmd_describe_producers(admin: TransactionsAdmin, args: argparse.Namespace,
                           out: TextIO) -> None:
    tp = (args.topic, args.partition)
    try:
        producers = admin.describe_producers([tp], args.broker_id)[tp]
    except TxnAdminError as exc:
        where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
        raise _failed(f"Failed to describe producers for partition {_tp(tp)} on {where}",
                      exc) from None
    table(PRODUCER_HEADERS, [
        (str(p.producer_id), str(p.producer_epoch), str(p.coordinator_epoch),
         str(p.last_sequence), str(p.last_timestamp),
         str(p.txn_start_offset) if p.txn_start_offset >= 0 else "None")
        for p in producers], out)


# abort ----------------------------------------------------------------------------------------

def cmd_abort(admin: TransactionsAdmin, args: argparse.Namespace, _out: TextIO) -> None:
    tp = (args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise Failed("The transaction to abort must be identified either with --start-offset "
                     "(for brokers on 3.0 or above) or with --producer-id, --producer-epoch, "
                     "and --coordinator-epoch (for older brokers)")
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise Failed("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise Failed("Missing required argument --coordinator-epoch")
        # -1 (a transaction hanging before its first marker): 0, at most any leader epoch
        spec = (args.producer_id, args.producer_epoch, max(args.coordinator_epoch, 0))
    else:
        try:
            producers = admin.describe_producers([tp])[tp]
        except TxnAdminError as exc:
            raise _failed(f"Failed to validate producer state for partition {_tp(tp)}",
                          exc) from None
        found = [p for p in producers if p.txn_start_offset == args.start_offset]
        if not found:
            raise Failed(f"Could not find any open transactions starting at offset "
                         f"{args.start_offset} on partition {_tp(tp)}")
        spec = (found[0].producer_id, found[0].producer_epoch,
                max(found[0].coordinator_epoch, 0))
    try:
        admin.abort(tp, *spec)
    except TxnAdminError as exc:
        pid, epoch, coordinator_epoch = spec
        raise _failed(f"Failed to abort transaction AbortTransactionSpec(topicPartition="
                      f"{_tp(tp)}, producerId={pid}, producerEpoch={epoch}, "
                      f"coordinatorEpoch={coordinator_epoch})", exc) from None


# find-hanging ---------------------------------------------------------------------------------

def cmd_find_hanging(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    if args.topic is None and args.broker_id is None:
        raise Failed("The `find-hanging` command requires either --topic or --broker-id to "
                     "limit the scope of the search")
    if args.partition is not None and args.topic is None:
        raise Failed("The --partition argument requires --topic to be provided")
    max_timeout_ms = args.max_transaction_timeout * MINUTE_MS
    partitions = _partitions_to_search(admin, args.topic, args.partition, args.broker_id)
    try:
        described = admin.describe_producers(partitions, args.broker_id) if partitions else {}
    except TxnAdminError as exc:
        raise _failed(f"Failed to describe producers for {len(partitions)} partitions on "
                      f"broker {_optional(args.broker_id)}", exc) from None
    now = int(time.time() * 1000)
    candidates = [(tp, p) for tp, producers in described.items() for p in producers
                  if p.txn_start_offset >= 0 and now - p.last_timestamp > max_timeout_ms]
    hanging = _hanging(admin, candidates) if candidates else []
    table(HANGING_HEADERS, [
        (tp[0], str(tp[1]), str(p.producer_id), str(p.producer_epoch),
         str(p.coordinator_epoch), str(p.txn_start_offset), str(p.last_timestamp),
         str((now - p.last_timestamp) // MINUTE_MS))
        for tp, p in hanging], out)


def _partitions_to_search(admin: TransactionsAdmin, topic: str | None, partition: int | None,
                          broker: int | None) -> list[TopicPartition]:
    if topic is not None and partition is not None:
        return [(topic, partition)]
    try:
        # every topic as Admin.listTopics() lists them: internal topics left out
        topics = admin.topics(None if topic is None else [topic], include_internal=False)
    except TxnAdminError as exc:
        raise _failed("Failed to describe 1 topics", exc) from None
    return [(name, p.partition) for name, parts in topics.items() for p in parts
            if broker is None or broker in p.replicas]


def _hanging(admin: TransactionsAdmin, candidates: list[tuple[TopicPartition, ProducerRow]]
             ) -> list[tuple[TopicPartition, ProducerRow]]:
    """Kafka's filterHangingTransactions: no coordinator lists the producer id, its
    transactional id is not found, or its transaction does not hold the partition."""
    pids = sorted({p.producer_id for _, p in candidates})
    try:
        listed = admin.list_transactions(pids)
    except TxnAdminError as exc:
        raise _failed(f"Failed to list transactions for {len(pids)} producers", exc) from None
    tids = {pid: tid for rows in listed.values() for tid, pid, _state in rows if pid in pids}
    holding: dict[str, set[str] | None] = {}
    for tid in sorted(set(tids.values())):
        state = admin.describe_transaction(tid)
        if state["error"] == 105:  # TRANSACTIONAL_ID_NOT_FOUND: no description
            holding[tid] = None
        elif state["error"]:
                raise _failed(f"Failed to describe {len(tids)} transactions",
                          Exception(error_message(state["error"])))
        else:
            holding[tid] = set(state["partitions"])
    out = []
    for tp, producer in candidates:
        owner = tids.get(producer.producer_id)
        partitions = holding.get(owner) if owner is not None else None
        if partitions is None or _tp(tp) not in partitions:
            out.append((tp, producer))
    return out


# Output ---------------------------------------------------------------------------------------

def table(headers: Sequence[str], rows: list[tuple[str, ...]], out: TextIO) -> None:
    """Kafka's prettyPrintTable: each cell left-aligned to its column's width, then a tab."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    for row in [tuple(headers), *rows]:
        out.write("".join(cell.ljust(w) + "\t" for cell, w in zip(row, widths, strict=True))
                  + "\n")


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _optional(value: int | None) -> str:
    """Java's Optional.toString."""
    return "Optional.empty" if value is None else f"Optional[{value}]"


COMMANDS = {"list": cmd_list, "describe": cmd_describe,
            "describe-producers": cmd_describe_producers, "abort": cmd_abort,
            "find-hanging": cmd_find_hanging}
