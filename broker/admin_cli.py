"""``kafkette groups ...``: consumer-group admin over the wire, modelled on kafka-consumer-groups.sh.

    kafkette groups [--bootstrap-server H:P] list [--state]
    kafkette groups describe GROUP
    kafkette groups delete GROUP
    kafkette groups reset-offsets GROUP (--topic T[:P,P] ... | --all-topics)
        (--to-earliest | --to-latest | --to-offset N | --shift-by N | --to-datetime ISO) [--execute]

A small blocking client on the project's codec; API versions are negotiated with ApiVersions.
kafkette is a single node, so the bootstrap broker is also every group's coordinator.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.consumer_protocol import ConsumerProtocolError, assignment_partitions

from .wire_client import WireClient, WireError

API_VERSIONS, METADATA, LIST_OFFSETS = 18, 3, 2
OFFSET_COMMIT, OFFSET_FETCH = 8, 9
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42
CONSUMER_GROUP_DESCRIBE = 69

# Version ranges this client knows the shape of; the highest one the broker also accepts is used.
OURS: dict[int, tuple[int, int]] = {
    METADATA: (1, 12), LIST_OFFSETS: (1, 7), OFFSET_COMMIT: (2, 8), OFFSET_FETCH: (1, 7),
    DESCRIBE_GROUPS: (0, 5), LIST_GROUPS: (0, 4), DELETE_GROUPS: (0, 2),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
}
EARLIEST, LATEST = -2, -1


class AdminError(Exception):
    pass


def error_name(code: Any) -> str:
    return ErrorCode(int(code)).name.upper()


class AdminClient(WireClient):
    def __init__(self, bootstrap: str, timeout: float = 15, client_id: str = "kafkette-admin"):
        try:
            super().__init__(bootstrap, client_id, timeout)
        except OSError as exc:
            raise AdminError(f"cannot connect to {bootstrap}: {exc}") from exc
        self.versions = self._negotiate()

    def _negotiate(self) -> dict[int, int]:
        response = self._call(API_VERSIONS, 0)
        if response.error_code != ErrorCode.none:
            raise AdminError(f"ApiVersions failed: {error_name(response.error_code)}")
        theirs = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
        chosen: dict[int, int] = {}
        for key, (lo, hi) in OURS.items():
            if key in theirs:
                best = min(hi, theirs[key][1])
                if best >= max(lo, theirs[key][0]):
                    chosen[key] = best
        return chosen

    def _call(self, api_key: int, version: int, **fields: Any) -> Any:
        try:
            return self.request(api_key, version, **fields)
        except (ConnectionError, WireError) as exc:
            raise AdminError(str(exc)) from exc

    def call(self, api_key: int, **fields: Any) -> tuple[int, Any]:
        version = self.versions.get(api_key)
        if version is None:
            raise AdminError(f"the broker does not support API key {api_key}")
        return version, self._call(api_key, version, **fields)

    # Operations -------------------------------------------------------------------------
    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group_id, protocol_type, state or '') of every group."""
        _, r = self.call(LIST_GROUPS, states_filter=(), types_filter=())
        if r.error_code != ErrorCode.none:
            raise AdminError(f"ListGroups failed: {error_name(r.error_code)}")
        return sorted((g.group_id, g.protocol_type, getattr(g, "group_state", ""))
                      for g in r.groups)

    def describe_group(self, group: str) -> Any:
        _, r = self.call(DESCRIBE_GROUPS, groups=(group,), include_authorized_operations=False)
        (described,) = r.groups
        if described.error_code != ErrorCode.none:
            raise AdminError(f"DescribeGroups {group!r} failed: {error_name(described.error_code)}")
        return described

    def describe_consumer_group(self, group: str) -> Any | None:
        """ConsumerGroupDescribe (KIP-848 groups); None when the broker has no such group."""
        if CONSUMER_GROUP_DESCRIBE not in self.versions:
            return None
        _, r = self.call(CONSUMER_GROUP_DESCRIBE, group_ids=(group,),
                         include_authorized_operations=False)
        (described,) = r.groups
        return described if described.error_code == ErrorCode.none else None

    def delete_groups(self, groups: Sequence[str]) -> dict[str, str]:
        """Error name ('NONE' on success) of each group."""
        _, r = self.call(DELETE_GROUPS, groups_names=tuple(groups))
        return {res.group_id: error_name(res.error_code) for res in r.results}

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        version, r = self.call(OFFSET_FETCH, group_id=group, topics=None, require_stable=False)
        if version >= 2 and r.error_code != ErrorCode.none:
            raise AdminError(f"OffsetFetch {group!r} failed: {error_name(r.error_code)}")
        return {(t.name, int(p.partition_index)): int(p.committed_offset)
                for t in r.topics for p in t.partitions
                if p.error_code == ErrorCode.none and p.committed_offset >= 0}

    def partitions(self, topics: Iterable[str]) -> dict[str, int]:
        """Partition count of each existing topic (no auto-creation)."""
        version = self.versions.get(METADATA)
        topic_cls = item_type(request_type(METADATA, version), "topics") if version else None
        wanted = tuple(make(topic_cls, name=t, topic_id=None) for t in sorted(set(topics)))
        if not wanted:
            return {}
        _, r = self.call(METADATA, topics=wanted, allow_auto_topic_creation=False,
                         include_cluster_authorized_operations=False,
                         include_topic_authorized_operations=False)
        return {t.name: len(t.partitions) for t in r.topics if t.error_code == ErrorCode.none}

    def list_offsets(self, tps: Iterable[tuple[str, int]], timestamp: int) -> dict[tuple[str, int], int]:
        version = self.versions.get(LIST_OFFSETS)
        if version is None:
            raise AdminError("the broker does not support ListOffsets")
        req = request_type(LIST_OFFSETS, version)
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(
            make(topic_cls, name=t, partitions=tuple(
                make(part_cls, partition_index=p, timestamp=timestamp, current_leader_epoch=-1,
                     max_num_offsets=1) for p in sorted(ps)))
            for t, ps in sorted(by_topic.items()))
        if not topics:
            return {}
        _, r = self.call(LIST_OFFSETS, replica_id=-1, isolation_level=0, topics=topics)
        out: dict[tuple[str, int], int] = {}
        for t in r.topics:
            for p in t.partitions:
                if p.error_code != ErrorCode.none:
                    raise AdminError(f"ListOffsets {t.name}-{p.partition_index} failed: "
                                     f"{error_name(p.error_code)}")
                out[(t.name, int(p.partition_index))] = int(p.offset)
        return out

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], str]:
        """Commit as an admin (generation -1, no member), as kafka-consumer-groups does."""
        req = request_type(OFFSET_COMMIT, self.versions.get(OFFSET_COMMIT, 2))
        topic_cls = item_type(req, "topics")
        part_cls = item_type(topic_cls, "partitions")
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append((partition, offset))
        topics = tuple(
            make(topic_cls, name=t, partitions=tuple(
                make(part_cls, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                     committed_metadata="", commit_timestamp=-1) for p, o in sorted(ps)))
            for t, ps in sorted(by_topic.items()))
        _, r = self.call(OFFSET_COMMIT, group_id=group, generation_id=-1,
                         generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                         retention_time=-1, topics=topics)
        return {(t.name, int(p.partition_index)): error_name(p.error_code)
                for t in r.topics for p in t.partitions}


