"""``kafkette share-groups``: kafka-share-groups.sh's flags, refusals and output (KIP-932).

    kafkette share-groups --bootstrap-server H:P --list [--state [S,S]]
    kafkette share-groups --bootstrap-server H:P --describe (--group G ... | --all-groups)
        [--offsets | --members | --state] [--verbose]
    kafkette share-groups --bootstrap-server H:P --delete (--group G ... | --all-groups)
    kafkette share-groups --bootstrap-server H:P --reset-offsets --group G
        [--topic T[:P,P] ... | --all-topics] (--to-earliest | --to-latest | --to-datetime ISO)
        (--dry-run | --execute)
    kafkette share-groups --bootstrap-server H:P --delete-offsets --group G --topic T ...

Tables are Kafka's: left-aligned columns at least 15 wide, "-" for a value not known yet.
A refused command line is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from .admin_client import EARLIEST, LATEST, AdminError
from .client_security import ClientConfigError, read_command_config
from .groups_command import parse_datetime, parse_topics
from .groups_parser import UsageError as TopicSpecError  # parse_topics' and parse_datetime's
from .share_admin_client import OffsetRow, ShareAdminClient, ShareGroupRow

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SHARE_STATES = ("Empty", "Stable", "Dead")  # GroupState.groupStatesForType(SHARE)
SCENARIOS = ("to-datetime", "to-earliest", "to-latest")
DASH = "-"
# Java exception class names of the errors the delete path reports, as Kafka prints them
EXCEPTIONS = {68: "org.apache.kafka.common.errors.GroupNotEmptyException",
              69: "org.apache.kafka.common.errors.GroupIdNotFoundException",
              15: "org.apache.kafka.common.errors.CoordinatorNotAvailableException",
              16: "org.apache.kafka.common.errors.NotCoordinatorException",
              30: "org.apache.kafka.common.errors.GroupAuthorizationException"}
ERROR_MESSAGES = {68: "The group is not empty.", 69: "The group id does not exist.",
                  15: "The coordinator is not available.",
                  16: "This is not the correct coordinator.",
                  30: "Group authorization failed.",
                  3: "This server does not host this topic-partition."}


class UsageError(Exception):
    """A refused command line (Kafka's printUsageAndExit); the message is Kafka's."""


class Refused(Exception):
    """Kafka's IllegalArgumentException path: the message alone on stderr, exit status 1."""


class CommandFailed(Exception):
    """Kafka's "Error: Executing share group command failed due to ..." (exit status 1)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafkette share-groups", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                   help="REQUIRED: the server(s) to connect to")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--group", action="append", default=[], help="the share group (repeatable)")
    p.add_argument("--all-groups", action="store_true")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]")
    p.add_argument("--all-topics", action="store_true")
    p.add_argument("--members", action="store_true")
    p.add_argument("--offsets", action="store_true")
    p.add_argument("--state", nargs="?", const="", default=None, metavar="STATE[,STATE]")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--execute", action="store_true")
    p.add_argument("--to-datetime", metavar="YYYY-MM-DDThh:mm:ss.sss")
    p.add_argument("--to-earliest", action="store_true")
    p.add_argument("--to-latest", action="store_true")
    p.add_argument("--timeout", type=int, default=30000, metavar="MS")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties: client.id, and a TLS/SASL login (security.protocol, "
                        "sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...)")
    return p


def _o(name: str) -> str:
    return f"[{name}]"


def _invalid(used: str, other: str) -> UsageError:
    return UsageError(f'Option "{_o(used)}" can\'t be used with option "{_o(other)}"')


def check_args(args: argparse.Namespace) -> str:
    """Kafka's ShareGroupCommandOptions (parse, then checkArgs), then the one-action rule;
    returns the action."""
    if not args.describe and (args.members or args.offsets or args.verbose):
        flag = next(n for n in ("members", "offsets", "verbose") if getattr(args, n))
        raise UsageError(f"Option(s) {_o(flag)} are unavailable given other options on the "
                         "command line")
    if args.state is not None and not (args.describe or args.list):
        raise UsageError(f"Option(s) {_o('state')} are unavailable given other options on the "
                         "command line")
    if not args.bootstrap_server:
        raise UsageError(f'Missing required argument "{_o("bootstrap-server")}"')
    scope = f"{_o('all-groups')}, {_o('group')}"
    if args.describe:
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_o('describe')} takes one of these options: {scope}")
        chosen = [n for n, on in (("members", args.members), ("offsets", args.offsets),
                                  ("state", args.state is not None)) if on]
        if len(chosen) > 1:
            raise UsageError(f"Option {_o('describe')} takes at most one of these options: "
                             f"{_o('members')}, {_o('offsets')}, {_o('state')}")
        if args.state:
            raise UsageError(f"Option {_o('describe')} does not take a value for {_o('state')}")
    if args.delete:
        if not args.group and not args.all_groups:
            raise UsageError(f"Option {_o('delete')} takes the options {_o('group')} or "
                             f"{_o('all-groups')}")
        if args.group and args.all_groups:
            raise UsageError(f"Option {_o('delete')} takes either {_o('group')} or "
                             f"{_o('all-groups')}, not both.")
        if args.topic:
            raise UsageError(f"Option {_o('delete')} does not take the option: {_o('topic')}")
    if args.delete_offsets and (not args.group or not args.topic):
        raise UsageError(f"Option {_o('delete-offsets')} takes the following options: "
                         f"{_o('group')}, {_o('topic')}")
    if args.reset_offsets:
        if args.dry_run and args.execute:
            raise UsageError(f"Option {_o('reset-offsets')} only accepts one of {_o('execute')} "
                             f"and {_o('dry-run')}")
        if not args.dry_run and not args.execute:
            raise UsageError(f"Option {_o('reset-offsets')} takes the option: {_o('execute')} "
                             f"or {_o('dry-run')}")
        if not args.group:
            raise UsageError(f"Option {_o('reset-offsets')} takes the option: {_o('group')}")
        used = [s for s in SCENARIOS if getattr(args, s.replace("-", "_")) not in (None, False)]
        if len(used) > 1:
            raise _invalid(used[0], used[1])
    if args.group and args.all_groups:
        raise _invalid("group", "all-groups")
    if args.group and args.list:
        raise _invalid("group", "list")
    for action in ("list", "describe"):
        if args.topic and getattr(args, action):
            raise _invalid("topic", action)
    actions = [a for a in ACTIONS if getattr(args, a.replace("-", "_"))]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: "
                         + ", ".join(f"--{a}" for a in ACTIONS) + ".")
    if args.reset_offsets:
        if len(args.group) > 1:
            raise UsageError("Found multiple arguments for option group, but you asked for "
                             "only one")
        if not any(getattr(args, s.replace("-", "_")) not in (None, False) for s in SCENARIOS):
            raise UsageError(f"Option {_o('reset-offsets')} requires one of the following "
                             f"scenarios: {', '.join(_o(s) for s in SCENARIOS)}")
        if args.topic and args.all_topics:
            raise _invalid("topic", "all-topics")
        parse_topics(args.topic)
        if args.to_datetime is not None:
            parse_datetime(args.to_datetime)
    elif args.dry_run or args.execute or args.all_topics:
        flag = next(n for n in ("dry-run", "execute", "all-topics")
                    if getattr(args, n.replace("-", "_")))
        raise UsageError(f"Option(s) {_o(flag)} are only used with {_o('reset-offsets')}")
    try:
        args.client = read_command_config(args.command_config)
    except ClientConfigError as exc:
        raise UsageError(str(exc)) from None
    return actions[0]


# Output -----------------------------------------------------------------------------------------

def printf(out: TextIO, widths: Sequence[int], values: Sequence[Any]) -> None:
    """One row as Kafka's ``"\\n%-Ws %-Ws ... %s"``: every column left-aligned to its width,
    the last one as is; the row starts with a newline."""
    cells = [f"{v!s:<{w}}" for v, w in zip(values, widths, strict=False)]
    out.write("\n" + " ".join(cells + [str(v) for v in values[len(widths):]]))


def _or_dash(value: int | None) -> str:
    return DASH if value is None else str(value)


def _error(out: TextIO, message: str) -> None:
    """Kafka's printError: a blank line, then "Error: ..." on stdout."""
    out.write(f"\nError: {message}\n")


def _empty_or_dead(group: ShareGroupRow, rows: int, out: TextIO) -> bool:
    """Kafka's maybePrintEmptyGroupState; True when the detail should be printed."""
    if group.state == "Dead":
        _error(out, f"Share group '{group.group_id}' does not exist.")
    elif group.state == "Empty":
        sys.stderr.write(f"\nShare group '{group.group_id}' has no active members.\n")
    return group.state != "Dead" and rows > 0


# Commands ---------------------------------------------------------------------------------------

def cmd_list(admin: ShareAdminClient, args: argparse.Namespace, out: TextIO) -> int:
    groups = admin.list_share_groups()
    if args.state is None:
        for group, _state in groups:
            out.write(group + "\n")
        return 0
    wanted = {s.strip().lower() for s in args.state.split(",") if s.strip()}
    if not wanted <= {s.lower() for s in SHARE_STATES}:
        raise Refused(f"Invalid state list '{args.state}'. Valid states are: "
                            + ", ".join(SHARE_STATES))
    shown = [(g, s) for g, s in groups if not wanted or s.lower() in wanted]
    width = max([15] + [len(g) for g, _s in shown])
    out.write(f"{'GROUP':<{width}} STATE\n")
    for group, state in shown:
        out.write(f"{group:<{width}} {state}\n")
    return 0


def _group_ids(admin: ShareAdminClient, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g for g, _s in admin.list_share_groups()]
    return list(dict.fromkeys(args.group))


def cmd_describe(admin: ShareAdminClient, args: argparse.Namespace, out: TextIO) -> int:
    described = admin.describe_share_groups(_group_ids(admin, args))
    status = 0
    for group_id in sorted(described):
        group = described[group_id]
        if args.members:
            describe_members(group, args.verbose, out)
        elif args.state is not None:
            describe_state(admin, group, args.verbose, out)
        elif group.state == "Dead":
            _error(out, f"Share group '{group_id}' does not exist.")
            status = 1
        else:
            describe_offsets(group_id, admin.share_offsets(group_id), args.verbose, out)
    return status


def describe_offsets(group_id: str, rows: list[OffsetRow], verbose: bool, out: TextIO) -> None:
    if not rows:
        out.write(f"\nShare group '{group_id}' has no offset information.\n")
        return
    head = [max(15, len(group_id)), max([15] + [len(r.topic) for r in rows]), 10, 13]
    if verbose:
        widths = head + [13]
        printf(out, widths, ("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"))
        for r in rows:
            printf(out, widths, (group_id, r.topic, r.partition, _or_dash(r.leader_epoch),
                                 _or_dash(r.start_offset), _or_dash(r.lag)))
    else:
        printf(out, head, ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"))
        for r in rows:
            printf(out, head, (group_id, r.topic, r.partition, _or_dash(r.start_offset),
                               _or_dash(r.lag)))
    out.write("\n")


def _assignment(partitions: list[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return ";".join(sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps))
                           for t, ps in by_topic.items()))


def describe_members(group: ShareGroupRow, verbose: bool, out: TextIO) -> None:
    members = sorted(group.members, key=lambda m: m.member_id)
    if not _empty_or_dead(group, len(members), out):
        return
    widths = [max(15, len(group.group_id)), max([15] + [len(m.member_id) for m in members]),
              max([15] + [len(m.client_host) for m in members]),
              max([15] + [len(m.client_id) for m in members]), 12]
    if verbose:
        widths.append(13)
        printf(out, widths, ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                             "MEMBER-EPOCH", "ASSIGNMENT"))
    else:
        printf(out, widths, ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                             "ASSIGNMENT"))
    for m in members:
        epoch = (m.member_epoch,) if verbose else ()
        printf(out, widths, (group.group_id, m.member_id, m.client_host, m.client_id,
                             len(m.partitions), *epoch, _assignment(m.partitions)))
    out.write("\n")


