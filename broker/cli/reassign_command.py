"""``kafkette reassign-partitions``: kafka-reassign-partitions.sh's actions, refusals and output
(ReassignPartitionsCommand), over AlterPartitionReassignments and ListPartitionReassignments.

    kafkette reassign-partitions --bootstrap-server H:P --reassignment-json-file move.json --execute
    kafkette reassign-partitions --bootstrap-server H:P --reassignment-json-file move.json --verify
    kafkette reassign-partitions --bootstrap-server H:P --reassignment-json-file move.json --cancel
    kafkette reassign-partitions --bootstrap-server H:P --list
    kafkette reassign-partitions --bootstrap-server H:P --generate
        --topics-to-move-json-file topics.json --broker-list 1,2,3

move.json: {"version": 1, "partitions": [{"topic": "orders", "partition": 0,
"replicas": [2, 3]}]}; topics.json: {"version": 1, "topics": [{"topic": "orders"}]}.
kafkette has no replication throttles and one log directory per broker: --throttle and
--replica-alter-log-dirs-throttle are accepted and change nothing, log_dirs must be "any".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from .admin_client import AdminClient, AdminError
from .client_security import ClientConfigError, read_command_config
from .kafka_clients import ToolError, ToolParser, UsageError, opt
from .reassign_admin import Partition, ReassignAdmin

ACTIONS = ("generate", "execute", "verify", "cancel", "list")
REQUIRED = {"verify": ["reassignment-json-file"], "execute": ["reassignment-json-file"],
            "cancel": ["reassignment-json-file"],
            "generate": ["topics-to-move-json-file", "broker-list"], "list": []}
PERMITTED = {
    "verify": ["bootstrap-server", "command-config", "preserve-throttles"],
    "generate": ["bootstrap-server", "broker-list", "command-config", "disable-rack-aware"],
    "execute": ["additional", "bootstrap-server", "command-config", "throttle",
                "replica-alter-log-dirs-throttle", "timeout", "disallow-replication-factor-change"],
    "cancel": ["bootstrap-server", "command-config", "preserve-throttles", "timeout"],
    "list": ["bootstrap-server", "command-config"],
}
CANNOT_EXECUTE = ("Cannot execute because there is an existing partition assignment.  Use "
                  "--additional to override this and create a new partition assignment in "
                  "addition to the existing one. The --additional flag can also be used to "
                  "change the throttle by resubmitting the current reassignment.")


UNKNOWN = "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"


class CommandFailed(ToolError):
    """Kafka's AdminCommandFailedException: printed as ``Error: <message>``."""


def build_parser() -> ToolParser:
    p = ToolParser(prog="kafkette reassign-partitions", add_help=False,
                   description=__doc__.split("\n\n")[0],
                   formatter_class=argparse.RawDescriptionHelpFormatter,
                   epilog=__doc__.split("\n\n", 1)[1])
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    for option in ("bootstrap-server", "command-config", "reassignment-json-file",
                   "topics-to-move-json-file", "broker-list", "throttle",
                   "replica-alter-log-dirs-throttle", "timeout"):
        p.add_argument(f"--{option}")
    for flag in ("disable-rack-aware", "additional", "preserve-throttles",
                 "disallow-replication-factor-change", "help", "version"):
        p.add_argument(f"--{flag}", action="store_true")
    return p


def check_args(args: argparse.Namespace, argv: Sequence[str]) -> str:
    """validateAndParseArgs: the action, or UsageError with Kafka's message."""
    given = {a[2:].split("=", 1)[0] for a in argv if a.startswith("--")}
    actions = [a for a in ACTIONS if a in given]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: "
                         + ", ".join(f"--{a}" for a in ACTIONS))
    action = actions[0]
    if not args.bootstrap_server:
        raise UsageError("Please specify either --bootstrap-server or --bootstrap-controller")
    for required in REQUIRED[action]:
        if required not in given:
            raise UsageError(f'Missing required argument "{opt(required)}"')
    for option in sorted(given):
        if option != action and option not in REQUIRED[action] + PERMITTED[action]:
            raise UsageError(f'Option "{opt(option)}" can\'t be used with action '
                             f'"{opt(action)}"')
    return action


# Reassignment JSON ----------------------------------------------------------------------------