# Consumer protocol (ConsumerProtocolAssignment) ---------------------------------------------

def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """Topic partitions of a consumer-protocol assignment; [] when empty or not decodable."""
    try:
        return assignment_partitions(data)
    except ConsumerProtocolError:
        return []


# Commands -----------------------------------------------------------------------------------

def _table(rows: list[Sequence[Any]], out: TextIO) -> None:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(" ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


DESCRIBE_HEADER = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                   "CONSUMER-ID", "HOST", "CLIENT-ID")


@dataclass(frozen=True, slots=True)
class PartitionRow:
    topic: str
    partition: int
    current: int | None
    log_end: int | None
    member: tuple[str, str, str] | None  # consumer id, host, client id

    @property
    def lag(self) -> int | None:
        if self.current is None or self.log_end is None:
            return None
        return max(self.log_end - self.current, 0)


def describe_rows(admin: AdminClient, group: str) -> tuple[Any, list[PartitionRow], list]:
    """The group, one row per partition it owns or committed, and the members owning nothing."""
    described = admin.describe_group(group)
    if described.group_state == "Dead":  # not a classic group: maybe a KIP-848 one
        described = admin.describe_consumer_group(group) or described
    committed = admin.committed(group)
    owners: dict[tuple[str, int], tuple[str, str, str]] = {}
    idle = []
    for m in described.members:
        tps = _member_partitions(described, m)
        for tp in tps:
            owners[tp] = (m.member_id, m.client_host, m.client_id)
        if not tps:
            idle.append(m)
    tps = sorted(set(committed) | set(owners))
    log_end = admin.list_offsets(tps, LATEST) if tps else {}
    rows = [PartitionRow(t, p, committed.get((t, p)), log_end.get((t, p)), owners.get((t, p)))
            for t, p in tps]
    return described, rows, idle