def describe_state(admin: ShareAdminClient, group: ShareGroupRow, verbose: bool,
                   out: TextIO) -> None:
    _empty_or_dead(group, 1, out)
    node, host, port = admin.find_coordinator(group.group_id)
    coordinator = f"{host}:{port}  ({node})"
    widths = [max(15, len(group.group_id)), max(25, len(coordinator)), 15]
    if verbose:
        widths += [12, 17]
        printf(out, widths, ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH",
                             "ASSIGNMENT-EPOCH", "#MEMBERS"))
        printf(out, widths, (group.group_id, coordinator, group.state, group.group_epoch,
                             group.assignment_epoch, len(group.members)))
    else:
        printf(out, widths, ("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS"))
        printf(out, widths, (group.group_id, coordinator, group.state, len(group.members)))
    out.write("\n")


def cmd_delete(admin: ShareAdminClient, args: argparse.Namespace, out: TextIO) -> int:
    listed = dict(admin.list_share_groups())
    wanted = list(listed) if args.all_groups else list(dict.fromkeys(args.group))
    failed: dict[str, str] = {}
    for group in wanted:
        state = listed.get(group)
        if state is None:
            failed[group] = (f"{EXCEPTIONS[69]}: Group '{group}' is not a share group.")
        elif state == "Dead":
            failed[group] = (f"java.lang.IllegalStateException: Share group '{group}' group "
                             "state is DEAD.")
        elif state != "Empty":
            failed[group] = f"{EXCEPTIONS[68]}: Share group '{group}' is not EMPTY."
    to_delete = [g for g in wanted if g not in failed]
    succeeded = []
    for group, error in (admin.delete_groups(to_delete) if to_delete else {}).items():
        if error == "NONE":
            succeeded.append(group)
        else:
            code = _code(error)
            failed[group] = (f"{EXCEPTIONS.get(code, 'org.apache.kafka.common.KafkaException')}: "
                             f"{ERROR_MESSAGES.get(code, error)}")
    quoted = ", ".join(f"'{g}'" for g in sorted(succeeded))
    if not failed:
        out.write(f"Deletion of requested share groups ({quoted}) was successful.\n")
        return 0
    _error(out, "Deletion of some share groups failed:")
    for group, reason in sorted(failed.items()):
        out.write(f"* Group '{group}' could not be deleted due to: {reason}\n")
    if succeeded:
        out.write(f"\nThese share groups were deleted successfully: {quoted}\n")
    return 1


