"""``kafkette`` command line: ``kafkette serve --config server.properties --override k=v``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from .config import BrokerConfig, ConfigError
from .loop import loop_name, run
from .server import Broker


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafkette", description="A Kafka-compatible broker")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("--config", help="a Kafka server.properties file")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="set a broker config (repeatable), e.g. listeners=PLAINTEXT://:9092")
    serve.add_argument("--log-level", default="INFO")
    from . import admin_cli, transactions_cli  # small; their parsers are listed in --help

    admin_cli.add_parser(sub)
    transactions_cli.add_parser(sub)
    pipeline = sub.add_parser("pipeline", add_help=False,
                              help="Spark jobs over the logs, e.g. `pipeline lag` (pipeline extra)")
    pipeline.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def run_pipeline(argv: list[str]) -> int:
    # Imported only here: the broker never imports pyspark.
    from kafkette.pipeline.cli import main as pipeline_main

    return pipeline_main(argv)


async def serve(config: BrokerConfig) -> None:
    broker = Broker(config)
    await broker.start()
    host, port = broker.bound
    # One line with the bound address, so scripts starting with port 0 can find it.
    print(f"kafkette listening on {host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    logging.getLogger("kafkette.broker").info("shutting down")
    await broker.stop()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pipeline"]:  # its own parser, so `kafkette pipeline --help` works too
        return run_pipeline(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "groups":
        from . import admin_cli

        return admin_cli.run(args)
    if args.command == "transactions":
        from . import transactions_cli

        return transactions_cli.run(args)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        try:
            config = BrokerConfig.from_sources(args.config, args.override)
            config.listener  # noqa: B018  (validate early)
        except (ConfigError, OSError) as exc:
            print(f"kafkette: {exc}", file=sys.stderr)
            return 2
        logging.getLogger("kafkette.broker").debug("event loop: %s", loop_name())
        run(serve(config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
