"""``kafkette groups``: kafka-consumer-groups.sh's flags, combinations, refusals and output.

    kafkette groups --bootstrap-server H:P --list [--state [S,S]] [--type]
    kafkette groups --bootstrap-server H:P --describe (--group G ... | --all-groups)
        [--members [--verbose] | --state | --offsets]
    kafkette groups --bootstrap-server H:P --delete (--group G ... | --all-groups)
    kafkette groups --bootstrap-server H:P --reset-offsets (--group G ... | --all-groups)
        (--topic T[:P,P] ... | --all-topics) (--to-earliest | --to-latest | --to-current |
        --to-offset N | --shift-by N | --to-datetime ISO | --by-duration PnDTnHnMnS) |
        --from-file CSV) [--dry-run | --execute] [--export]
    kafkette groups --bootstrap-server H:P --delete-offsets --group G --topic T[:P,P] ...

The short forms stay: ``kafkette groups list``, ``describe G``, ``delete G``,
``reset-offsets G ...``, ``delete-offsets G --topic T``; options go before or after them.
``describe`` starts with a summary block (state, assignor, members, total lag) as
``rpk group describe`` does. Every bad input is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from kafkette.protocol.consumer_protocol import assignment_partitions_or_empty

from .admin_client import EARLIEST, LATEST, AdminError
from .client_security import ClientConfigError, read_command_config
from .group_admin import ClusterAdmin
from .groups_parser import ACTIONS, UsageError, build_parser

SCENARIOS = ("to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest",
             "to-current", "from-file")
VALUE_OPTIONS = {"--bootstrap-server", "--group", "--topic", "--timeout", "--command-config",
                 "--to-offset", "--shift-by", "--to-datetime", "--by-duration", "--from-file"}
CONSUMER_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
                   "Assigning", "Reconciling")
DASH = "-"
GROUP_TYPES = {"consumer": "Consumer", "classic": "Classic", "share": "Share"}


def normalize(argv: Sequence[str]) -> list[str]:
    """The short forms (``describe G``) as Kafka flags (``--describe --group G``)."""
    out: list[str] = []
    action: str | None = None
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("-"):
            out.append(token)
            if token in VALUE_OPTIONS and i + 1 < len(argv):
                out.append(argv[i + 1])
                i += 1
            elif token in ("--state", "--type") and i + 1 < len(argv) and action in (None, "list") \
                    and not argv[i + 1].startswith("-") and argv[i + 1] not in ACTIONS:
                out.append(argv[i + 1])  # --list --state stable,empty
                i += 1
        elif action is None and token in ACTIONS:
            action = token
            out.append(f"--{token}")
        elif action in ("describe", "delete", "reset-offsets", "delete-offsets"):
            out += ["--group", token]
        else:
            raise UsageError(f"unrecognized argument: {token}")
        i += 1
    return out


def _opt(name: str) -> str:
    return f"[{name}]"


def check_args(args: argparse.Namespace) -> str:
    """Kafka's ConsumerGroupCommandOptions.checkArgs; returns the action."""
    actions = [a for a in ACTIONS if getattr(args, a.replace("-", "_"))]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: "
                         + ", ".join(f"--{a}" for a in ACTIONS))
    action = actions[0]
    has_scope = bool(args.group) or args.all_groups
    scope = f"{_opt('all-groups')}, {_opt('group')}"
    if action == "describe":
        if not has_scope:
            raise UsageError(f"Option {_opt('describe')} takes one of these options: {scope}")
        chosen = [n for n in ("members", "offsets", "state")
                  if (getattr(args, n) is not None if n == "state" else getattr(args, n))]
        if len(chosen) > 1:
            raise UsageError(f"Option {_opt('describe')} takes at most one of these options: "
                             f"{_opt('members')}, {_opt('offsets')}, {_opt('state')}")
        if args.state:
            raise UsageError(f"Option {_opt('describe')} does not take a value for {_opt('state')}")
    else:
        for name in ("members", "offsets", "verbose"):
            if getattr(args, name):
                raise UsageError(f"Option {_opt(name)} can only be used with {_opt('describe')}")
        if args.state is not None and action != "list":
            raise UsageError(f"Option {_opt('state')} can only be used with {_opt('describe')} "
                             f"or {_opt('list')}")
    if args.type is not None and action != "list":
        raise UsageError(f"Option {_opt('type')} can only be used with {_opt('list')}")
    if action == "delete":
        if not has_scope:
            raise UsageError(f"Option {_opt('delete')} takes one of these options: {scope}")
        if args.topic:
            raise UsageError("The consumer does not support topic-specific offset deletion from "
                             "a consumer group.")
    if action == "delete-offsets" and (len(args.group) != 1 or not args.topic):
        raise UsageError(f"Option {_opt('delete-offsets')} takes the following options: "
                         f"{_opt('group')}, {_opt('topic')}")
    if action == "reset-offsets":
        if args.dry_run and args.execute:
            raise UsageError(f"Option {_opt('reset-offsets')} only accepts one of "
                             f"{_opt('execute')} and {_opt('dry-run')}")
        if not has_scope:
            raise UsageError(f"Option {_opt('reset-offsets')} takes one of these options: {scope}")
        used = [s for s in SCENARIOS if getattr(args, s.replace("-", "_")) not in (None, False)]
        if len(used) > 1:
            raise UsageError(f'Option "{_opt(used[0])}" can\'t be used with option "{_opt(used[1])}"')
        if not used:
            raise UsageError(f"Option '{_opt('reset-offsets')}' requires one of the following "
                             "scenarios: " + ", ".join(_opt(s) for s in SCENARIOS))
        if not args.topic and not args.all_topics and not args.from_file:
            raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
        if args.topic and args.all_topics:
            raise UsageError(f'Option "{_opt("topic")}" can\'t be used with option '
                             f'"{_opt("all-topics")}"')
    elif args.dry_run or args.execute or args.all_topics or args.export:
        raise UsageError("Options --dry-run, --execute, --export and --all-topics can only be used "
                         f"with {_opt('reset-offsets')}")
    if args.group and args.all_groups:
        raise UsageError(f'Option "{_opt("group")}" can\'t be used with option "{_opt("all-groups")}"')
    if args.group and action == "list":
        raise UsageError(f'Option "{_opt("group")}" can\'t be used with option "{_opt("list")}"')
    if args.topic and action in ("list", "describe"):
        raise UsageError(f'Option "{_opt("topic")}" can\'t be used with option "{_opt(action)}"')
    # Values are checked before anything is asked of the broker.
    parse_topics(args.topic)
    if args.to_datetime is not None:
        parse_datetime(args.to_datetime)
    if args.by_duration is not None:
        parse_duration_ms(args.by_duration)
    if args.from_file is not None:
        args.plan = read_plan(args.from_file)
    args.client = read_client_config(args.command_config)
    return action