def _json(path: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise CommandFailed(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CommandFailed(f"{path} is not valid JSON: {exc}") from None


def parse_reassignment(path: str) -> list[tuple[Partition, list[int]]]:
    """parsePartitionReassignmentData (version 1): (partition, replicas) in the file's order."""
    data = _json(path)
    if not isinstance(data, dict):
        raise CommandFailed(f"{path}: expected a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise CommandFailed(f"Not supported version field value {version}")
    out = []
    for entry in data.get("partitions", []):
        try:
            topic, partition = str(entry["topic"]), int(entry["partition"])
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise CommandFailed(f"{path}: a partition needs topic, partition and replicas "
                                f"({exc})") from None
        log_dirs = entry.get("log_dirs", ["any"] * len(replicas))
        if len(log_dirs) != len(replicas):
            raise CommandFailed(f"Size of replicas list {_list(replicas)} is different from size "
                                f"of log dirs list {_list(log_dirs)} for partition "
                                f"{topic}-{partition}")
        if any(d != "any" for d in log_dirs):
            raise CommandFailed("kafkette has one log directory per broker: log_dirs must be "
                                "\"any\"")
        out.append(((topic, partition), replicas))
    return out


def check_execute(parts: list[tuple[Partition, list[int]]]) -> dict[Partition, list[int]]:
    """parseExecuteAssignmentArgs."""
    if not parts:
        raise CommandFailed("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise CommandFailed("Partition replica list cannot be empty")
    seen = [tp for tp, _ in parts]
    twice = sorted({tp for tp in seen if seen.count(tp) > 1})
    if twice:
        raise CommandFailed("Partition reassignment contains duplicate topic partitions: "
                            + ",".join(_tp(tp) for tp in twice))
    duplicated = [(tp, sorted({r for r in replicas if replicas.count(r) > 1}))
                  for tp, replicas in parts]
    duplicated = [(tp, rs) for tp, rs in duplicated if rs]
    if duplicated:
        raise CommandFailed("Partition replica lists may not contain duplicate entries: " + ". ".join(
            f"{_tp(tp)} contains multiple entries for {','.join(map(str, rs))}"
            for tp, rs in duplicated))
    return dict(parts)


def as_json(parts: dict[Partition, list[int]]) -> str:
    """formatAsReassignmentJson: compact, partitions sorted."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": parts[(t, p)],
         "log_dirs": ["any"] * len(parts[(t, p)])} for t, p in sorted(parts)]},
        separators=(",", ":"))


def _tp(tp: Partition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _list(items: Sequence[Any]) -> str:
    return "[" + ", ".join(map(str, items)) + "]"


def _joined(items: Sequence[int]) -> str:
    return ",".join(map(str, items))


# Actions --------------------------------------------------------------------------------------

def execute(admin: ReassignAdmin, args: argparse.Namespace, out: TextIO) -> None:
    proposed = check_execute(parse_reassignment(args.reassignment_json_file))
    if not args.additional and admin.ongoing():
        raise ToolError(CANNOT_EXECUTE)
    live = set(admin.brokers())
    unknown = next((b for replicas in proposed.values() for b in replicas if b not in live), None)
    if unknown is not None:
        raise CommandFailed(f"Unknown broker id {unknown}")
    current = admin.replicas(t for t, _ in proposed)
    known_topics = {t for t, _ in current}
    if any(t not in known_topics for t, _ in proposed):
        raise CommandFailed(f"{UNKNOWN}: This server does not host this topic-partition.")
    missing = sorted(tp for tp in proposed if tp not in current)
    if missing:
        raise CommandFailed(f"{UNKNOWN}: Unable to find partition: "
                            + ", ".join(_tp(tp) for tp in missing))
    print("Current partition replica assignment\n\n"
          + as_json({tp: r for tp, r in current.items() if tp in proposed})
          + "\n\nSave this to use as the --reassignment-json-file option during rollback",
          file=out)
    failed = admin.alter(proposed, allow_replication_factor_change=not
                         args.disallow_replication_factor_change)
    if failed:
        raise ToolError("Error reassigning partition(s):\n" + "\n".join(
            f"{_tp(tp)}: {message or name}" for tp, (name, message) in sorted(failed.items())))
    print(f"Successfully started partition reassignment{'' if len(proposed) == 1 else 's'} for "
          + ",".join(_tp(tp) for tp in sorted(proposed)), file=out)


def verify(admin: ReassignAdmin, args: argparse.Namespace, out: TextIO) -> bool:
    """Prints each partition's state; True when none is still moving."""
    targets = parse_reassignment(args.reassignment_json_file)
    ongoing = admin.ongoing()
    current = admin.replicas({t for (t, _), _ in targets})
    lines = ["Status of partition reassignment:"]
    for tp, target in sorted(dict(targets).items()):
        if tp in ongoing:
            lines.append(f"Reassignment of partition {_tp(tp)} is still in progress.")
        elif current.get(tp, []) == target:
            lines.append(f"Reassignment of partition {_tp(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {_tp(tp)}, but replica "
                         f"set is {_joined(current.get(tp, []))} rather than "
                         f"{_joined(target)}.")
    print("\n".join(lines), file=out)
    return not any(tp in ongoing for tp, _ in targets)


def cancel(admin: ReassignAdmin, args: argparse.Namespace, out: TextIO) -> None:
    targets = {tp for tp, _ in parse_reassignment(args.reassignment_json_file)}
    # Kafka's selection of the moves to cancel (cancelAssignment)
    active = sorted(tp for tp, (_, adding, removing) in admin.ongoing(targets).items()
                    if not adding or removing)
    if active:
        failed = admin.alter(dict.fromkeys(active))
        if failed:
            raise ToolError(f"Error cancelling partition reassignment{'' if len(failed) == 1 else 's'}"
                            " for:\n" + "\n".join(f"{_tp(tp)}: {message or name}"
                                                  for tp, (name, message) in sorted(failed.items())))
        print(f"Successfully cancelled partition reassignment{'' if len(active) == 1 else 's'} "
              f"for: {','.join(_tp(tp) for tp in active)}", file=out)
    else:
        print("None of the specified partition reassignments are active.", file=out)
    print("None of the specified partition moves are active.", file=out)


def list_ongoing(admin: ReassignAdmin, args: argparse.Namespace, out: TextIO) -> None:
    ongoing = admin.ongoing()
    if not ongoing:
        print("No partition reassignments found.", file=out)
        return
    lines = ["Current partition reassignments:"]
    for tp, (replicas, adding, removing) in sorted(ongoing.items()):
        lines.append(f"{_tp(tp)}: replicas: {_joined(replicas)}."
                     + (f" adding: {_joined(adding)}." if adding else "")
                     + (f" removing: {_joined(removing)}." if removing else ""))
    print("\n".join(lines), file=out)


def generate(admin: ReassignAdmin, args: argparse.Namespace, out: TextIO) -> None:
    """A candidate assignment: each topic's partitions spread round-robin over --broker-list,
    with its current replication factor (Kafka's replica placer without racks)."""
    try:
        brokers = [int(b) for b in args.broker_list.split(",")]
    except ValueError:
        raise CommandFailed(f"Invalid broker list {args.broker_list}") from None
    twice = sorted({b for b in brokers if brokers.count(b) > 1})
    if twice:
        raise CommandFailed(f"Broker list contains duplicate entries: {_list(twice)}")
    data = _json(args.topics_to_move_json_file)
    if not isinstance(data, dict) or data.get("version", 1) != 1:
        raise CommandFailed(f"Not supported version field value {data.get('version')}"
                            if isinstance(data, dict) else "expected a JSON object")
    topics = [str(t["topic"]) for t in data.get("topics", [])]
    duplicated = sorted({t for t in topics if topics.count(t) > 1})
    if duplicated:
        raise CommandFailed("List of topics to reassign contains duplicate entries: "
                            + _list(duplicated))
    live = set(admin.brokers())
    unknown = next((b for b in brokers if b not in live), None)
    if unknown is not None:
        raise CommandFailed(f"Unknown broker id {unknown}")
    current = admin.replicas(topics)
    missing = sorted(set(topics) - {t for t, _ in current})
    if missing:
        raise CommandFailed(f"Topic {missing[0]} not found")
    proposed: dict[Partition, list[int]] = {}
    for index, (topic, partition) in enumerate(sorted(current)):
        factor = len(current[(topic, partition)])
        if factor > len(brokers):
            raise CommandFailed(f"Replication factor: {factor} larger than available brokers: "
                                f"{len(brokers)}.")
        proposed[(topic, partition)] = [brokers[(index + i) % len(brokers)]
                                        for i in range(factor)]
    print(f"Current partition replica assignment\n{as_json(current)}\n", file=out)
    print(f"Proposed partition reassignment configuration\n{as_json(proposed)}", file=out)


COMMANDS = {"execute": execute, "verify": verify, "cancel": cancel, "list": list_ongoing,
            "generate": generate}


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_tool_args(argv, out)
        if args is None:
            return 0
        action = check_args(args, argv)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        parser.print_usage(sys.stderr)
        return 1
    try:
        security = read_command_config(args.command_config) or None
        with AdminClient(args.bootstrap_server, client_id="reassign-partitions-tool",
                         security=security) as client:
            COMMANDS[action](ReassignAdmin(client), args, out)
    except CommandFailed as exc:
        print(f"Error: {exc}", file=out)
        return 1
    except (ToolError, ClientConfigError) as exc:  # Kafka's TerseException: the message alone
        print(exc, file=out)
        return 1
    except (AdminError, OSError) as exc:
        print(f"Error: {exc}", file=out)
        return 1
    return 0
