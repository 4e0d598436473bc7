"""``kafkette transactions list|describe`` (like kafka-transactions.sh) over the wire.

Its command line is parsed by broker/cli/main.py (which must not import this module to list it)."""

from __future__ import annotations

import argparse
import struct
import sys
from typing import Any, TextIO

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import make
from kafkette.protocol.codec import request_type

from .wire_client import WireClient

DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        with WireClient(args.bootstrap_server, client_id="kafkette-transactions") as w:
            if args.action == "list":
                return _list(w, out)
            return _describe(w, args.transactional_id, out)
    except OSError as exc:
        print(f"kafkette transactions: cannot reach {args.bootstrap_server}: {exc}",
              file=sys.stderr)
        return 1


def _list(w: WireClient, out: TextIO) -> int:
    r = w.request(LIST_TRANSACTIONS, 1, state_filters=(), producer_id_filters=(),
                  duration_filter=-1)
    if r.error_code.value:
        print(f"error: {r.error_code.name}", file=sys.stderr)
        return 1
    rows: list[tuple[str, ...]] = [("TransactionalId", "Coordinator", "ProducerId", "TransactionState")]
    rows += [(t.transactional_id, "1", str(t.producer_id), t.transaction_state)
             for t in sorted(r.transaction_states, key=lambda t: t.transactional_id)]
    _table(rows, out)
    return 0


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


def _describe(w: WireClient, tid: str, out: TextIO) -> int:
    state = describe_transaction(w, tid)
    if state["error"]:
        print(f"error: {ErrorCode(state['error']).name}", file=sys.stderr)
        return 1
    start = state["start_ms"]
    _table([("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
             "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
             "TopicPartitions"),
            ("1", tid, str(state["producer_id"]), str(state["epoch"]), state["state"],
             str(state["timeout_ms"]), str(start) if start >= 0 else "None",
             ",".join(state["partitions"]) or "None")], out)
    return 0


def _table(rows: list[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
