"""``kafkette transactions list|describe`` (like kafka-transactions.sh) over the wire."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from .wire_client import WireClient

DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66


def add_parser(sub: Any) -> None:
    txn = sub.add_parser("transactions", help="list and describe transactions")
    txn.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    actions = txn.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every transactional id and its state")
    describe = actions.add_parser("describe", help="state, epoch and partitions of one id")
    describe.add_argument("--transactional-id", required=True)


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
    rows = [("TransactionalId", "Coordinator", "ProducerId", "TransactionState")]
    rows += [(t.transactional_id, "1", str(t.producer_id), t.transaction_state)
             for t in sorted(r.transaction_states, key=lambda t: t.transactional_id)]
    _table(rows, out)
    return 0


def _describe(w: WireClient, tid: str, out: TextIO) -> int:
    state = w.request(DESCRIBE_TRANSACTIONS, 0, transactional_ids=(tid,)).transaction_states[0]
    if state.error_code.value:
        print(f"error: {state.error_code.name}", file=sys.stderr)
        return 1
    start = state.transaction_start_time
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    _table([("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
             "TransactionState", "TransactionTimeoutMs", "CurrentTransactionStartTimeMs",
             "TopicPartitions"),
            ("1", tid, str(state.producer_id), str(state.producer_epoch),
             state.transaction_state,
             str(int(state.transaction_timeout.total_seconds() * 1000)),
             str(int(start.timestamp() * 1000)) if start.timestamp() >= 0 else "None",
             partitions)], out)
    return 0


def _table(rows: list[tuple[str, ...]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
