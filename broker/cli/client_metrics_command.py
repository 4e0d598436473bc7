"""``kafkette client-metrics`` (kafka-client-metrics.sh): client metrics subscriptions (KIP-714)
over the wire, with Kafka's flags and output::

    kafkette client-metrics --bootstrap-server HOST:PORT --alter --name my-sub \\
        --metrics org.apache.kafka.producer. --interval 5000 --match client_id=my-app
    kafkette client-metrics --bootstrap-server HOST:PORT --describe [--name my-sub]
    kafkette client-metrics --bootstrap-server HOST:PORT --list
    kafkette client-metrics --bootstrap-server HOST:PORT --delete --name my-sub

A subscription is a CLIENT_METRICS config resource: --alter sets its configs with
IncrementalAlterConfigs (an empty value deletes one), --describe reads them with DescribeConfigs,
--list names them with ListConfigResources, --delete deletes every config. confluent-kafka's
AdminClient has no CLIENT_METRICS resource type, hence the project's wire client.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import NoReturn, TextIO

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

from .admin_client import AdminClient, AdminError

DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
CLIENT_METRICS = 16
SET, DELETE = 0, 1


class CommandError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CommandError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkette client-metrics",
                     description="Add, remove or list client metrics subscriptions "
                                 "(kafka-client-metrics.sh).")
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true",
                        help="alter the subscription's configs (created if it is new)")
    action.add_argument("--delete", action="store_true", help="delete the subscription")
    action.add_argument("--describe", action="store_true",
                        help="list the configs of one subscription (--name) or of all")
    action.add_argument("--list", action="store_true", help="list the subscriptions' names")
    parser.add_argument("--name", help="the subscription's name")
    parser.add_argument("--generate-name", action="store_true",
                        help="with --alter: a new subscription under a generated name")
    parser.add_argument("--metrics", metavar="PREFIX,...",
                        help="metric name prefixes to push ('*': every metric)")
    parser.add_argument("--interval", type=int, metavar="MS", help="push interval in ms")
    parser.add_argument("--match", metavar="SELECTOR=REGEX,...",
                        help="clients to match (client_id, client_instance_id, "
                             "client_software_name, client_software_version, "
                             "client_source_address, client_source_port)")
    return parser


def run(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = build_parser().parse_args(argv)
        if args.alter and not (args.name or args.generate_name):
            raise CommandError("One of --name or --generate-name must be specified with --alter.")
        if args.delete and not args.name:
            raise CommandError("A client metrics resource name must be specified with --delete.")
        with AdminClient(args.bootstrap_server, client_id="kafkette-client-metrics") as admin:
            if args.list:
                print("\n".join(_names(admin)), file=out)
            elif args.describe:
                for name in [args.name] if args.name else _names(admin):
                    print(f"Client metrics configs for {name} are:", file=out)
                    for key, value in _configs(admin, name):
                        print(f"  {key}={value}", file=out)
            elif args.alter:
                name = str(uuid.uuid4()) if args.generate_name else args.name
                values: dict[str, str] = {}
                if args.interval is not None:
                    values["interval.ms"] = str(args.interval)
                if args.metrics is not None:
                    values["metrics"] = args.metrics
                if args.match is not None:
                    values["match"] = args.match
                _alter(admin, name, {k: (SET if v else DELETE, v) for k, v in values.items()})
                print(f"Altered client metrics config for {name}.", file=out)
            else:
                _alter(admin, args.name, {key: (DELETE, "") for key, _ in
                                          _configs(admin, args.name)})
                print(f"Deleted client metrics config for {args.name}.", file=out)
        return 0
    except (CommandError, AdminError) as exc:
        print(f"Error: {exc}", file=err)
        return 1


def _names(admin: AdminClient) -> list[str]:
    r = admin.request(LIST_CONFIG_RESOURCES, 1, resource_types=(CLIENT_METRICS,))
    if r.error_code != ErrorCode.none:
        raise AdminError(ErrorCode(r.error_code).name.upper())
    return sorted(res.resource_name for res in r.config_resources)


def _configs(admin: AdminClient, name: str) -> list[tuple[str, str]]:
    cls = request_type(DESCRIBE_CONFIGS, 4)
    resource = make(item_type(cls, "resources"), resource_type=CLIENT_METRICS,
                    resource_name=name, configuration_keys=None)
    r = admin.request(DESCRIBE_CONFIGS, 4, resources=(resource,), include_synonyms=False,
                      include_documentation=False)
    [result] = r.results
    if result.error_code != ErrorCode.none:
        raise AdminError(result.error_message or ErrorCode(result.error_code).name.upper())
    return sorted((c.name, c.value or "") for c in result.configs)


def _alter(admin: AdminClient, name: str, changes: dict[str, tuple[int, str]]) -> None:
    cls = request_type(INCREMENTAL_ALTER_CONFIGS, 1)
    resource_cls = item_type(cls, "resources")
    config_cls = item_type(resource_cls, "configs")
    configs = tuple(make(config_cls, name=key, config_operation=op,
                         value=value if op == SET else None)
                    for key, (op, value) in changes.items())
    r = admin.request(INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=(
        make(resource_cls, resource_type=CLIENT_METRICS, resource_name=name, configs=configs),))
    [result] = r.responses
    if result.error_code != ErrorCode.none:
        raise AdminError(result.error_message or ErrorCode(result.error_code).name.upper())


def main(argv: list[str]) -> int:
    return run(argv)
