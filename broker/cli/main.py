"""``kafkette`` command line: ``kafkette serve --config server.properties --override k=v``.

``serve`` checks the config, binds the listeners (they answer ApiVersions at once, see
broker/boot.py), then imports and starts the broker in a thread's time: what this module
imports before the listeners are up stays light (tests/spine/test_lazy_imports.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

from ..admin import admin_address
from ..boot import StartupError, listen_early
from ..config import BrokerConfig
from ..config_def import CONFIG_KEYS, DEFAULTS, ConfigError
from ..dev_preset import dev_settings
from . import gc_tuning
from .loop import loop_name, run

if TYPE_CHECKING:
    from ..boot import EarlyListener

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def startup_errors() -> tuple[type[BaseException], ...]:
    """Start-up failures reported as one line on stderr (with --debug: the traceback too)."""
    from kafkette.storage.topics import LogDirError  # imported by the broker anyway

    return (ConfigError, StartupError, LogDirError)


class OneLineParser(argparse.ArgumentParser):
    """A bad command line is one line on stderr (no usage dump); ``--help`` shows the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Declined(Exception):
    pass


class _QuietParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Declined(message)


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``build_parser().parse_args(argv)``; a plain ``serve`` command line is parsed by the serve
    parser alone (building the whole tree is most of argparse's start-up cost). Help and any
    error go through the whole tree, which words them."""
    if argv[:1] == ["serve"] and not any(arg.startswith(("-h", "--h")) for arg in argv[1:]):
        serve = _QuietParser(prog="kafkette serve", add_help=False)
        add_serve_arguments(serve)
        try:
            args, extra = serve.parse_known_args(argv[1:])
        except _Declined:
            extra = ["?"]
        if not extra:
            args.command = "serve"
            return args
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kafkette", description="A Kafka-compatible broker "
                                                        "(`kafkette --version` prints its version)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    add_serve_arguments(sub.add_parser("serve", help="run the broker"))
    configs = sub.add_parser("configs", add_help=False,
                             help="kafka-configs.sh: configs of topics, brokers, groups; client "
                                  "quotas; SCRAM credentials (see `kafkette configs --help`)")
    configs.add_argument("args", nargs=argparse.REMAINDER)
    groups = sub.add_parser("groups", add_help=False,
                            help="kafka-consumer-groups.sh: --list, --describe, --delete, "
                                 "--reset-offsets, --delete-offsets (see `kafkette groups --help`)")
    groups.add_argument("args", nargs=argparse.REMAINDER)
    share = sub.add_parser("share-groups", add_help=False,
                           help="kafka-share-groups.sh: --list, --describe, --delete, "
                                "--reset-offsets, --delete-offsets (see `kafkette share-groups "
                                "--help`)")
    share.add_argument("args", nargs=argparse.REMAINDER)
    acls = sub.add_parser("acls", add_help=False,
                          help="kafka-acls.sh: --add, --remove, --list ACLs (`kafkette acls --help`)")
    acls.add_argument("args", nargs=argparse.REMAINDER)
    cluster = sub.add_parser("cluster", add_help=False,
                             help="control a running kafkette over its admin server: faults, "
                                  "nodes, coordinator and leader moves (`kafkette cluster --help`)")
    cluster.add_argument("args", nargs=argparse.REMAINDER)
    client_metrics = sub.add_parser(
        "client-metrics", add_help=False,
        help="kafka-client-metrics.sh: client telemetry subscriptions (KIP-714): --alter, "
             "--describe, --list, --delete (see `kafkette client-metrics --help`)")
    client_metrics.add_argument("args", nargs=argparse.REMAINDER)
    reassign = sub.add_parser(
        "reassign-partitions", add_help=False,
        help="kafka-reassign-partitions.sh: --execute, --verify, --cancel, --list, --generate "
             "(see `kafkette reassign-partitions --help`)")
    reassign.add_argument("args", nargs=argparse.REMAINDER)
    # Run by transactions_cli, which is imported only then (it imports the protocol codecs).
    add_transactions_arguments(sub.add_parser(
        "transactions", help="kafka-transactions.sh: list, describe, describe-producers, "
                             "find-hanging, abort"))
    for name, summary in (("topics", "kafka-topics.sh: --create, --list, --describe, --alter, "
                                     "--delete (`kafkette topics --help`)"),
                          ("console-producer", "kafka-console-producer.sh: lines of stdin to a "
                                               "topic"),
                          ("console-consumer", "kafka-console-consumer.sh: a topic's records to "
                                               "stdout")):
        tool = sub.add_parser(name, add_help=False, help=summary)
        tool.add_argument("args", nargs=argparse.REMAINDER)
    pipeline = sub.add_parser("pipeline", add_help=False,
                              help="Spark jobs over the logs, e.g. `pipeline lag` (pipeline extra)")
    pipeline.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def add_transactions_arguments(txn: argparse.ArgumentParser) -> None:
    """kafka-transactions.sh's flags (TransactionsCommand)."""
    txn.description = ("Analyze the transactional state of producers in the cluster; detect "
                       "and recover from hanging transactions.")
    txn.add_argument("--bootstrap-server", default="127.0.0.1:9092", metavar="HOST:PORT",
                     help="the broker(s) to connect to, comma-separated")
    txn.add_argument("--command-config", metavar="FILE",
                     help="client properties: client.id, and a TLS/SASL login "
                          "(security.protocol, sasl.mechanism, sasl.jaas.config, ...)")
    actions = txn.add_subparsers(dest="action", required=True, metavar="COMMAND")
    actions.add_parser("list", help="list transactions")
    describe = actions.add_parser("describe",
                                  help="describe the state of an active transactional-id")
    describe.add_argument("--transactional-id", required=True, help="transactional id")
    producers = actions.add_parser(
        "describe-producers", help="describe the states of active producers for a topic "
                                   "partition")
    producers.add_argument("--broker-id", type=int, help="optional broker id to describe the "
                           "producer state on a specific replica")
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", type=int, required=True, help="partition number")
    abort = actions.add_parser("abort", help="abort a hanging transaction (requires "
                                             "administrative privileges)")
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    abort.add_argument("--start-offset", type=int,
                       help="start offset of the transaction to abort")
    abort.add_argument("--producer-id", type=int, help="producer id")
    abort.add_argument("--producer-epoch", type=int, help="producer epoch")
    abort.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    hanging = actions.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int,
                         help="broker id to search for hanging transactions")
    hanging.add_argument("--max-transaction-timeout", type=int, default=15, metavar="MINUTES",
                         help="maximum transaction timeout in minutes to limit the scope of "
                              "the search (default 15)")
    hanging.add_argument("--topic", help="topic name to limit search to")
    hanging.add_argument("--partition", type=int, help="partition number")


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--config", help="a Kafka server.properties file")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="set a broker config (repeatable), e.g. listeners=PLAINTEXT://:9092")
    serve.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS,
                       help="log level (default INFO; DEBUG logs every request)")
    serve.add_argument("--add-scram", action="append", default=[], metavar="CREDENTIAL",
                       help="create a SCRAM user at start (repeatable), as kafka-storage.sh "
                            "format: 'SCRAM-SHA-512=[name=alice,password=alice-secret]'")
    serve.add_argument("--debug", action="store_true",
                       help="show the traceback of a start-up failure")
    serve.add_argument("--admin", metavar="HOST:PORT",
                       help="serve /metrics, the web console and the control API here "
                            "(admin.listener)")
    serve.add_argument("--nodes", type=int, default=1, metavar="N",
                       help="emulate a cluster of N nodes in this process, each on its own "
                            "listener (for testing clients; default 1)")
    serve.add_argument("--dev", action="store_true",
                       help="development preset: no initial rebalance delay, short group "
                            "heartbeats and sessions (each value is logged at start; any "
                            "other source wins over it)")


