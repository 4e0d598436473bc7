"""``kafkette topics``: kafka-topics.sh's flags, refusals and output, on confluent-kafka.

    kafkette topics --bootstrap-server H:P --create --topic T [--partitions N]
        [--replication-factor N | --replica-assignment 1:2,2:3] [--config k=v ...] [--if-not-exists]
    kafkette topics --bootstrap-server H:P --list [--topic REGEX] [--exclude-internal]
    kafkette topics --bootstrap-server H:P --describe [--topic REGEX] [--exclude-internal]
        [--if-exists] [--under-replicated-partitions | --unavailable-partitions |
         --under-min-isr-partitions | --at-min-isr-partitions | --topics-with-overrides]
    kafkette topics --bootstrap-server H:P --alter --topic REGEX --partitions N [--if-exists]
    kafkette topics --bootstrap-server H:P --delete --topic REGEX [--if-exists]

--topic is a regular expression (full match) except with --create, as in Kafka; --json (not
Kafka's) prints --list and --describe as JSON. A failed command prints ``Error while executing topic command : <reason>`` and exits 1.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .kafka_clients import (
    ToolError,
    ToolParser,
    UsageError,
    client_config,
    confluent,
    opt,
    properties_file,
    refuse_with,
    require,
)

ACTIONS = ("list", "describe", "create", "alter", "delete")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
REPORTS = ("under-replicated-partitions", "under-min-isr-partitions", "at-min-isr-partitions",
           "unavailable-partitions")
TIMEOUT_S = 30.0
COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or "
                     "underscore ('_') could collide. To avoid issues it is best to use either, "
                     "but not both.")


def build_parser() -> ToolParser:
    p = ToolParser(prog="kafkette topics", description="Create, delete, describe, or change a topic.",
                   epilog=__doc__.split("\n\n")[1], add_help=False)
    p.add_argument("--help", action="store_true")
    p.add_argument("--version", action="store_true")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]")
    p.add_argument("--command-config", metavar="FILE",
                   help="client properties (security settings, client.id, ...)")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topic")
    p.add_argument("--config", action="append", metavar="name=value")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--replica-assignment")
    for report in REPORTS:
        p.add_argument(f"--{report}", action="store_true")
    p.add_argument("--topics-with-overrides", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--exclude-internal", action="store_true")
    p.add_argument("--partition-size-limit-per-response", type=int)
    p.add_argument("--json", action="store_true",
                   help="kafkette's own: --list and --describe print JSON")
    return p


def given_options(args: Any) -> set[str]:
    return {name.replace("_", "-") for name, value in vars(args).items()
            if value not in (None, False, [])}


def check_args(args: Any) -> str:
    """Kafka's TopicCommandOptions.checkArgs; returns the action."""
    actions = [a for a in ACTIONS if getattr(args, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --create, "
                         "--alter or --delete")
    action = actions[0]
    if args.bootstrap_server is None:
        raise ToolError("--bootstrap-server must be specified")
    if action not in ("list", "describe"):
        require(args.topic, "topic")
    given = given_options(args)
    if action == "alter":
        if args.config:
            raise UsageError(f'Option combination "[{opt("bootstrap-server")}, {opt("config")}]" '
                             f'can\'t be used with option "{opt("alter")}" (To alter topic '
                             "configurations, the kafka-configs tool can be used.)")
        require(args.partitions, "partitions")
    others = [a for a in ACTIONS]
    refuse_with("config", [a for a in others if a not in ("alter", "create")], given)
    refuse_with("partitions", [a for a in others if a not in ("alter", "create")], given)
    refuse_with("replication-factor", [a for a in others if a != "create"], given)
    refuse_with("replica-assignment", [a for a in others if a not in ("alter", "create")], given)
    if action == "create":
        refuse_with("replica-assignment", ["partitions", "replication-factor"], given)
    for report in REPORTS:
        refuse_with(report, ["topics-with-overrides"] + [a for a in others if a != "describe"],
                    given)
    refuse_with("topics-with-overrides", list(REPORTS) + [a for a in others if a != "describe"],
                given)
    refuse_with("if-exists", [a for a in others if a not in ("alter", "delete", "describe")], given)
    refuse_with("if-not-exists", [a for a in others if a != "create"], given)
    refuse_with("exclude-internal", [a for a in others if a not in ("list", "describe")], given)
    refuse_with("json", [a for a in others if a not in ("list", "describe")], given)
    return action


# Values --------------------------------------------------------------------------------------

def topic_configs(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        parts = item.split("=")
        if len(parts) != 2 or not parts[0]:
            raise ToolError('requirement failed: Invalid topic config: all configs to be added '
                            'must be in the format "key=val".')
        out[parts[0].strip()] = parts[1].strip()
    return out


def replica_assignment(text: str) -> list[list[int]]:
    """Kafka's parseReplicaAssignment: ``1:2,2:3`` is partition 0 on 1 and 2, partition 1 on 2
    and 3."""
    out: list[list[int]] = []
    for i, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":") if b.strip()]
        except ValueError:
            raise ToolError(f'For input string: "{part}"') from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise ToolError("Partition replica lists may not contain duplicate entries: "
                            + ", ".join(map(str, duplicates)))
        if out and len(brokers) != len(out[0]):
            raise ToolError(f"Partition {i} has different replication factor: "
                            f"[{', '.join(map(str, brokers))}]")
        out.append(brokers)
    return out


