"""``kafkette console-consumer``: kafka-console-consumer.sh's flags and output format, on
confluent-kafka: each record of a topic (or of the topics --include matches) on stdout.

    kafkette console-consumer --bootstrap-server H:P (--topic T | --include REGEX)
        [--from-beginning] [--group G] [--max-messages N] [--timeout-ms MS]
        [--partition P [--offset earliest|latest|N]] [--isolation-level read_committed]
        [--property print.key=true] [--property key.separator=,] [--property print.headers=true]
        [--property print.timestamp=true] [--property print.partition=true]
        [--property print.offset=true] [--property print.value=false] ...
        [--consumer-property k=v ...] [--consumer.config FILE | --command-config FILE]

Without --group the consumer joins a random group ``console-consumer-NNNNN`` that commits
nothing; with --group it commits as it goes. ``Processed a total of N messages`` goes to stderr
at the end, as Kafka's tool prints it.
"""

from __future__ import annotations

import random
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any, BinaryIO

from .kafka_clients import (
    ToolError,
    ToolParser,
    UsageError,
    client_config,
    confluent,
    key_values,
    properties_file,
    require,
)

EARLIEST, LATEST = "earliest", "latest"
# confluent-kafka's TIMESTAMP_CREATE_TIME / TIMESTAMP_LOG_APPEND_TIME
TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


def build_parser() -> ToolParser:
    p = ToolParser(prog="kafkette console-consumer", add_help=False,
                   description="Read data from Kafka topics and output it to standard output.")
    p.add_argument("--help", action="store_true")
    p.add_argument("--version", action="store_true")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]")
    p.add_argument("--topic")
    p.add_argument("--include", metavar="REGEX")
    p.add_argument("--partition", type=int)
    p.add_argument("--offset")
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--group")
    p.add_argument("--max-messages", type=int, default=-1)
    p.add_argument("--timeout-ms", type=int)
    p.add_argument("--property", action="append", default=[], metavar="key=value")
    p.add_argument("--formatter-config", metavar="FILE")
    p.add_argument("--consumer-property", action="append", default=[], metavar="key=value")
    p.add_argument("--consumer.config", "--command-config", dest="consumer_config",
                   metavar="FILE")
    p.add_argument("--isolation-level", default="read_uncommitted",
                   choices=("read_uncommitted", "read_committed"))
    p.add_argument("--skip-message-on-error", action="store_true")
    return p


class Formatter:
    """Kafka's DefaultMessageFormatter: the chosen fields of a record, separated by
    key.separator, ended by line.separator."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(key: str, default: bool) -> bool:
            return props[key].strip().lower() == "true" if key in props else default

        self.timestamp = flag("print.timestamp", False)
        self.partition = flag("print.partition", False)
        self.offset = flag("print.offset", False)
        self.delivery = flag("print.delivery", False)
        self.epoch = flag("print.epoch", False)
        self.headers = flag("print.headers", False)
        self.key = flag("print.key", False)
        self.value = flag("print.value", True)
        self.key_separator = props.get("key.separator", "\t").encode()
        self.line_separator = props.get("line.separator", "\n").encode()
        self.headers_separator = props.get("headers.separator", ",").encode()
        self.null_literal = props.get("null.literal", "null").encode()

    def format(self, msg: Any) -> bytes:
        fields: list[bytes] = []
        if self.timestamp:
            kind, ts = msg.timestamp()
            fields.append(f"{TIMESTAMP_TYPES[kind]}:{ts}".encode() if kind in TIMESTAMP_TYPES
                          else b"NO_TIMESTAMP")
        if self.partition:
            fields.append(f"Partition:{msg.partition()}".encode())
        if self.offset:
            fields.append(f"Offset:{msg.offset()}".encode())
        if self.delivery:
            fields.append(b"Delivery:NOT_PRESENT")
        if self.epoch:
            epoch = msg.leader_epoch()
            fields.append(b"Epoch:" + (b"NOT_PRESENT" if epoch is None else str(epoch).encode()))
        if self.headers:
            headers = msg.headers() or []
            fields.append(self.headers_separator.join(
                name.encode() + b":" + (self.null_literal if value is None else bytes(value))
                for name, value in headers) if headers else b"NO_HEADERS")
        if self.key:
            key = msg.key()
            fields.append(self.null_literal if key is None else key)
        if self.value:
            value = msg.value()
            fields.append(self.null_literal if value is None else value)
        return self.key_separator.join(fields) + self.line_separator if fields else b""


def check_args(args: Any, consumer_props: dict[str, str]) -> str | None:
    """Kafka's ConsoleConsumerOptions checks; returns the group id given (None: none)."""
    if (args.topic is None) == (args.include is None):
        raise UsageError("Exactly one of --include/--topic is required. ")
    if args.partition is not None:
        if args.topic is None:
            raise UsageError("The topic is required when partition is specified.")
        if args.from_beginning and args.offset is not None:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
    elif args.offset is not None:
        raise UsageError("The partition is required when offset is specified.")
    require(args.bootstrap_server, "bootstrap-server")
    groups = {g for g in (args.group, consumer_props.get("group.id")) if g is not None}
    if len(groups) > 1:
        raise UsageError("The group ids provided in different places (directly using '--group', "
                         "using '--consumer-property', or using '--consumer.config') do not "
                         "match. Detected group ids: "
                         + ", ".join(f"'{g}'" for g in sorted(groups)))
    if groups and args.partition is not None:
        raise UsageError("Options group and partition cannot be specified together.")
    if args.offset is not None and args.offset.lower() not in (EARLIEST, LATEST) and (
            not args.offset.lstrip("-").isdigit() or int(args.offset) < 0):
        raise UsageError(f"The provided offset value '{args.offset}' is incorrect. Valid values "
                         "are 'earliest', 'latest', or a non-negative long.")
    return next(iter(groups), None)