def run_pipeline(argv: list[str]) -> int:
    # Imported only here: the broker never imports pyspark.
    from kafkette.pipeline.cli import main as pipeline_main

    return pipeline_main(argv)


def run_client_tool(name: str, argv: list[str]) -> int:
    """kafka-topics.sh and the console producer and consumer, on confluent-kafka (imported only
    when one of them runs)."""
    if name == "topics":
        from . import topics_command

        return topics_command.main(argv)
    if name == "console-producer":
        from . import console_producer

        return console_producer.main(argv)
    from . import console_consumer

    return console_consumer.main(argv)


def configs_tool(argv: list[str]) -> ModuleType:
    """The module serving a ``kafkette configs`` command line (kafka-configs.sh): topics, brokers,
    broker loggers, groups and client metrics (entity_configs, also refusals and --help), client
    quotas of users, clients and ips (client_quota_configs), or users' SCRAM credentials
    (configs_command)."""
    from kafkette.protocol.kio_import import import_kio_without_hypothesis

    import_kio_without_hypothesis()  # a tool's start-up: kio's types without hypothesis
    from . import entity_configs

    if entity_configs.handles(argv):
        return entity_configs
    from . import client_quota_configs, configs_command

    if client_quota_configs.handles(argv):  # client quotas (and users' --describe)
        return client_quota_configs
    return configs_command