# Values ---------------------------------------------------------------------------------------

def parse_topics(specs: Sequence[str]) -> list[tuple[str, list[int] | None]]:
    """``topic`` or ``topic:0,1,2`` (Kafka's --topic format)."""
    out: list[tuple[str, list[int] | None]] = []
    for spec in specs:
        topic, sep, parts = spec.partition(":")
        if not topic:
            raise UsageError(f"Invalid --topic {spec!r}: no topic name")
        if not sep:
            out.append((topic, None))
            continue
        items = [p.strip() for p in parts.split(",") if p.strip()]
        if not items or not all(p.isdigit() for p in items):
            raise UsageError(f"Invalid --topic {spec!r}: partitions must be numbers, as in {topic}:0,1")
        out.append((topic, [int(p) for p in items]))
    return out


def parse_datetime(value: str) -> int:
    """Kafka's Utils.getDateTime: ``YYYY-MM-DDTHH:mm:SS.sss``, UTC unless a zone is given."""
    date, sep, time = value.partition("T")
    if not sep:
        raise UsageError("Error parsing timestamp. It does not contain a 'T' according to "
                         "ISO8601 format")
    if not any(c in time for c in "+-Z"):
        value += "Z"
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f'Unparseable date: "{value}"') from None
    return int(when.timestamp() * 1000)


