"""What the console shows, as plain JSON-ready dicts: topics, records, groups with lag, events.

The JSON API returns these as they are; the HTML pages render the same dicts.
"""

from __future__ import annotations

from typing import Any

from kafkette.protocol.records import CorruptRecordError, decode_records, iter_batches
from kafkette.storage.errors import OffsetOutOfRangeError

from ..security.config_keys import is_password
from . import groups_view, shares_view

MAX_RECORDS = 1000
_READ_CHUNK = 1 << 20
_MAX_READ = 16 << 20
SHOWN_BYTES = 4096  # keys, values and headers longer than this are cut in the answer


def topics(broker: Any) -> list[dict[str, Any]]:
    out = []
    for info in sorted(broker.logs.topics(), key=lambda t: t.name):
        parts = []
        for p in range(info.partitions):
            plog = broker.logs.get_partition(info.name, p)
            if plog is None:
                continue
            parts.append({"partition": p, "log_start_offset": plog.log_start_offset,
                          "log_end_offset": plog.log_end_offset, "size_bytes": plog.size_bytes})
        out.append({"name": info.name, "internal": info.internal, "partitions": parts,
                    "configs": dict(info.configs)})
    return out


def _bytes(data: bytes | None) -> dict[str, Any] | None:
    """Bytes as text when they are printable UTF-8, always as hex; cut to SHOWN_BYTES."""
    if data is None:
        return None
    shown = bytes(data[:SHOWN_BYTES])
    try:
        decoded = shown.decode("utf-8")
        text: str | None = decoded
        if not all(c.isprintable() or c in "\t\n\r" for c in decoded):
            text = None
    except UnicodeDecodeError:
        text = None
    return {"text": text, "hex": shown.hex(), "size": len(data), "truncated": len(data) > len(shown)}


def _transaction_status(header: Any, aborted: dict[int, list[tuple[int, int]]],
                        last_stable: int) -> str | None:
    """None (not transactional), "aborted", "open" (at or past the last stable offset: not
    yet visible to read_committed consumers) or "committed"."""
    if not header.is_transactional:
        return None
    base = header.base_offset
    if any(first <= base < marker for first, marker in aborted.get(header.producer_id, ())):
        return "aborted"
    return "open" if base >= last_stable else "committed"


async def records(broker: Any, topic: str, partition: int, limit: int,
                  read_committed: bool = False) -> dict[str, Any] | None:
    """The latest ``limit`` records of a partition (None: no such partition), each with the
    state of its transaction; ``read_committed``: only what such a consumer reads (below the
    last stable offset, no aborted records)."""
    plog = broker.logs.get_partition(topic, partition)
    if plog is None:
        return None
    limit = max(1, min(limit, MAX_RECORDS))
    last_stable = plog.last_stable_offset
    end = last_stable if read_committed else plog.log_end_offset
    start = max(plog.log_start_offset, end - limit)
    aborted: dict[int, list[tuple[int, int]]] = {}
    for txn in plog.producers.aborted_in(start, end):
        aborted.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    found: list[dict[str, Any]] = []
    offset, read, error = start, 0, None
    while offset < end and read < _MAX_READ:
        try:
            data = await plog.read_bytes(offset, _READ_CHUNK)
        except OffsetOutOfRangeError:  # records deleted under us: start again at the log start
            offset = plog.log_start_offset
            continue
        if not data:
            break
        read += len(data)
        before = offset
        for header, view in iter_batches(data):
            offset = max(offset, header.next_offset)
            if header.is_control:
                continue
            try:
                batch = decode_records(view)
            except CorruptRecordError as exc:
                error = f"undecodable batch at offset {header.base_offset}: {exc}"
                continue
            status = _transaction_status(header, aborted, last_stable)
            if read_committed and status == "aborted":
                continue
            found += [{"offset": r.offset, "timestamp": r.timestamp, "key": _bytes(r.key),
                       "value": _bytes(r.value),
                       "headers": [{"key": k, "value": _bytes(v)} for k, v in r.headers],
                       "transaction": status}
                      for r in batch if start <= r.offset < end]
        if offset == before:
            break
    return {"topic": topic, "partition": partition, "log_start_offset": plog.log_start_offset,
            "log_end_offset": plog.log_end_offset, "last_stable_offset": last_stable,
            "isolation": "read_committed" if read_committed else "read_uncommitted",
            "records": found[-limit:], "error": error}