def _import_broker() -> None:
    # In a thread, while the event loop answers ApiVersions on the early listeners.
    from kafkette.protocol.kio_import import import_kio_without_hypothesis

    import_kio_without_hypothesis()
    import kafkette.broker.server  # noqa: F401


async def serve(config: BrokerConfig, nodes: int = 1) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    gc_tuning.tune()
    # One node: listen now (ApiVersions answered at once, other requests wait for the broker).
    early: dict[str, EarlyListener] = await listen_early(config) if nodes == 1 else {}
    try:
        await loop.run_in_executor(None, _import_broker)
        from ..server import Broker

        broker = Broker(config, nodes=nodes, early=early)
        await broker.start()
    except BaseException:
        for listener in early.values():
            if not listener.adopted:
                listener.close()
        raise
    frozen = asyncio.ensure_future(gc_tuning.freeze_when_ready(broker))
    # One line with the bound address (a line a node), so scripts starting with port 0 find it.
    if nodes == 1:
        host, port = broker.bound
        print(f"kafkette listening on {host}:{port}", flush=True)
    else:
        for view in broker.views:
            host, port = view.bound
            print(f"kafkette listening on {host}:{port} (node.id={view.node_id})", flush=True)
    if broker.admin is not None:
        print(f"kafkette admin on {broker.admin.url}", flush=True)
    await stop.wait()
    frozen.cancel()
    log = logging.getLogger("kafkette.broker")
    log.info("shutting down")
    await broker.stop()
    log.info("shutdown complete")


def log_preset(preset: dict[str, str], config: BrokerConfig) -> None:
    """One line per value of the development preset (``--dev``), and Kafka's default."""
    log = logging.getLogger("kafkette.broker")
    for key, value in preset.items():
        kafka = DEFAULTS.get(key)
        effective = config[key]
        if effective == value:
            log.info("--dev: %s = %s (Kafka's default: %s)", key, value, kafka)
        else:
            log.info("--dev: %s = %s, set explicitly (the preset has %s)", key, effective, value)


def fail(exc: BaseException, debug: bool) -> int:
    if debug:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    print(f"kafkette: {exc}", file=sys.stderr)
    return 2 if isinstance(exc, ConfigError) else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pipeline"]:  # its own parser, so `kafkette pipeline --help` works too
        return run_pipeline(argv[1:])
    if argv[:1] == ["configs"]:  # kafka-configs.sh's flags, parsed by its own module
        return configs_tool(argv[1:]).main(argv[1:])
    if argv[:1] == ["groups"]:  # Kafka's flag style, parsed by its own module
        from . import groups_command

        return groups_command.main(argv[1:])
    if argv[:1] == ["share-groups"]:  # kafka-share-groups.sh's flags, its own module
        from . import share_groups_command

        return share_groups_command.main(argv[1:])
    if argv[:1] == ["acls"]:  # kafka-acls.sh's flags, parsed by its own module
        from . import acls_command

        return acls_command.main(argv[1:])
    if argv[:1] == ["client-metrics"]:
        from . import client_metrics_command

        return client_metrics_command.main(argv[1:])
    if argv[:1] == ["reassign-partitions"]:  # kafka-reassign-partitions.sh's flags
        from . import reassign_command

        return reassign_command.main(argv[1:])
    if argv[:1] == ["cluster"]:
        from . import cluster_command

        return cluster_command.main(argv[1:])
    if argv[:1] in (["topics"], ["console-producer"], ["console-consumer"]):
        return run_client_tool(argv[0], argv[1:])
    if argv[:1] in (["--version"], ["-V"]):
        from .version import version

        print(f"kafkette {version()}")
        return 0
    args = parse_args(argv)
    if args.command == "transactions":
        from . import transactions_command

        return transactions_command.run(args)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        try:
            overrides = args.override + ([f"admin.listener={args.admin}"] if args.admin else [])
            if args.add_scram:  # kafka-storage.sh format --add-scram's syntax
                overrides.append("scram.credentials=" + ";".join(args.add_scram))
            preset = dev_settings(CONFIG_KEYS.__contains__) if args.dev else {}
            config = BrokerConfig.from_sources(args.config, overrides, environment=os.environ,
                                               preset=preset)
            config.validate()  # fail before the event loop starts
            log_preset(preset, config)
            admin_address(config)
            logging.getLogger("kafkette.broker").debug("event loop: %s", loop_name())
            if args.nodes < 1:
                raise ConfigError(f"--nodes must be at least 1, got {args.nodes}")
            run(serve(config, args.nodes))
        except Exception as exc:
            if not isinstance(exc, startup_errors()):
                raise
            return fail(exc, args.debug)
    return 0


if __name__ == "__main__":
    sys.exit(main())