def consumer_config(args: Any, props: dict[str, str], group: str | None) -> dict[str, Any]:
    conf = client_config(args.bootstrap_server, props,
                         {"isolation.level": args.isolation_level})
    conf.setdefault("client.id", "console-consumer")
    if group is None:  # an auto-generated group, never used again: no commits
        conf["group.id"] = f"console-consumer-{random.randrange(100000)}"
        conf.setdefault("enable.auto.commit", "false")
    else:
        conf["group.id"] = group
    reset = conf.get("auto.offset.reset")
    if reset is None:
        conf["auto.offset.reset"] = EARLIEST if args.from_beginning else LATEST
    elif args.from_beginning and reset != EARLIEST:
        raise UsageError(f"Can't simultaneously specify --from-beginning and "
                         f"'auto.offset.reset={reset}', please remove one option")
    return conf


def run(args: Any, out: BinaryIO) -> int:
    kafka = confluent()
    props = {**properties_file(args.consumer_config), **key_values(args.consumer_property)}
    group = check_args(args, props)
    formatter = Formatter({**properties_file(args.formatter_config), **key_values(args.property)})
    consumer = kafka.Consumer(consumer_config(args, props, group))
    stopped: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
    count = 0
    try:
        if args.partition is not None:
            offset = {EARLIEST: kafka.OFFSET_BEGINNING, LATEST: kafka.OFFSET_END}.get(
                (args.offset or (EARLIEST if args.from_beginning else LATEST)).lower())
            consumer.assign([kafka.TopicPartition(
                args.topic, args.partition, offset if offset is not None else int(args.offset))])
        else:
            consumer.subscribe([args.topic] if args.topic is not None else [f"^{args.include}$"])
        deadline = None if args.timeout_ms is None else time.monotonic() + args.timeout_ms / 1000
        while (args.max_messages < 0 or count < args.max_messages) and not stopped:
            wait = 0.2 if deadline is None else max(min(0.2, deadline - time.monotonic()), 0)
            msg = consumer.poll(wait)
            if msg is None:
                if deadline is not None and time.monotonic() >= deadline:
                    print("Error processing message, terminating consumer process: "
                          "org.apache.kafka.common.errors.TimeoutException", file=sys.stderr)
                    break
                continue
            if msg.error() is not None:
                if msg.error().code() == kafka.KafkaError._PARTITION_EOF:
                    continue
                if msg.error().fatal() or not msg.error().retriable():
                    raise ToolError(f"Error processing message, terminating consumer process: "
                                    f"{msg.error().str()}")
                continue
            count += 1
            if deadline is not None:
                deadline = time.monotonic() + args.timeout_ms / 1000
            try:
                out.write(formatter.format(msg))
                out.flush()
            except BrokenPipeError:
                print("Unable to write to standard out, closing consumer.", file=sys.stderr)
                break
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        consumer.close()  # commits what was consumed when the group commits
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def main(argv: Sequence[str], out: BinaryIO | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_tool_args(argv, sys.stdout)
        if args is None:
            return 0
        return run(args, out or sys.stdout.buffer)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        parser.print_usage(sys.stderr)
        return 1
    except ToolError as exc:
        print(exc, file=sys.stderr)
        return 1