def _summary(g: groups_view.GroupSummary) -> dict[str, Any]:
    return {"group_id": g.group_id, "type": g.group_type, "state": g.state, "protocol_type": g.protocol_type,
            "protocol": g.protocol, "generation": g.generation, "leader": g.leader,
            "members": g.members}


def groups(broker: Any) -> list[dict[str, Any]]:
    return [_summary(g) for g in groups_view.list_groups(broker)]


def lag_rows(broker: Any, group_id: str,
             assigned: dict[tuple[str, int], str]) -> list[dict[str, Any]]:
    """Per partition the group committed or is assigned: committed offset, log-end, lag, owner."""
    committed = {(t, p): o for t, p, o in groups_view.committed_offsets(broker, group_id)}
    rows = []
    for topic, partition in sorted(set(committed) | set(assigned)):
        plog = broker.logs.get_partition(topic, partition)
        end = plog.log_end_offset if plog is not None else None
        offset = committed.get((topic, partition))
        lag = end - offset if end is not None and offset is not None else None
        rows.append({"topic": topic, "partition": partition, "committed_offset": offset,
                     "log_end_offset": end, "lag": lag,
                     "member_id": assigned.get((topic, partition))})
    return rows


def group(broker: Any, group_id: str) -> dict[str, Any] | None:
    found = groups_view.describe_group(broker, group_id)
    if found is None:
        return None
    summary, members = found
    assigned = {tp: m.member_id for m in members for tp in m.assignment}
    rebalances = next((log.rebalances[group_id] for log in groups_view.event_logs(broker)
                       if group_id in log.rebalances), None)
    return {
        **_summary(summary),
        "members": [{"member_id": m.member_id, "instance_id": m.instance_id,
                     "client_id": m.client_id, "client_host": m.client_host,
                     "is_leader": m.member_id == summary.leader,
                     "assignment": [{"topic": t, "partition": p} for t, p in m.assignment]}
                    for m in members],
        "offsets": lag_rows(broker, group_id, assigned),
        "rebalances": None if rebalances is None else {
            "count": rebalances.count, "total_ms": rebalances.total_ms,
            "last_ms": rebalances.last_ms, "in_progress": rebalances.started_at_ms is not None},
    }


async def group_detail(broker: Any, group_id: str) -> dict[str, Any] | None:
    """``group`` with, for a share group, its share-partitions (start offset, in-flight
    records by state, lag) under ``share_partitions``."""
    found = group(broker, group_id)
    if found is not None and found["type"] == "share":
        found["share_partitions"] = [
            sp.as_json() for sp in await shares_view.share_partitions(broker, group_id)]
    return found


def events(broker: Any, group_id: str, after_seq: int = 0) -> list[dict[str, Any]]:
    return [e.as_json() for e in groups_view.group_events(broker, group_id, after_seq)]


def broker_info(broker: Any) -> dict[str, Any]:
    host, port = broker.bound
    cluster = broker.control.describe()  # every node (one unless --nodes N), and the controller
    return {"cluster_id": broker.cluster_id, "node_id": broker.config.node_id,
            "bootstrap": broker.bootstrap, "listener": f"{host}:{port}",
            "connections": len(broker.connections),
            "coordinator_ready": broker.coordinator is not None,
            "controller": cluster["controller"], "nodes": cluster["nodes"],
            # secrets (JAAS configs, key passwords) are shown [hidden], as Kafka logs them
            "config": {k: "[hidden]" if is_password(k) else v
                       for k, v in sorted(broker.config.items())}}