def kafka_uuid(topic_id: Any) -> str:
    """Kafka's Uuid.toString (URL-safe base64) of confluent-kafka's Uuid (standard base64)."""
    return str(topic_id).replace("+", "-").replace("/", "_").rstrip("=")


def error_text(exc: BaseException) -> str:
    """The message Kafka's exception would carry: the broker's error message when it sent one."""
    error: Any = exc.args[0] if exc.args else None
    return error.str() if hasattr(error, "str") else str(exc)


# Commands ------------------------------------------------------------------------------------

class TopicTool:
    def __init__(self, args: Any, out: TextIO) -> None:
        kafka = confluent()
        from confluent_kafka.admin import AdminClient

        self.kafka = kafka
        self.args = args
        self.out = out
        self.admin = AdminClient(client_config(args.bootstrap_server,
                                               properties_file(args.command_config)))

    def topics(self) -> list[str]:
        """Kafka's getTopics: every topic, sorted, matching --topic, internal ones unless
        --exclude-internal."""
        names = sorted(self.admin.list_topics(timeout=TIMEOUT_S).topics)
        pattern = self.args.topic
        if pattern is not None:
            try:
                regex = re.compile(pattern)
            except re.error as exc:
                raise ToolError(f"Invalid topic regular expression {pattern!r}: {exc}") from None
            names = [n for n in names if regex.fullmatch(n)]
        if self.args.exclude_internal:
            names = [n for n in names if n not in INTERNAL_TOPICS]
        return names

    def existing(self) -> list[str]:
        names = self.topics()
        if self.args.topic and not names and not self.args.if_exists:
            raise ToolError(f"Topic 'Optional[{self.args.topic}]' does not exist as expected")
        return names

    def create(self) -> None:
        from confluent_kafka.admin import NewTopic

        args = self.args
        if "." in args.topic or "_" in args.topic:
            self.out.write(COLLISION_WARNING + "\n")
        configs = topic_configs(args.config)
        if args.replication_factor is not None and not 1 <= args.replication_factor <= 32767:
            raise ToolError("The replication factor must be between 1 and 32767 inclusive")
        if args.partitions is not None and args.partitions < 1:
            raise ToolError("The partitions must be greater than 0")
        if args.replica_assignment:
            assignment = replica_assignment(args.replica_assignment)
            # librdkafka wants the partition count of the assignment beside it
            topic = NewTopic(args.topic, num_partitions=len(assignment),
                             replica_assignment=assignment, config=configs)
        else:
            topic = NewTopic(args.topic, num_partitions=args.partitions or -1,
                             replication_factor=args.replication_factor or -1, config=configs)
        future = self.admin.create_topics([topic], operation_timeout=TIMEOUT_S)[args.topic]
        try:
            future.result(TIMEOUT_S)
        except self.kafka.KafkaException as exc:
            if args.if_not_exists and exc.args[0].code() == \
                    self.kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                return
            raise
        self.out.write(f"Created topic {args.topic}.\n")

    def list_topics(self) -> None:
        names = self.topics()
        self.out.write((json.dumps(names) if self.args.json else "\n".join(names)) + "\n")

    def alter(self) -> None:
        from confluent_kafka.admin import NewPartitions

        args = self.args
        names = self.existing()
        if not names:
            return
        assignment = replica_assignment(args.replica_assignment) if args.replica_assignment \
            else None
        requests = []
        for name in names:
            if assignment is None:
                requests.append(NewPartitions(name, args.partitions))
            else:  # the lists of the new partitions: those past the current count
                current = len(self.describe_topics([name])[name].partitions)
                requests.append(NewPartitions(name, args.partitions, assignment[current:]))
        for future in self.admin.create_partitions(requests, operation_timeout=TIMEOUT_S).values():
            future.result(TIMEOUT_S)

    def delete(self) -> None:
        names = self.existing()
        if not names:
            return
        for future in self.admin.delete_topics(names, operation_timeout=TIMEOUT_S).values():
            future.result(TIMEOUT_S)

    def describe_topics(self, names: list[str]) -> dict[str, Any]:
        described = self.admin.describe_topics(self.kafka.TopicCollection(names),
                                               request_timeout=TIMEOUT_S)
        return {name: future.result(TIMEOUT_S) for name, future in described.items()}

    def describe(self) -> None:
        from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

        args = self.args
        names = self.existing()
        if not names:
            return
        descriptions = self.describe_topics(names)
        resources = {name: ConfigResource(ResourceType.TOPIC, name) for name in names}
        futures = self.admin.describe_configs(list(resources.values()), request_timeout=TIMEOUT_S)
        configs = {name: futures[resources[name]].result(TIMEOUT_S) for name in names}
        live = {node.id for node in
                self.admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S).nodes}
        reports = [r for r in REPORTS if getattr(args, r.replace("-", "_"))]
        described: list[dict[str, Any]] = []
        for name in names:
            topic = descriptions[name]
            entries = configs[name]
            overrides = {k: e.value for k, e in entries.items()
                         if e.source not in (ConfigSource.DEFAULT_CONFIG,
                                             ConfigSource.DEFAULT_CONFIG.value)}
            partitions = sorted(topic.partitions, key=lambda p: p.id)
            min_isr = int(entries["min.insync.replicas"].value) \
                if "min.insync.replicas" in entries else 1
            entry: dict[str, Any] = {
                "topic": name, "topic_id": kafka_uuid(topic.topic_id),
                "partition_count": len(partitions),
                "replication_factor": len(partitions[0].replicas) if partitions else 0,
                "configs": overrides, "partitions": []}
            # Kafka prints the topic line unless a partition report is asked (or, with
            # --topics-with-overrides, when the topic has none), and then its partitions.
            entry["listed"] = not reports and (not args.topics_with_overrides or overrides)
            if not args.topics_with_overrides:
                entry["partitions"] = [
                    {"partition": p.id, "leader": p.leader.id if p.leader is not None else None,
                     "replicas": [n.id for n in p.replicas], "isr": [n.id for n in p.isr]}
                    for p in partitions
                    if not reports or any(_matches(r, p, min_isr, live) for r in reports)]
            described.append(entry)
        if args.json:
            shown = [{k: v for k, v in e.items() if k != "listed"} for e in described
                     if e["listed"] or e["partitions"]]
            self.out.write(json.dumps(shown, indent=2) + "\n")
            return
        for e in described:
            if e["listed"]:
                self.out.write(
                    f"Topic: {e['topic']}\tTopicId: {e['topic_id']}"
                    f"\tPartitionCount: {e['partition_count']}"
                    f"\tReplicationFactor: {e['replication_factor']}"
                    f"\tConfigs: {','.join(f'{k}={v}' for k, v in e['configs'].items())}\n")
            for p in e["partitions"]:
                leader = "none" if p["leader"] is None else p["leader"]
                self.out.write(
                    f"\tTopic: {e['topic']}\tPartition: {p['partition']}\tLeader: {leader}"
                    f"\tReplicas: {','.join(map(str, p['replicas']))}"
                    f"\tIsr: {','.join(map(str, p['isr']))}\tElr: \tLastKnownElr: \n")


