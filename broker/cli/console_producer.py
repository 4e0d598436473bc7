"""``kafkette console-producer``: kafka-console-producer.sh's flags and line format, on
confluent-kafka: each line of stdin is a record.

    kafkette console-producer --bootstrap-server H:P --topic T
        [--property parse.key=true] [--property key.separator=:]
        [--property parse.headers=true] [--property headers.delimiter=\\t]
        [--property headers.separator=,] [--property headers.key.separator=:]
        [--property null.marker=NULL] [--property ignore.error=true]
        [--producer-property k=v ...] [--producer.config FILE | --command-config FILE]
        [--compression-codec [none|gzip|snappy|lz4|zstd]] [--sync]
        [--request-required-acks ACKS] [--timeout LINGER_MS]

A line is ``[headers<headers.delimiter>][key<key.separator>]value`` (Kafka's LineMessageReader);
a line without the separator it needs stops the tool with Kafka's message unless
ignore.error=true.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

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

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def build_parser() -> ToolParser:
    p = ToolParser(prog="kafkette console-producer", add_help=False,
                   description="Read data from standard input and publish it to Kafka.")
    p.add_argument("--help", action="store_true")
    p.add_argument("--version", action="store_true")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]")
    p.add_argument("--topic")
    p.add_argument("--property", action="append", default=[], metavar="key=value")
    p.add_argument("--reader-config", metavar="FILE")
    p.add_argument("--producer-property", action="append", default=[], metavar="key=value")
    p.add_argument("--producer.config", "--command-config", dest="producer_config",
                   metavar="FILE")
    p.add_argument("--compression-codec", nargs="?", const="gzip", default=None)
    p.add_argument("--sync", action="store_true")
    p.add_argument("--request-required-acks", default="-1")
    p.add_argument("--timeout", type=int, default=1000, help="linger.ms (Kafka's default 1000)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--message-send-max-retries", type=int)
    p.add_argument("--retry-backoff-ms", type=int)
    p.add_argument("--request-timeout-ms", type=int, default=1500)
    p.add_argument("--max-block-ms", type=int, help="accepted; librdkafka never blocks a send")
    return p


@dataclass(slots=True)
class LineReader:
    """Kafka's LineMessageReader settings (the --property values)."""

    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    ignore_error: bool = False
    null_marker: str | None = None

    @classmethod
    def configure(cls, props: dict[str, str]) -> LineReader:
        def flag(key: str) -> bool:
            return props.get(key, "").strip().lower() == "true"

        reader = cls(parse_key=flag("parse.key"), parse_headers=flag("parse.headers"),
                     ignore_error=flag("ignore.error"), null_marker=props.get("null.marker"))
        reader.key_separator = props.get("key.separator", reader.key_separator)
        reader.headers_delimiter = props.get("headers.delimiter", reader.headers_delimiter)
        reader.headers_separator = props.get("headers.separator", reader.headers_separator)
        reader.headers_key_separator = props.get("headers.key.separator",
                                                 reader.headers_key_separator)
        pairs = (("headers.delimiter", reader.headers_delimiter, "headers.separator",
                  reader.headers_separator),
                 ("headers.delimiter", reader.headers_delimiter, "headers.key.separator",
                  reader.headers_key_separator),
                 ("headers.separator", reader.headers_separator, "headers.key.separator",
                  reader.headers_key_separator))
        for a, va, b, vb in pairs:
            if va == vb:
                raise ToolError(f"{a} and {b} may not be equal")
        marker = reader.null_marker
        for name, value in (("key.separator", reader.key_separator),
                            ("headers.separator", reader.headers_separator),
                            ("headers.delimiter", reader.headers_delimiter),
                            ("headers.key.separator", reader.headers_key_separator)):
            if value == marker:
                raise ToolError(f"null.marker and {name} may not be equal")
        return reader

    def _cut(self, enabled: bool, line: str, start: int, mark: str, what: str,
             number: int) -> str | None:
        if not enabled:
            return None
        index = line.find(mark, start)
        if index < 0:
            if self.ignore_error:
                return None
            raise ToolError(f"No {what} found on line number {number}: '{line}'")
        return line[start:index]

    def _nullable(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.null_marker else text.encode()

    def records(self, lines: Iterable[str]
                ) -> Iterator[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
        """(key, value, headers) of each line."""
        for number, raw in enumerate(lines, 1):
            line = raw.rstrip("\n").removesuffix("\r")
            headers = self._cut(self.parse_headers, line, 0, self.headers_delimiter,
                                "headers delimiter", number)
            offset = 0 if headers is None else len(headers) + len(self.headers_delimiter)
            key = self._cut(self.parse_key, line, offset, self.key_separator, "key separator",
                            number)
            offset += 0 if key is None else len(key) + len(self.key_separator)
            parsed = [] if headers is None or headers == self.null_marker \
                else self._headers(headers, number)
            yield self._nullable(key), self._nullable(line[offset:]), parsed

    def _headers(self, text: str, number: int) -> list[tuple[str, bytes | None]]:
        out: list[tuple[str, bytes | None]] = []
        for pair in re.split(self.headers_separator, text):
            index = pair.find(self.headers_key_separator)
            if index < 0:
                if self.ignore_error:
                    out.append((pair, None))
                    continue
                raise ToolError(f"No header key separator found in pair '{pair}' on line number "
                                f"{number}")
            name = pair[:index]
            if name == self.null_marker:
                raise ToolError("Header keys should not be equal to the null marker "
                                f"'{self.null_marker}' as they can't be null")
            out.append((name, self._nullable(pair[index + len(self.headers_key_separator):])))
        return out


def producer_config(args: Any) -> dict[str, Any]:
    codec = args.compression_codec or "none"
    if codec not in CODECS:
        raise UsageError(f"Invalid compression codec: {codec}")
    ours = {"compression.type": codec, "acks": "all" if args.request_required_acks in ("all", "-1")
            else args.request_required_acks, "linger.ms": str(args.timeout),
            "request.timeout.ms": str(args.request_timeout_ms)}
    for option, key in (("batch_size", "batch.size"), ("message_send_max_retries", "retries"),
                        ("retry_backoff_ms", "retry.backoff.ms")):
        if getattr(args, option) is not None:
            ours[key] = str(getattr(args, option))
    conf = client_config(args.bootstrap_server, properties_file(args.producer_config),
                         key_values(args.producer_property), ours)
    conf.setdefault("client.id", "console-producer")
    return conf


def run(args: Any, lines: Iterable[str]) -> int:
    kafka = confluent()
    reader = LineReader.configure({**properties_file(args.reader_config),
                                   **key_values(args.property)})
    producer = kafka.Producer(producer_config(args))
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err.str())
            print(f"Error when sending message to topic {args.topic}: {err.str()}",
                  file=sys.stderr)

    try:
        for key, value, headers in reader.records(lines):
            while True:
                try:
                    producer.produce(args.topic, value=value, key=key, headers=headers or None,
                                     on_delivery=delivered)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
            if args.sync:
                producer.flush()
            else:
                producer.poll(0)
    finally:
        left = producer.flush(30)
    if left:
        print(f"{left} record(s) were not delivered", file=sys.stderr)
    return 1 if failures or left else 0


def prompted(stdin: TextIO) -> Iterator[str]:
    """The lines of stdin; at a terminal each is asked for with ``>`` as Kafka's tool does."""
    if not stdin.isatty():
        yield from stdin
        return
    while True:
        sys.stdout.write(">")
        sys.stdout.flush()
        line = stdin.readline()
        if not line:
            return
        yield line


def main(argv: Sequence[str], stdin: TextIO | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_tool_args(argv, sys.stdout)
        if args is None:
            return 0
        require(args.topic, "topic")
        require(args.bootstrap_server, "bootstrap-server")
        return run(args, prompted(stdin or sys.stdin))
    except UsageError as exc:
        print(exc, file=sys.stderr)
        parser.print_usage(sys.stderr)
        return 1
    except ToolError as exc:
        print(f"org.apache.kafka.common.KafkaException: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