def _member_partitions(described: Any, member: Any) -> list[tuple[str, int]]:
    if hasattr(member, "assignment"):  # ConsumerGroupDescribe
        return [(tp.topic_name, int(p)) for tp in member.assignment.topic_partitions
                for p in tp.partitions]
    if described.protocol_type == "consumer":
        return decode_assignment(member.member_assignment)
    return []


def _partitions_text(assignment: Any) -> str:
    parts = [f"{tp.topic_name}:{','.join(str(p) for p in tp.partitions)}"
             for tp in assignment.topic_partitions if tp.partitions]
    return " ".join(parts) or "-"


def _consumer_group_members(group: str, described: Any, out: TextIO) -> None:
    """KIP-848 groups: epochs and each member's current vs target assignment."""
    out.write(f"\nGROUP {group} TYPE consumer STATE {described.group_state} GROUP-EPOCH "
              f"{described.group_epoch} ASSIGNMENT-EPOCH {described.assignment_epoch} "
              f"ASSIGNOR {described.assignor_name}\n\n")
    table: list[Sequence[Any]] = [("CONSUMER-ID", "MEMBER-EPOCH", "PROTOCOL", "ASSIGNMENT",
                                   "TARGET-ASSIGNMENT")]
    for m in described.members:
        kind = {0: "classic", 1: "consumer"}.get(int(getattr(m, "member_type", -1)), "-")
        table.append((m.member_id, m.member_epoch, kind, _partitions_text(m.assignment),
                      _partitions_text(m.target_assignment)))
    _table(table, out)


def cmd_list(admin: AdminClient, args: argparse.Namespace, out: TextIO) -> int:
    groups = admin.list_groups()
    if args.state:
        _table([("GROUP", "STATE"), *[(g, s or "-") for g, _t, s in groups]], out)
    else:
        for group, _type, _state in groups:
            out.write(group + "\n")
    return 0