_DURATION = re.compile(r"(-)?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.I)


def parse_duration_ms(value: str) -> int:
    """Java's Duration.parse for PnDTnHnMnS."""
    match = _DURATION.fullmatch(value)
    if not match or value.upper().endswith(("P", "T")):
        raise UsageError(f"Text cannot be parsed to a Duration: {value}")
    sign, days, hours, minutes, seconds = match.groups()
    ms = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60_000
    ms += int(float(seconds or 0) * 1000)
    return -ms if sign else ms


def read_client_config(path: str | None) -> dict[str, str]:
    """The ``--command-config`` properties: client.id and the TLS/SASL login (every connection
    the tool opens logs in with them); settings kafkette's client cannot honour are refused."""
    try:
        return read_command_config(path)
    except ClientConfigError as exc:
        raise UsageError(str(exc)) from None


def read_plan(path: str) -> list[tuple[str | None, str, int, int]]:
    """A reset plan CSV as ``--export`` writes it: ``topic,partition,offset`` lines, or
    ``group,topic,partition,offset`` when it covers several groups."""
    try:
        with open(path) as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError as exc:
        raise UsageError(f"--from-file {path}: {exc.strerror or exc}") from None
    plan: list[tuple[str | None, str, int, int]] = []
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) not in (3, 4) or not all(c.lstrip("-").isdigit() for c in cells[-2:]):
            raise UsageError(f"--from-file {path}: invalid line {line!r} "
                             "(expected [group,]topic,partition,offset)")
        group = cells[0] if len(cells) == 4 else None
        plan.append((group, cells[-3], int(cells[-2]), int(cells[-1])))
    return plan


# Commands -------------------------------------------------------------------------------------