def _matches(report: str, p: Any, min_isr: int, live: set[int]) -> bool:
    """Kafka's PartitionDescription checks behind the --*-partitions reports."""
    leader = p.leader.id if p.leader is not None else None
    if report == "under-replicated-partitions":
        return len(p.replicas) - len(p.isr) > 0
    if report == "under-min-isr-partitions":
        return leader is None or len(p.isr) < min_isr
    if report == "at-min-isr-partitions":
        return len(p.isr) == min_isr
    return leader is None or leader not in live  # unavailable-partitions


def main(argv: Sequence[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    try:
        if not argv:
            raise UsageError("Create, delete, describe, or change a topic.")
        args = parser.parse_tool_args(argv, out)
        if args is None:
            return 0
        action = check_args(args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        parser.print_usage(sys.stderr)
        return 1
    except ToolError as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        tool = TopicTool(args, out)
        {"create": tool.create, "list": tool.list_topics, "alter": tool.alter, "delete": tool.delete,
         "describe": tool.describe}[action]()
    except ToolError as exc:
        out.write(f"Error while executing topic command : {exc}\n")
        return 1
    except Exception as exc:  # noqa: BLE001 - a client failure, reported as Kafka's tool does
        kafka = sys.modules.get("confluent_kafka")
        if kafka is None or not isinstance(exc, kafka.KafkaException):
            raise
        out.write(f"Error while executing topic command : {error_text(exc)}\n")
        return 1
    return 0