def _code(error_name: str) -> int:
    from kio.schema.errors import ErrorCode

    return int(ErrorCode[error_name.lower()])


def cmd_reset(admin: ShareAdminClient, args: argparse.Namespace, out: TextIO) -> int:
    (group_id,) = args.group
    group = admin.describe_share_groups([group_id])[group_id]
    if group.state not in ("Empty", "Dead"):
        raise Refused(f"Share group '{group_id}' is not empty.")
    if args.topic:
        counts = admin.partitions(t for t, _ps in parse_topics(args.topic))
        tps = []
        for topic, parts in parse_topics(args.topic):
            if topic not in counts:
                raise CommandFailed(ERROR_MESSAGES[3])
            tps += [(topic, p) for p in (range(counts[topic]) if parts is None else parts)]
        unknown = [f"{t}-{p}" for t, p in tps if not 0 <= p < counts[t]]
        if unknown:
            raise CommandFailed(f"The partitions \"{','.join(unknown)}\" do not exist")
    else:
        tps = [(r.topic, r.partition) for r in admin.share_offsets(group_id)]
    tps = sorted(set(tps))
    earliest = admin.list_offsets(tps, EARLIEST)
    latest = admin.list_offsets(tps, LATEST)
    if args.to_earliest:
        target = dict(earliest)
    elif args.to_latest:
        target = dict(latest)
    else:
        found = admin.list_offsets(tps, parse_datetime(args.to_datetime))
        target = {tp: latest[tp] if off < 0 else off for tp, off in found.items()}
    if args.execute and target:
        top, message, results = admin.alter_share_offsets(group_id, target)
        if top:
            raise CommandFailed(message or ERROR_MESSAGES.get(top, str(top)))
        for (_t, _p), (code, msg) in sorted(results.items()):
            if code:
                raise CommandFailed(msg or ERROR_MESSAGES.get(code, str(code)))
    if target:
        widths = [max(15, len(group_id)), max([15] + [len(t) for t, _p in target]), 10]
        printf(out, widths, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
        for (topic, partition), offset in sorted(target.items()):
            printf(out, widths, (group_id, topic, partition, offset))
    out.write("\n")
    return 0


def cmd_delete_offsets(admin: ShareAdminClient, args: argparse.Namespace, out: TextIO) -> int:
    group_id = args.group[0]
    topics = sorted(set(args.topic))
    top, message, results = admin.delete_share_offsets(group_id, topics)
    status = 0
    if top in (24, 69, 30, 68):  # INVALID_GROUP_ID, GROUP_ID_NOT_FOUND, GROUP_AUTH, NON_EMPTY
        _error(out, message or ERROR_MESSAGES.get(top, str(top)))
        status = 1
    elif top and top not in (29, 3):
        _error(out, f"Encounter some unknown error: {message or top}")
        status = 1
    width = max([15] + [len(t) for t in topics])
    out.write(f"\n{'TOPIC':<{width}} STATUS")
    for topic in topics:
        code, msg = (top, message) if top else results.get(topic, (0, None))
        if code == 0:
            row = "Successful"
        else:
            row = f"Error: {msg or ERROR_MESSAGES.get(code, str(code))}"
            status = 1
        out.write(f"\n{topic:<{width}} {row}")
    out.write("\n")
    return status


COMMANDS = {"list": cmd_list, "describe": cmd_describe, "delete": cmd_delete,
            "reset-offsets": cmd_reset, "delete-offsets": cmd_delete_offsets}


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    if any(a in ("-h", "--help") for a in argv):
        build_parser().print_help()
        return 0
    out = out or sys.stdout
    try:
        args = build_parser().parse_args(list(argv))
        action = check_args(args)
        with ShareAdminClient(args.bootstrap_server, timeout=max(args.timeout, 1000) / 1000,
                              client_id=args.client.get("client.id", "kafkette-admin"),
                              security=args.client) as admin:
            return COMMANDS[action](admin, args, out)
    except (UsageError, TopicSpecError) as exc:
        print(f"kafkette share-groups: {exc}", file=sys.stderr)
        return 1
    except Refused as exc:
        print(exc, file=sys.stderr)
        return 1
    except (CommandFailed, AdminError, OSError) as exc:
        _error(out, f"Executing share group command failed due to {exc}")
        return 1