def table(rows: list[Sequence[Any]], out: TextIO) -> None:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write(" ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


def group_ids(admin: ClusterAdmin, args: argparse.Namespace) -> list[str]:
    return [row[0] for row in admin.list_groups()] if args.all_groups else list(args.group)


def cmd_list(admin: ClusterAdmin, args: argparse.Namespace, out: TextIO) -> int:
    groups = admin.list_groups()
    if args.state is None and args.type is None:
        for group, *_rest in groups:
            out.write(group + "\n")
        return 0
    wanted = {s.strip().lower() for s in (args.state or "").split(",") if s.strip()}
    known = {s.lower() for s in CONSUMER_STATES}
    if not wanted <= known:
        raise UsageError(f"Invalid state list '{args.state}'. Valid states are: "
                         + ", ".join(CONSUMER_STATES))
    types = {s.strip().lower() for s in (args.type or "").split(",") if s.strip()}
    if not types <= set(GROUP_TYPES):  # Kafka's GroupType names; share groups list as Share
        raise UsageError(f"Invalid types list '{args.type}'. Valid types are: "
                         + ", ".join(GROUP_TYPES.values()))
    header = ["GROUP"] + (["TYPE"] if args.type is not None else []) \
        + (["STATE"] if args.state is not None else [])
    rows: list[Sequence[Any]] = [header]
    for group, _protocol, state, kind in groups:
        if (wanted and state.lower() not in wanted) or (types and kind.lower() not in types):
            continue
        rows.append([group] + ([GROUP_TYPES.get(kind.lower(), "Unknown")] if args.type is not None
                               else []) + ([state or DASH] if args.state is not None else []))
    table(rows, out)
    return 0


def _members(described: Any) -> list[tuple[Any, list[tuple[str, int]]]]:
    if isinstance(described, ConsumerGroupView):
        return [(m, m.partitions) for m in described.members]
    consumer = described.protocol_type == "consumer"
    return [(m, assignment_partitions_or_empty(m.member_assignment) if consumer else [])
            for m in described.members]


@dataclass(frozen=True, slots=True)
class ConsumerMemberView:
    member_id: str
    group_instance_id: str | None
    client_host: str
    client_id: str
    member_epoch: int
    kind: str  # "consumer" or "classic" (a classic member of a mixed group)
    partitions: list[tuple[str, int]]
    target: list[tuple[str, int]]


@dataclass(frozen=True, slots=True)
class ConsumerGroupView:
    """A KIP-848 group (ConsumerGroupDescribe) in the shape the describe commands print."""

    group_state: str
    protocol_data: str  # the server-side assignor
    group_epoch: int
    assignment_epoch: int
    members: list[ConsumerMemberView]


def _topic_partitions(assignment: Any) -> list[tuple[str, int]]:
    return [(tp.topic_name, int(p)) for tp in assignment.topic_partitions for p in tp.partitions]


def _describe(admin: ClusterAdmin, group: str) -> Any:
    """DescribeGroups, or ConsumerGroupDescribe when the group is a KIP-848 one (DescribeGroups
    answers such a group as Dead)."""
    described = admin.describe_group(group)
    if described.group_state != "Dead":
        return described
    consumer = admin.describe_consumer_group(group)
    if consumer is None:
        return described
    members = [ConsumerMemberView(
        m.member_id, m.instance_id, m.client_host, m.client_id, m.member_epoch,
        {0: "classic", 1: "consumer"}.get(int(getattr(m, "member_type", 1)), "consumer"),
        _topic_partitions(m.assignment), _topic_partitions(m.target_assignment))
        for m in consumer.members]
    return ConsumerGroupView(consumer.group_state, consumer.assignor_name, consumer.group_epoch,
                             consumer.assignment_epoch, members)


def describe_consumer_members(group: str, described: ConsumerGroupView, out: TextIO) -> None:
    """KIP-848 groups: epochs and each member's current vs target assignment."""
    def text(tps: list[tuple[str, int]]) -> str:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        return ";".join(f"{t}:{','.join(map(str, sorted(ps)))}"
                        for t, ps in sorted(by_topic.items())) or DASH
    out.write(f"\nGROUP {group} TYPE consumer STATE {described.group_state} GROUP-EPOCH "
              f"{described.group_epoch} ASSIGNMENT-EPOCH {described.assignment_epoch} "
              f"ASSIGNOR {described.protocol_data}\n\n")
    rows: list[Sequence[Any]] = [("CONSUMER-ID", "MEMBER-EPOCH", "PROTOCOL", "ASSIGNMENT",
                                  "TARGET-ASSIGNMENT")]
    rows += [(m.member_id, m.member_epoch, m.kind, text(m.partitions), text(m.target))
             for m in described.members]
    table(rows, out)


def _exists(described: Any, group: str, out: TextIO) -> bool:
    """Kafka's shouldPrintMemberState: the error or notice before a group's rows."""
    if described.group_state == "Dead":
        out.write(f"\nError: Consumer group '{group}' does not exist.\n")
        return False
    if described.group_state == "Empty":
        sys.stderr.write(f"\nConsumer group '{group}' has no active members.\n")
    elif described.group_state in ("PreparingRebalance", "CompletingRebalance"):
        sys.stderr.write(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
    return True


def describe_offsets(admin: ClusterAdmin, group: str, described: Any, out: TextIO) -> None:
    committed = admin.committed(group)
    owners: dict[tuple[str, int], tuple[str, str, str]] = {}
    idle = []
    for m, tps in _members(described):
        for tp in tps:
            owners[tp] = (m.member_id, m.client_host, m.client_id)
        if not tps:
            idle.append(m)
    tps = sorted(set(committed) | set(owners))
    log_end = admin.list_offsets(tps, LATEST) if tps else {}
    lags = [log_end[tp] - committed[tp] for tp in tps if tp in committed and tp in log_end]
    host, port, node = admin.coordinator(group)
    summary: list[Sequence[Any]] = [("GROUP", group), ("COORDINATOR", f"{host}:{port} ({node})"),
               ("STATE", described.group_state),
               ("ASSIGNOR", described.protocol_data or DASH),
               ("MEMBERS", len(described.members)), ("TOTAL-LAG", sum(max(lag, 0) for lag in lags))]
    table(summary, out)
    out.write("\n")
    rows: list[Sequence[Any]] = [("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                  "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for tp in tps:
        current, end = committed.get(tp), log_end.get(tp)
        lag = max(end - current, 0) if current is not None and end is not None else None
        member = owners.get(tp, (DASH, DASH, DASH))
        rows.append((group, tp[0], tp[1], DASH if current is None else current,
                     DASH if end is None else end, DASH if lag is None else lag, *member))
    for m in idle:
        rows.append((group, DASH, DASH, DASH, DASH, DASH, m.member_id, m.client_host, m.client_id))
    table(rows, out)


def describe_members(group: str, described: Any, verbose: bool, out: TextIO) -> None:
    members = _members(described)
    with_instance = any(m.group_instance_id for m, _ in members)
    header = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else []) \
        + ["HOST", "CLIENT-ID", "#PARTITIONS"] + (["ASSIGNMENT"] if verbose else [])
    rows: list[Sequence[Any]] = [header]
    for m, tps in members:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in tps:
            by_topic.setdefault(topic, []).append(partition)
        assignment = ";".join(f"{t}:{','.join(map(str, sorted(ps)))}"
                              for t, ps in sorted(by_topic.items())) or DASH
        rows.append([group, m.member_id] + ([m.group_instance_id or DASH] if with_instance else [])
                    + [m.client_host, m.client_id, len(tps)] + ([assignment] if verbose else []))
    table(rows, out)


def describe_state(admin: ClusterAdmin, group: str, described: Any, out: TextIO) -> None:
    host, port, node = admin.coordinator(group)
    table([("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
           (group, f"{host}:{port}  ({node})", described.protocol_data or DASH,
            described.group_state, len(described.members))], out)


def cmd_describe(admin: ClusterAdmin, args: argparse.Namespace, out: TextIO) -> int:
    status = 0
    for n, group in enumerate(group_ids(admin, args)):
        described = _describe(admin, group)
        if not _exists(described, group, out):
            status = 1
            continue
        if n:
            out.write("\n")
        if args.members:
            describe_members(group, described, args.verbose, out)
        elif args.state is not None:
            describe_state(admin, group, described, out)
        else:
            describe_offsets(admin, group, described, out)
            if isinstance(described, ConsumerGroupView):
                describe_consumer_members(group, described, out)
    return status


def cmd_delete(admin: ClusterAdmin, args: argparse.Namespace, out: TextIO) -> int:
    results = admin.delete_groups(group_ids(admin, args))
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


def _resolve(admin: ClusterAdmin, specs: list[tuple[str, list[int] | None]]) -> list[tuple[str, int]]:
    counts = admin.partitions(t for t, _ in specs)
    tps: list[tuple[str, int]] = []
    for topic, parts in specs:
        if topic not in counts:
            raise AdminError(f"topic '{topic}' does not exist.")
        for p in parts if parts is not None else range(counts[topic]):
            if not 0 <= p < counts[topic]:
                raise AdminError(f"partition {topic}-{p} does not exist.")
            tps.append((topic, p))
    return tps


def reset_targets(admin: ClusterAdmin, args: argparse.Namespace, group: str) -> dict[tuple[str, int], int]:
    committed = admin.committed(group)
    if args.from_file is not None:
        wanted = {(t, p): o for g, t, p, o in args.plan if g in (None, group)}
        tps = _resolve(admin, [(t, [p]) for t, p in wanted])
        earliest, latest = admin.list_offsets(tps, EARLIEST), admin.list_offsets(tps, LATEST)
        return {tp: min(max(wanted[tp], earliest[tp]), latest[tp]) for tp in tps}
    if args.all_topics:
        specs: list[tuple[str, list[int] | None]] = [(t, None) for t in sorted({t for t, _ in committed})]
    else:
        specs = parse_topics(args.topic)
    tps = _resolve(admin, specs)
    earliest = admin.list_offsets(tps, EARLIEST)
    latest = admin.list_offsets(tps, LATEST)
    if args.to_earliest:
        target = dict(earliest)
    elif args.to_latest:
        target = dict(latest)
    elif args.to_current:
        target = {tp: committed.get(tp, latest[tp]) for tp in tps}
    elif args.to_offset is not None:
        target = {tp: args.to_offset for tp in tps}
    elif args.shift_by is not None:
        target = {tp: committed.get(tp, latest[tp]) + args.shift_by for tp in tps}
    else:
        if args.to_datetime is not None:
            when = parse_datetime(args.to_datetime)
        else:
            when = int(dt.datetime.now(dt.UTC).timestamp() * 1000) - parse_duration_ms(args.by_duration)
        found = admin.list_offsets(tps, when)
        target = {tp: latest[tp] if off < 0 else off for tp, off in found.items()}
    # Out-of-range targets are clamped to the log's range, as kafka-consumer-groups does.
    return {tp: min(max(off, earliest[tp]), latest[tp]) for tp, off in target.items()}


def cmd_reset(admin: ClusterAdmin, args: argparse.Namespace, out: TextIO) -> int:
    if not args.execute and not args.dry_run:
        sys.stderr.write("WARN: No action will be performed as the --execute option is missing. "
                         "Add --dry-run to say so explicitly.\n")
    status = 0
    rows: list[Sequence[Any]] = [("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    for group in group_ids(admin, args):
        described = admin.describe_group(group)
        if described.group_state not in ("Empty", "Dead"):
            out.write(f"\nError: Assignments can only be reset if the group '{group}' is inactive, "
                      f"but the current state is {described.group_state}.\n")
            status = 1
            continue
        target = reset_targets(admin, args, group)
        if args.execute:
            errors = {tp: e for tp, e in admin.commit(group, target).items() if e != "NONE"}
            for (t, p), e in sorted(errors.items()):
                out.write(f"Error: commit of {t}-{p} failed: {e}\n")
            status = status or (1 if errors else 0)
        rows += [(group, t, p, target[(t, p)]) for t, p in sorted(target)]
    if args.export:  # Kafka's CSV: with several groups, the group first on each line
        several = len({r[0] for r in rows[1:]}) > 1
        for group, topic, partition, offset in rows[1:]:
            out.write((f"{group}," if several else "") + f"{topic},{partition},{offset}\n")
    elif len(rows) > 1:
        table(rows, out)
    return status


def cmd_delete_offsets(admin: ClusterAdmin, args: argparse.Namespace, out: TextIO) -> int:
    (group,) = args.group
    top, results = admin.delete_offsets(group, _resolve(admin, parse_topics(args.topic)))
    if top == "NONE" and all(e == "NONE" for e in results.values()):
        out.write(f"Request succeeded for deleting offsets from group {group}.\n")
    elif top in ("NONE", "GROUP_SUBSCRIBED_TO_TOPIC", "UNKNOWN_TOPIC_OR_PARTITION"):
        out.write("\nError: Encountered some partition-level error, see the follow-up details.\n")
    else:
        out.write(f"\nError: {top}\n")
    table([("TOPIC", "PARTITION", "STATUS"),
           *[(t, p, "Successful" if e == "NONE" else f"Error: {e}")
             for (t, p), e in sorted(results.items())]], out)
    return 0 if top == "NONE" and all(e == "NONE" for e in results.values()) else 1


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset, "delete-offsets": cmd_delete_offsets}


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    if any(a in ("-h", "--help") for a in argv):
        build_parser().print_help()
        return 0
    try:
        args = build_parser().parse_args(normalize(argv))
        action = check_args(args)
        with ClusterAdmin(args.bootstrap_server, timeout=max(args.timeout, 1000) / 1000,
                          client_id=args.client.get("client.id", "kafkette-admin"),
                          security=args.client) as admin:
            return COMMANDS[action](admin, args, out or sys.stdout)
    except (UsageError, AdminError, OSError) as exc:
        print(f"kafkette groups: {exc}", file=sys.stderr)
        return 1