def cmd_describe(admin: AdminClient, args: argparse.Namespace, out: TextIO) -> int:
    group = args.group
    described, rows, idle = describe_rows(admin, group)
    if described.group_state == "Dead":
        out.write(f"Error: Consumer group '{group}' does not exist.\n")
        return 1
    if not described.members:
        out.write(f"\nConsumer group '{group}' has no active members.\n")
    elif described.group_state in ("PreparingRebalance", "CompletingRebalance"):
        out.write(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
    out.write("\n")
    dash = "-"
    table: list[Sequence[Any]] = [DESCRIBE_HEADER]
    for r in rows:
        member = r.member or (dash, dash, dash)
        table.append((group, r.topic, r.partition, dash if r.current is None else r.current,
                      dash if r.log_end is None else r.log_end, dash if r.lag is None else r.lag,
                      *member))
    for m in idle:
        table.append((group, dash, dash, dash, dash, dash, m.member_id, m.client_host, m.client_id))
    _table(table, out)
    if hasattr(described, "group_epoch"):
        _consumer_group_members(group, described, out)
    return 0


def cmd_delete(admin: AdminClient, args: argparse.Namespace, out: TextIO) -> int:
    results = admin.delete_groups(args.group)
    failed = {g: e for g, e in results.items() if e != "NONE"}
    ok = [g for g in results if g not in failed]
    if ok:
        names = ", ".join(f"'{g}'" for g in ok)
        out.write(f"Deletion of requested consumer groups ({names}) was successful.\n")
    if failed:
        out.write("Deletion of some consumer groups failed:\n")
        for g, e in failed.items():
            out.write(f"* Group '{g}' could not be deleted due to: {e}\n")
        return 1
    return 0


def _parse_topics(specs: list[str]) -> list[tuple[str, list[int] | None]]:
    out = []
    for spec in specs:
        topic, _, parts = spec.partition(":")
        out.append((topic, [int(p) for p in parts.split(",") if p] if parts else None))
    return out


def cmd_reset(admin: AdminClient, args: argparse.Namespace, out: TextIO) -> int:
    group = args.group
    described = admin.describe_group(group)
    if described.group_state not in ("Empty", "Dead"):
        out.write(f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                  f"but the current state is {described.group_state}.\n")
        return 1
    committed = admin.committed(group)
    if args.all_topics:
        specs: list[tuple[str, list[int] | None]] = [(t, None) for t in sorted({t for t, _ in committed})]
    else:
        specs = _parse_topics(args.topic)
    counts = admin.partitions(t for t, _ in specs)
    tps: list[tuple[str, int]] = []
    for topic, parts in specs:
        if topic not in counts:
            out.write(f"Error: topic '{topic}' does not exist.\n")
            return 1
        tps += [(topic, p) for p in (parts if parts is not None else range(counts[topic]))]
    earliest = admin.list_offsets(tps, EARLIEST)
    latest = admin.list_offsets(tps, LATEST)
    if args.to_earliest:
        target = dict(earliest)
    elif args.to_latest:
        target = dict(latest)
    elif args.to_offset is not None:
        target = {tp: args.to_offset for tp in tps}
    elif args.shift_by is not None:
        target = {tp: committed.get(tp, latest[tp]) + args.shift_by for tp in tps}
    else:
        when = dt.datetime.fromisoformat(args.to_datetime)
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        found = admin.list_offsets(tps, int(when.timestamp() * 1000))
        target = {tp: latest[tp] if off < 0 else off for tp, off in found.items()}
    # Out-of-range targets are clamped to the log's range, as kafka-consumer-groups does.
    target = {tp: min(max(off, earliest[tp]), latest[tp]) for tp, off in target.items()}
    if args.execute:
        errors = {tp: e for tp, e in admin.commit(group, target).items() if e != "NONE"}
        if errors:
            for (t, p), e in sorted(errors.items()):
                out.write(f"Error: commit of {t}-{p} failed: {e}\n")
            return 1
    _table([("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
            *[(group, t, p, target[(t, p)]) for t, p in sorted(target)]], out)
    if not args.execute:
        out.write("\n(dry run: add --execute to commit these offsets)\n")
    return 0


def add_parser(sub: Any) -> None:
    """The ``groups`` subcommand, added to the ``kafkette`` parser."""
    groups = sub.add_parser("groups", help="list, describe, delete consumer groups; reset offsets")
    groups.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT")
    actions = groups.add_subparsers(dest="action", required=True)
    lister = actions.add_parser("list", help="list the groups")
    lister.add_argument("--state", action="store_true", help="show each group's state")
    actions.add_parser("describe", help="offsets, lag and members of a group").add_argument("group")
    actions.add_parser("delete", help="delete empty groups").add_argument("group", nargs="+")
    reset = actions.add_parser("reset-offsets", help="set an inactive group's committed offsets")
    reset.add_argument("group")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P]")
    scope.add_argument("--all-topics", action="store_true")
    how = reset.add_mutually_exclusive_group(required=True)
    how.add_argument("--to-earliest", action="store_true")
    how.add_argument("--to-latest", action="store_true")
    how.add_argument("--to-offset", type=int)
    how.add_argument("--shift-by", type=int)
    how.add_argument("--to-datetime", metavar="ISO-8601")
    reset.add_argument("--execute", action="store_true", help="commit (default: dry run)")
    reset.add_argument("--dry-run", action="store_true", help="only show the new offsets")


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset}


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    try:
        with AdminClient(args.bootstrap_server) as admin:
            return COMMANDS[args.action](admin, args, out or sys.stdout)
    except (AdminError, OSError) as exc:
        print(f"kafkette groups: {exc}", file=sys.stderr)
        return 1
